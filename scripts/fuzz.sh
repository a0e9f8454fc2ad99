#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang-14 into BUILD_DIR
# (default build-fuzz: AddressSanitizer + UndefinedBehaviorSanitizer + the
# fuzzer's coverage instrumentation; only the fuzz targets are built), then:
#   scripts/fuzz.sh                       every target, FUZZ_RUNS inputs each
#                                         (default 100000), as the meson tests of
#                                         suite 'fuzz'; non-zero on a crash
#   scripts/fuzz.sh --soak SECONDS [T..]  a soak: each target (or those named)
#                                         in turn for SECONDS, at nice 19, with a
#                                         growing corpus in BUILD_DIR/soak/<T>/
# A crashing input is saved as crash-<sha1> under BUILD_DIR/tests/fuzz/artifacts/<T>/
# (bounded runs) or BUILD_DIR/soak/<T>/ (soaks). CI=true: warnings are errors.
set -euo pipefail
cd "$(dirname "$0")/.."

build_dir=${BUILD_DIR:-build-fuzz}
runs=${FUZZ_RUNS:-100000}

configure_and_build() {
  local opts=(-Dfuzz=true -Dfuzz_runs="$runs" -Dtests=false -Dbench=false -Dcuda=disabled
              -Db_sanitize=address,undefined -Db_lundef=false -Dbuildtype=debugoptimized)
  if [ "${CI:-}" = true ]; then opts+=(-Dwerror=true); fi
  if [ ! -f "$build_dir/build.ninja" ]; then
    CC=clang-14 CXX=clang++-14 meson setup "$build_dir" "${opts[@]}" >/dev/null
  else
    meson configure "$build_dir" "${opts[@]}" >/dev/null
  fi
  local targets=()
  for t in "${all_targets[@]}"; do targets+=("tests/fuzz/${t}_fuzz"); done
  ninja -C "$build_dir" "${targets[@]}" >&2
}

# One target for SECONDS; prints "target runs seconds exec/s corpus crashes".
soak_one() {
  local t=$1 seconds=$2 dir="$build_dir/soak/$1"
  mkdir -p "$dir/corpus"
  nice -n 19 "$build_dir/tests/fuzz/${t}_fuzz" -max_total_time="$seconds" -max_len=8192 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/" \
    "$dir/corpus" "tests/fuzz/corpus/$t" >"$dir/log" 2>&1 || true
  local executed elapsed
  executed=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/log")
  elapsed=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$dir/log")
  elapsed=${elapsed:-$seconds}
  echo "$t ${executed:-0} $elapsed $(( ${executed:-0} / (elapsed > 0 ? elapsed : 1) ))" \
       "$(ls "$dir/corpus" | wc -l) $(ls "$dir" | grep -c '^crash-\|^leak-\|^timeout-\|^oom-' || true)"
}

all_targets=()
for source in tests/fuzz/*_fuzz.cc; do all_targets+=("$(basename "$source" _fuzz.cc)"); done

if [ "${1:-}" = --soak ]; then
  seconds=${2:?"--soak SECONDS [TARGET...]"}
  shift 2
  configure_and_build
  echo "target runs seconds exec/s corpus crashes"
  for t in "${@:-${all_targets[@]}}"; do soak_one "$t" "$seconds"; done
  exit 0
fi
configure_and_build
# Every target stops at the first error and reports leaks.
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
meson test -C "$build_dir" --suite fuzz --no-rebuild --print-errorlogs --num-processes 2
