#!/usr/bin/env python3
"""Predicted vs measured step time of held-out scenarios under a calibrated profile.

    scripts/calibration_table.py --profile scenarios/profiles/rxe_vm.toml [--runs 3]
        [--tensorwire build/apps/tensorwire/tensorwire] [--device rxe0] [--out TABLE.md]
        [--set KEY=VALUE ...] [SCENARIO ...]

For each scenario (default: quickstart, meta_data_change and the 2-rank broadcast the verbs
suite launches, none of them used by `tensorwire calibrate`):
  predicted: `tensorwire run SCENARIO --set cluster.KEY=VALUE ...` with every [cluster] key of
             the profile (the overrides win over the scenario's own hardware), on the simulator;
  measured:  `tensorwire launch -n NODES SCENARIO --gpu-as-host` on the RDMA device, --runs
             times (the host stand-in for GPU memory: the rxe VM has no GPU).
The step time of one run is the median of its steps after the first (the first pays the
one-time costs: registration, meta-data exchange), or its only step (a broadcast: the time
until every destination holds every byte); the measured figure is the median over the runs.
`--set KEY=VALUE` (repeatable) changes every scenario on both sides, e.g. `--set
'workload.tensor[*].order=same_time' --set workload.compute=0ns` to take the timers out.
Error = (predicted - measured) / measured. Needs an RDMA device: run it under
scripts/with_rdma.sh. Exits 1 when a run fails, 2 on bad arguments.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_SCENARIOS = [
    "scenarios/quickstart.toml",
    "scenarios/meta_data_change.toml",
    "tests/backend_verbs/scenarios/broadcast_2ranks.toml",
]


def step_time_ns(results, measured):
    """The run's step time: see the module's docstring."""
    if "broadcast" in results:
        value = results.get("measured_ns") if measured else results.get("finish_ns")
        if value is None:
            raise ValueError("the broadcast did not finish")
        return float(value)
    key = "measured_ns" if measured else "duration_ns"
    steps = [float(s[key]) for s in results.get("steps", []) if key in s]
    if not steps:
        raise ValueError("no step has " + key)
    return statistics.median(steps[1:]) if len(steps) > 1 else steps[0]


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.stderr.write("calibration_table: failed (exit %d): %s\n%s%s" %
                         (done.returncode, " ".join(cmd), done.stdout[-4000:], done.stderr[-4000:]))
        sys.exit(1)


def profile_overrides(path):
    try:
        with open(path, "rb") as f:
            cluster = tomllib.load(f).get("cluster", {})
    except (OSError, tomllib.TOMLDecodeError) as e:
        sys.stderr.write("calibration_table: --profile %s: %s\n" % (path, e))
        sys.exit(2)
    if not cluster:
        sys.stderr.write("calibration_table: --profile %s: no [cluster] keys\n" % path)
        sys.exit(2)
    out = []
    for key, value in cluster.items():
        out += ["--set", "cluster.%s=%s" % (key, value)]
    return out


def nodes_of(scenario):
    with open(scenario, "rb") as f:
        return int(tomllib.load(f).get("cluster", {}).get("nodes", 2))


def measure(args, scenario, overrides, scenario_sets, work):
    sim_json = os.path.join(work, "sim.json")
    run([args.tensorwire, "run", scenario, "--json", sim_json] + overrides)
    with open(sim_json) as f:
        predicted = step_time_ns(json.load(f), measured=False)
    measured = []
    for i in range(args.runs):
        verbs_json = os.path.join(work, "verbs-%d.json" % i)
        run([args.tensorwire, "launch", "-n", str(nodes_of(scenario)), scenario, "--gpu-as-host",
             "--device", args.device, "--json", verbs_json] + scenario_sets)
        with open(verbs_json) as f:
            measured.append(step_time_ns(json.load(f), measured=True))
    return predicted, measured


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--profile", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--tensorwire", default=os.path.join(ROOT, "build/apps/tensorwire/tensorwire"))
    p.add_argument("--device", default=os.environ.get("TENSORWIRE_RDMA_DEVICE", "rxe0"))
    p.add_argument("--out", help="also write the table (Markdown) here")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="a scenario override for both sides (after the profile's keys)")
    p.add_argument("scenarios", nargs="*")
    args = p.parse_args()
    if args.runs < 1:
        p.error("--runs must be at least 1")
    overrides = profile_overrides(args.profile)
    scenario_sets = [x for kv in args.set for x in ("--set", kv)]
    scenarios = args.scenarios or [os.path.join(ROOT, s) for s in DEFAULT_SCENARIOS]
    rows = ["| scenario | predicted (ms) | measured (ms), median of runs | runs (ms) | error |",
            "| --- | ---: | ---: | --- | ---: |"]
    with tempfile.TemporaryDirectory() as work:
        for scenario in scenarios:
            predicted, measured = measure(args, scenario, overrides + scenario_sets,
                                          scenario_sets, work)
            median = statistics.median(measured)
            rows.append("| %s | %.3f | %.3f | %s | %+.0f%% |" % (
                os.path.basename(scenario), predicted / 1e6, median / 1e6,
                ", ".join("%.3f" % (m / 1e6) for m in measured),
                100 * (predicted - median) / median))
            print(rows[-1], flush=True)
    table = "\n".join(rows) + "\n"
    print("\n" + table, end="")
    if args.out:
        with open(args.out, "w") as f:
            f.write(table)


if __name__ == "__main__":
    main()
