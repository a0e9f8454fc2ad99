#!/usr/bin/env bash
# Configures and builds tensorwire in BUILD_DIR (default: build).
#   SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer build (default dir build-asan)
#   CI=true     warnings are errors
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${SANITIZE:-0}" = 1 ]; then
  build_dir=${BUILD_DIR:-build-asan}
  opts=(-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dbench=false)
else
  build_dir=${BUILD_DIR:-build}
  # -O2, not release's -O3: GCC 12 at -O3 reports false -Wrestrict errors on
  # std::string concatenation (GCC bug 105329), and CI builds with -Werror.
  opts=(-Dbuildtype=release -Doptimization=2)
fi
if [ "${CI:-}" = true ]; then
  opts+=(-Dwerror=true)
fi

if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "${opts[@]}" >/dev/null
else
  meson configure "$build_dir" "${opts[@]}" >/dev/null
fi
ninja -C "$build_dir" >&2
echo "$build_dir"
