#!/usr/bin/env python3
"""Every shipped scenario gives the results recorded before the protocol seam.

Runs `tensorwire run SCENARIO --json` for each scenarios/*.toml and compares the
results JSON with tests/workload/golden/NAME.json, recorded with the tree as it
was before the protocol registry (same delivered content, simulated times,
message counts and counters). Each step's per-tensor list is kept as a SHA-256
of its canonical JSON, so a golden file stays small and a single tensor's
changed done_ns still fails the test.

  golden_results_test.py TENSORWIRE SOURCE_ROOT            check
  golden_results_test.py TENSORWIRE SOURCE_ROOT --record   write the golden files
"""
import hashlib
import json
import pathlib
import subprocess
import sys
import tempfile


TIME_ACCOUNT_KEYS = ("bottleneck", "bottleneck_utilisation", "lower_bound_ns", "resource_bound_ns",
                     "plan_bound_ns", "achieved_ns", "efficiency", "step_time_p50_ns",
                     "step_time_p99_ns", "step_time_max_ns", "resources")
# A broadcast's physical bound and every planner's plan bound came later too
# (issue 23); they derive from the plan, and tests/protocols/realm_broadcast checks them.
PLAN_COMPARISON_KEYS = ("physical_bound", "planner_bounds")


def canonical(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def reduce(results):
    """The results with each step's per-tensor list replaced by its hash.

    Coverage (what the protocol reached of what it declares) is left out: it
    came after these files were recorded, and tests/model/coverage_test.cc
    checks it. So are the keys of "where the time went" (resources, the
    bottleneck, bounds, efficiency, the step-time spread): they came later too,
    derive from the timings the files keep, and tests/report/time_account_test.cc
    checks them; leaving them out keeps the files as recorded, proving that
    the meter and a jitter model left off change no result. Each tensor's
    "breakdown" (where its wait went) is left out for the same reason:
    tests/workload/transfer_breakdown_test.cc checks it, and the unchanged
    hashes prove that attributing work to transfers changes no timing.
    """
    results.pop("coverage", None)
    for key in TIME_ACCOUNT_KEYS + PLAN_COMPARISON_KEYS:
        results.pop(key, None)
    for step in results.get("steps", []):
        if "per_tensor" in step:
            for tensor in step["per_tensor"]:
                tensor.pop("breakdown", None)
            step["per_tensor"] = hashlib.sha256(canonical(step["per_tensor"]).encode()).hexdigest()
    return results


def run(tensorwire, scenario, out_dir):
    out = pathlib.Path(out_dir) / (scenario.stem + ".json")
    proc = subprocess.run([tensorwire, "run", str(scenario), "--json", str(out)],
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{scenario.name}: exit {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return reduce(json.loads(out.read_text()))


def differences(path, want, got):
    """Paths where two JSON values differ, as 'path: want != got'."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for key in sorted(set(want) | set(got)):
            if key not in got:
                out.append(f"{path}.{key}: missing")
            elif key not in want:
                out.append(f"{path}.{key}: not in the golden file")
            else:
                out += differences(f"{path}.{key}", want[key], got[key])
        return out
    if isinstance(want, list) and isinstance(got, list) and len(want) == len(got):
        out = []
        for i, (w, g) in enumerate(zip(want, got)):
            out += differences(f"{path}[{i}]", w, g)
        return out
    return [] if want == got else [f"{path}: {canonical(want)[:200]} != {canonical(got)[:200]}"]


def main():
    tensorwire, root = sys.argv[1], pathlib.Path(sys.argv[2])
    record = "--record" in sys.argv[3:]
    golden_dir = root / "tests" / "workload" / "golden"
    scenarios = sorted((root / "scenarios").glob("*.toml"))
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        for scenario in scenarios:
            golden = golden_dir / (scenario.stem + ".json")
            got = run(tensorwire, scenario, tmp)
            # The path is where the scenario was found, not a result.
            got.get("scenario", {}).pop("path", None)
            if record:
                golden.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n")
                continue
            if not golden.exists():
                print(f"FAIL {scenario.name}: no golden file {golden} (record it with --record)")
                failures += 1
                continue
            diff = differences(scenario.stem, json.loads(golden.read_text()), got)
            if diff:
                failures += 1
                print(f"FAIL {scenario.name}: {len(diff)} differences")
                for line in diff[:20]:
                    print("  " + line)
            else:
                print(f"ok   {scenario.name}")
    if not record and not scenarios:
        print("FAIL: no scenarios found")
        return 1
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
