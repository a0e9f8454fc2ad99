#!/usr/bin/env bash
# Installs the Debian packages tensorwire builds and tests with. Idempotent:
# does nothing (and asks no package server) when everything is already there.
set -euo pipefail

packages=(
  build-essential pkg-config cmake meson ninja-build python3
  libgtest-dev libgmock-dev libbenchmark-dev librapidcheck-dev
  libtomlplusplus-dev libboost-graph-dev libcli11-dev nlohmann-json3-dev
  libibverbs-dev librdmacm-dev rdma-core ibverbs-providers
  perftest iproute2
  clang-tidy-14  # tests/layering: the function_length test (.clang-tidy)
  clang-14 libclang-rt-14-dev  # tests/fuzz: libFuzzer targets (scripts/fuzz.sh)
  time           # /usr/bin/time -v: peak memory in docs/PERFORMANCE.md
  python3-matplotlib  # tensorwire plot: sweep plots (scripts/plot_sweep.py)
  libjemalloc-dev  # the tensorwire program's malloc (meson option allocator)
  libabsl-dev    # Abseil flat_hash_map and btree: the simulator's per-event indexes
  graphviz       # dot -Tsvg: docs/TOPOLOGIES.md's pictures (tensorwire topology --dot)
  munge slurmctld slurmd slurm-client  # tests/model/slurm_shard_test.sh: a one-node Slurm
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi

echo "installing: ${missing[*]}" >&2
if [ "$(id -u)" -ne 0 ]; then
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
