#!/usr/bin/env bash
# The training runs of a profile-guided build (PGO=1 scripts/build.sh): the
# work the simulator and the model checker spend their time on, run by the
# instrumented programs in BUILD_DIR so that GCC learns which branches are
# hot. Each run's output is thrown away; what matters is the profile (*.gcda
# beside the objects) each writes when it exits.
#   scripts/pgo_train.sh BUILD_DIR
# The runs are small (about 15 s in all, instrumented, on 2 cores) and
# cover every protocol: the parameter server and an all-to-all at 64 nodes
# (the simulator at scale), a selection of the shipped scenarios, random
# walks, dfs with a QP error and pct on the model scenarios, and the
# simulator's benchmarks.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${1:?usage: scripts/pgo_train.sh BUILD_DIR}
T="$build_dir/apps/tensorwire/tensorwire"
B="$build_dir/bench/tensorwire_bench"
[ -x "$T" ] || { echo "pgo_train: no program at $T" >&2; exit 2; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The simulator: shipped scenarios of every protocol, and the cluster at scale.
for s in vgg16_8x4 resnet50_ps broadcast_8x4 broadcast_mixed string_tensors \
         legacy_vgg16_8x4_p100 mvapich2_gpu_latency vgg16_leaf_spine vgg16_rail \
         all_to_all_leaf_spine meta_data_change; do
  "$T" run "scenarios/$s.toml" --json "$out/$s.json" >/dev/null
done
python3 bench/scale_bench.py --tensorwire "$T" --nodes 64 --workloads ps,a2a \
  --out "$out/scale" --min-cpu-s 0 >/dev/null

# The model checker: random walks, dfs through a QP error, pct, on the
# protocols' model scenarios. Exit code 4 (dfs stopped at its limit) is expected.
check() { "$T" check "$@" --jobs 1 >/dev/null || [ $? -eq 4 ]; }
check scenarios/model_2x3.toml --strategy random --max-schedules 4000
check scenarios/model_2x3.toml --strategy dfs --faults qp_error --max-schedules 8000
check scenarios/model_2x4.toml --strategy dfs --max-schedules 3000
check scenarios/model_2x3.toml --strategy pct --max-schedules 2000
for s in model_broadcast model_oneflow model_mvapich2_gpu model_tf_verbs_legacy; do
  check "scenarios/$s.toml" --strategy random --max-schedules 500
  check "scenarios/$s.toml" --strategy dfs --faults qp_error --max-schedules 1000
done

# The simulator's own benchmarks (the bare event loop above all).
if [ -x "$B" ]; then
  "$B" --benchmark_filter='BM_SimulatorEventLoop|BM_EventQueueAlone|BM_Vgg16TrainingStepTimingOnly' \
       --benchmark_min_time=0.2 >/dev/null
fi
