#!/usr/bin/env bash
# Configures and builds tensorwire in BUILD_DIR (default: build).
#   SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer build (default dir build-asan)
#   CI=true     warnings are errors; no link-time optimization
set -euo pipefail
cd "$(dirname "$0")/.."

compiler=gcc
if [ "${SANITIZE:-0}" = 1 ]; then
  build_dir=${BUILD_DIR:-build-asan}
  opts=(-Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized -Dbench=false)
  # With clang-14 (installed by scripts/install_deps.sh for the fuzz targets):
  # GCC 12 compiled the sanitizer build about 3.5x slower (its UBSan
  # instrumentation at -O2), which was most of CI's time. GCC stays the
  # compiler of the release build, so CI builds warning-free with both.
  if command -v clang++-14 >/dev/null; then
    compiler=clang
    export CC=clang-14 CXX=clang++-14
  fi
else
  build_dir=${BUILD_DIR:-build}
  # -O2, not release's -O3: GCC 12 at -O3 reports false -Wrestrict errors on
  # std::string concatenation (GCC bug 105329), and CI builds with -Werror.
  opts=(-Dbuildtype=release -Doptimization=2)
fi
if [ "${CI:-}" = true ]; then
  opts+=(-Dwerror=true)
  # CI tests what the program does, not how fast: each link-time-optimized
  # link (the tensorwire program, the benchmarks) re-optimizes every library,
  # 1 to 12 minutes on a 2-core machine.
  [ "${SANITIZE:-0}" = 1 ] || opts+=(-Dlto=false)
fi

# A sanitizer build folder set up with GCC (before clang-14 built it) is set
# up again: meson keeps the compiler a folder was set up with.
if [ "$compiler" = clang ] && [ -f "$build_dir/build.ninja" ] &&
   ! grep -q "^C++ compiler for the host machine: .*($compiler " "$build_dir/meson-logs/meson-log.txt" 2>/dev/null; then
  rm -rf "$build_dir"
fi
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "${opts[@]}" >/dev/null
else
  meson configure "$build_dir" "${opts[@]}" >/dev/null
fi
ninja -C "$build_dir" >&2
echo "$build_dir"
