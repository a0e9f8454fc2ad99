#!/usr/bin/env bash
# MVAPICH2-GPU's headline (docs/PERFORMANCE.md): one-way GPU-to-GPU latency of
# the warm (last) step against message size, naive staging and pipelined
# staging at block sizes 32 KiB to 1 MiB, on the paper's cluster and on the
# default hardware. Prints CSV: profile,size_bytes,config,latency_ns.
#   scripts/mvapich2_gpu_headline.sh [path/to/tensorwire] > headline.csv
set -euo pipefail
cd "$(dirname "$0")/.."
tw=${1:-build/apps/tensorwire/tensorwire}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
sizes="8 64 512 4096 16384 65536 262144 1048576 4194304"
configs="naive 32KiB 64KiB 128KiB 256KiB 512KiB 1MiB"
echo "profile,size_bytes,config,latency_ns"
for profile in mvapich2_gpu_latency_2011 mvapich2_gpu_latency; do
  for size in $sizes; do
    for config in $configs; do
      if [ "$config" = naive ]; then
        set_staging=(--set protocol.mvapich2_gpu.staging=naive)
      else
        set_staging=(--set protocol.mvapich2_gpu.staging=pipelined
                     --set "protocol.mvapich2_gpu.block_bytes=$config")
      fi
      "$tw" run "scenarios/$profile.toml" --json "$out" --set "workload.tensor[0].bytes=$size" \
        "${set_staging[@]}" >/dev/null
      latency=$(python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["passed"]; print(j["steps"][-1]["per_tensor"][0]["latency_ns"])' "$out")
      echo "$profile,$size,$config,$latency"
    done
  done
done
