#!/usr/bin/env python3
"""The table the harness exists for: every registered point-to-point protocol
(`tensorwire protocols --shape point-to-point`) on the same workloads and the
same hardware, side by side.

Runs three `tensorwire sweep`s with `--set protocol.name=<every protocol>`:
  scenarios/pingpong.toml at 1 KiB, 64 KiB, 4 MiB and 64 MiB (timing mode),
  scenarios/vgg16_8x4.toml and scenarios/resnet50_ps.toml,
and prints (and writes to OUT/protocol_table.md and .csv) per protocol: one-way
latency at 1 KiB, 64 KiB and 4 MiB and bandwidth at 64 MiB (steady steps), the
two training step times, and from VGG16: control messages and copies (and bytes
copied) per tensor and memory registered. With --verbs it also launches the
ping-pong points on a real RDMA device (`tensorwire launch -n 2 --device D`,
e.g. rxe0 in the VM) and adds their measured latencies.

  scripts/protocol_table.py [--tensorwire build/apps/tensorwire/tensorwire]
                            [--out out/protocol_table] [--jobs N] [--verbs DEVICE]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = ["1KiB", "64KiB", "4MiB", "64MiB"]
LATENCY_SIZES = SIZES[:3]


def size_bytes(text):
    """'64KiB' -> 65536 (the binary units sweep prints), for ordering."""
    for unit, scale in (("KiB", 2**10), ("MiB", 2**20), ("GiB", 2**30)):
        if text.endswith(unit):
            return int(text[:-len(unit)]) * scale
    return int(text)


def run(argv):
    done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit(f"protocol_table.py: error: {' '.join(argv)} exited with {done.returncode}:\n"
                 f"{done.stdout}{done.stderr}")
    return done.stdout


def sweep(tw, scenario, names, out, jobs, extra):
    argv = [tw, "sweep", os.path.join(ROOT, "scenarios", scenario), "--out", out,
            "--set", "protocol.name=" + ",".join(names)] + extra
    if jobs:
        argv += ["--jobs", str(jobs)]
    run(argv)
    with open(os.path.join(out, "sweep.json")) as f:
        return json.load(f)["rows"]


def by_protocol(rows, size=None):
    return {r["protocol.name"]: r for r in rows
            if size is None or r.get("workload.tensor[0].bytes") == size}


def verbs_latencies(tw, names, device, out, sizes):
    """Median measured step after the first, per protocol and size, on the device."""
    measured = {}
    for name in names:
        for size in sizes:
            path = os.path.join(out, f"verbs_{name}_{size}.json")
            run([tw, "launch", "-n", "2", os.path.join(ROOT, "scenarios", "pingpong.toml"),
                 "--device", device, "--json", path, "--set", f"protocol.name={name}",
                 "--set", f"workload.tensor[0].bytes={size}"])
            with open(path) as f:
                steps = json.load(f)["steps"][1:]
            times = sorted(s["measured_ns"] for s in steps)
            measured[(name, size)] = times[(len(times) - 1) // 2]
    return measured


def write_curve(path, names, sizes, verbs, tw, out):
    """protocol,size,measured one-way ns on the device,simulated ns (the same point in the
    simulator: a sweep of exactly these sizes)."""
    rows = sweep(tw, "pingpong.toml", names, os.path.join(out, "pingpong_curve"), 0,
                 ["--timing-only", "--set", "workload.tensor[0].bytes=" + ",".join(sizes)])
    with open(path, "w") as f:
        f.write("protocol,size,measured_ns,simulated_ns\n")
        for name in names:
            for size in sizes:
                simulated = by_protocol(rows, size)[name]["steady_step_ns"]
                f.write(f"{name},{size},{verbs[(name, size)]},{simulated}\n")


def table_rows(names, ping, vgg, resnet, verbs):
    rows = []
    for name in names:
        v, r = vgg[name], resnet[name]
        tensors = max(1, v["workload.tensors"])
        row = {"protocol": name}
        for size in LATENCY_SIZES:
            row[f"latency {size} (us)"] = ping[size][name]["steady_step_ns"] / 1e3
        row["bandwidth 64MiB (Gb/s)"] = ping["64MiB"][name]["bandwidth_gbps"]
        row["vgg16_8x4 step (ms)"] = v["steady_step_ns"] / 1e6
        row["resnet50_ps step (ms)"] = r["steady_step_ns"] / 1e6
        row["control msgs / tensor"] = v["protocol.control_messages_per_tensor"]
        copies = v["transport.cpu_copies"] + v["transport.copy_engine_copies"]
        copied = v["transport.cpu_copy_bytes"] + v["transport.copy_engine_bytes"]
        row["copies / tensor"] = copies / tensors
        row["bytes copied / tensor (KiB)"] = copied / tensors / 1024
        row["registered, all runs (MiB)"] = v["transport.registered_bytes"] / 2**20
        for size in LATENCY_SIZES if verbs else []:
            row[f"rxe latency {size} (us)"] = verbs[(name, size)] / 1e3
        rows.append(row)
    return rows


def cell_text(value):
    if isinstance(value, str):
        return value
    return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"


def markdown(rows):
    columns = list(rows[0].keys())
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        cells = [cell_text(row[c]) for c in columns]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tensorwire", default=os.path.join(ROOT, "build/apps/tensorwire/tensorwire"))
    parser.add_argument("--out", default="out/protocol_table")
    parser.add_argument("--jobs", type=int, default=0)
    parser.add_argument("--verbs", metavar="DEVICE", default="")
    parser.add_argument("--verbs-curve", metavar="SIZES", default="",
                        help="with --verbs: also measure these sizes (comma-separated, e.g. "
                             "1KiB,4KiB,...,64MiB) and write OUT/verbs_curve.csv")
    args = parser.parse_args()
    tw = args.tensorwire
    names = run([tw, "protocols", "--shape", "point-to-point", "--names"]).split()
    ping_rows = sweep(tw, "pingpong.toml", names, os.path.join(args.out, "pingpong"), args.jobs,
                      ["--timing-only", "--set", "workload.tensor[0].bytes=" + ",".join(SIZES)])
    ping = {size: by_protocol(ping_rows, size) for size in SIZES}
    vgg = by_protocol(sweep(tw, "vgg16_8x4.toml", names, os.path.join(args.out, "vgg16_8x4"),
                            args.jobs, []))
    resnet = by_protocol(sweep(tw, "resnet50_ps.toml", names,
                               os.path.join(args.out, "resnet50_ps"), args.jobs, []))
    sizes = list(LATENCY_SIZES)
    for size in args.verbs_curve.split(",") if args.verbs_curve else []:
        if size not in sizes:
            sizes.append(size)
    sizes.sort(key=size_bytes)
    verbs = verbs_latencies(tw, names, args.verbs, args.out, sizes) if args.verbs else {}
    if args.verbs and args.verbs_curve:
        write_curve(os.path.join(args.out, "verbs_curve.csv"), names, sizes, verbs, tw, args.out)
    rows = table_rows(names, ping, vgg, resnet, verbs)
    text = markdown(rows)
    with open(os.path.join(args.out, "protocol_table.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "protocol_table.csv"), "w") as f:
        f.write(",".join(rows[0].keys()) + "\n")
        for row in rows:
            f.write(",".join(str(v) for v in row.values()) + "\n")
    print(text, end="")


if __name__ == "__main__":
    main()
