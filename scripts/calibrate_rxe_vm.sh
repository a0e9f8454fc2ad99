#!/usr/bin/env bash
# Calibrates the simulator to an RDMA device and prints the held-out table, in one go (one VM
# boot where the device is the rxe VM's):
#   scripts/with_rdma.sh scripts/calibrate_rxe_vm.sh OUT_DIR [calibrate's flags...]
# writes OUT_DIR/profile.toml (`tensorwire calibrate`), OUT_DIR/runs/ (the runs' scenarios,
# results and traces) and OUT_DIR/table.md (scripts/calibration_table.py, RUNS runs per
# held-out scenario, default 3). OUT_DIR must be writable where the command runs (in the VM:
# under the current directory, or given with --rw).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: calibrate_rxe_vm.sh OUT_DIR [calibrate flags...]}
shift
tw=${TENSORWIRE:-build/apps/tensorwire/tensorwire}
mkdir -p "$out"
"$tw" calibrate --backend verbs --device "${TENSORWIRE_RDMA_DEVICE:-rxe0}" \
  --out "$out/profile.toml" --work-dir "$out/runs" "$@"
python3 scripts/calibration_table.py --tensorwire "$tw" --profile "$out/profile.toml" \
  --runs "${RUNS:-3}" --out "$out/table.md"
