#!/usr/bin/env bash
# One bounded fuzz run, as the meson test of a target: RUNS inputs mutated from
# the seed corpus, with a fixed seed. New inputs go to a scratch folder removed
# afterwards, so the checked-in corpus changes only by hand; a crash is saved
# under ARTIFACTS as crash-<sha1> and fails the test (libFuzzer exits non-zero).
#   run_fuzz_target.sh TARGET CORPUS_DIR RUNS ARTIFACTS
set -uo pipefail
target=$1 corpus=$2 runs=$3 artifacts=$4/
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts"
"$target" -runs="$runs" -seed=1 -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$artifacts" -print_final_stats=1 "$scratch" "$corpus"
