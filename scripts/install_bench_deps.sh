#!/usr/bin/env bash
# Installs the Debian packages bench/verbs_vs_perftest.sh needs beyond scripts/install_deps.sh:
# perftest (ib_write_bw, ib_write_lat, ib_send_lat) and iproute2 (ss). Idempotent: does nothing
# (and asks no package server) when they are there. (The RDMA VM's scripts/rdma_vm/build_image.sh
# installs them as well.)
set -euo pipefail

packages=(perftest iproute2)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
[ "${#missing[@]}" -eq 0 ] && exit 0

echo "installing: ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
