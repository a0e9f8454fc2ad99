#!/usr/bin/env bash
# Configures and builds tensorwire in BUILD_DIR (default: build).
#   SANITIZE=1  AddressSanitizer + UndefinedBehaviorSanitizer build (default dir build-asan)
#   CI=true     warnings are errors; -O2 and no link-time optimization
#   PGO=1       profile-guided release build of the tensorwire program and the
#               benchmarks (default dir build-pgo; no test programs): built
#               instrumented, trained by scripts/pgo_train.sh, built again with
#               the profile and LTO (LTO=false: without; CI=true does not
#               turn it off here). The two programs are built twice.
set -euo pipefail
cd "$(dirname "$0")/.."

# Sets up build directory $1 with the options after it, or sets a directory
# set up before to them.
setup_or_configure() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    meson setup "$dir" "$@" >/dev/null
  else
    meson configure "$dir" "$@" >/dev/null
  fi
}

# The profile-guided build. The training build leaves out link-time
# optimization (each instrumented LTO link would cost minutes and the profile
# is read per source file before LTO runs); the final one has it unless
# LTO=false. Every build starts from no profile: GCC refuses a profile whose
# source changed ("coverage mismatch"), so a stale one is never kept.
if [ "${PGO:-0}" = 1 ]; then
  [ "${SANITIZE:-0}" = 1 ] && { echo "build.sh: PGO=1 and SANITIZE=1 do not combine" >&2; exit 2; }
  build_dir=${BUILD_DIR:-build-pgo}
  targets=(apps/tensorwire/tensorwire bench/tensorwire_bench)
  # -O3, as the release build (meson.build leaves out GCC 12's false -Wrestrict there).
  opts=(-Dbuildtype=release -Doptimization=3 -Dtests=false)
  [ "${CI:-}" = true ] && opts+=(-Dwerror=true)
  setup_or_configure "$build_dir" "${opts[@]}" -Db_pgo=generate -Dlto=false
  find "$build_dir" -name '*.gcda' -delete
  ninja -C "$build_dir" "${targets[@]}" >&2
  scripts/pgo_train.sh "$build_dir" >&2
  meson configure "$build_dir" -Db_pgo=use -Dlto="${LTO:-true}" >/dev/null
  ninja -C "$build_dir" "${targets[@]}" >&2
  echo "$build_dir"
  exit 0
fi

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
  # Release's -O3 (meson.build leaves out GCC 12's false -Wrestrict there);
  # CI's is -O2: it tests what the program does, not how fast, and keeps
  # that warning on.
  opts=(-Dbuildtype=release -Doptimization="$([ "${CI:-}" = true ] && echo 2 || echo 3)")
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
setup_or_configure "$build_dir" "${opts[@]}"
ninja -C "$build_dir" >&2
echo "$build_dir"
