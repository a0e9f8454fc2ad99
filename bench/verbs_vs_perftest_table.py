#!/usr/bin/env python3
"""The table of bench/verbs_vs_perftest.sh, from the raw results it left in DIR.

    python3 bench/verbs_vs_perftest_table.py DIR

perftest: "BW average[MB/sec]" (perftest's MB is 2^20 bytes) and "t_typical[usec]" of each client
output DIR/repR.TOOL.SIZE.txt. tensorwire: the results JSON DIR/repR.SCENARIO.json that rank 0
wrote; steps 2.. (step 1 carries the meta-data exchange); per_tensor[0].measured_ns is the
Recv's request-to-completion time. Each repetition gives one value (perftest's own number; for
tensorwire the median over the steady steps), the table shows the median over repetitions and
the range.
"""
import glob
import json
import os
import re
import statistics
import sys

MIB = 1 << 20


def perftest_row(path):
    """The numbers of the data line under the '#bytes' header of a perftest client output."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes"):
            # Column names may hold one space ("99% percentile[usec]"), so columns are
            # split at two or more; but the latency tests' header has only one
            # between "#bytes" and "#iterations".
            header = []
            for token in re.split(r"\s{2,}", line.strip()):
                header.extend(token.split(" ") if token.startswith("#") else [token])
            for data in lines[i + 1:]:
                if data.strip() and not data.startswith("-"):
                    return dict(zip(header, data.split()))
    return None


def tensorwire_steady(path):
    """(tensor bytes, [measured_ns of steps 2..]) from a verbs results JSON; None when unusable."""
    try:
        with open(path, encoding="utf-8") as f:
            j = json.load(f)
    except (OSError, ValueError):
        return None
    if not j.get("passed", False):
        return None
    times, size = [], None
    for step in j["steps"][1:]:
        t = step["per_tensor"][0]
        if "measured_ns" in t:
            times.append(t["measured_ns"])
            size = t.get("bytes", size)
    step_ns = [s["measured_ns"] for s in j["steps"][1:] if "measured_ns" in s]
    return (size, times, step_ns) if times else None


def reps_of(out, pattern, value):
    vals = []
    for path in sorted(glob.glob(os.path.join(out, pattern))):
        v = value(path)
        if v is not None:
            vals.append(v)
    return vals


def med(vals):
    return statistics.median(vals) if vals else None


def fmt(v, spec):
    return "n/a" if v is None else format(v, spec)


def span(vals, spec):
    if len(vals) < 2:
        return ""
    return f" ({format(min(vals), spec)}-{format(max(vals), spec)})"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: verbs_vs_perftest_table.py DIR")
    out = sys.argv[1]

    def pt(col):
        def get(path):
            row = perftest_row(path)
            try:
                return float(row[col]) if row else None
            except (KeyError, ValueError):
                return None
        return get

    def tw_bw(path):
        r = tensorwire_steady(path)
        return r[0] / (statistics.median(r[1]) / 1e9) / MIB if r else None

    def tw_lat(path):
        r = tensorwire_steady(path)
        return statistics.median(r[1]) / 1e3 if r else None

    def tw_step(path):
        r = tensorwire_steady(path)
        return statistics.median(r[2]) / 1e3 if r and r[2] else None

    session = ""
    try:
        with open(os.path.join(out, "session.txt"), encoding="utf-8") as f:
            session = "; ".join(line.strip() for line in f if line.strip())
    except OSError:
        pass
    try:
        with open(os.path.join(out, "host_load.txt"), encoding="utf-8") as f:
            session += "; " + "; ".join(line.strip() for line in f if line.strip())
    except OSError:
        pass
    nreps = len(glob.glob(os.path.join(out, "rep*.ib_send_lat.64.txt")))
    print(f"Session: {session}")
    print(f"Medians over {nreps} repetition(s); the range over repetitions in parentheses.")
    print()
    print("| bandwidth | ib_write_bw (MiB/s) | tensorwire (MiB/s) | ratio | target >= 0.9 |")
    print("| --- | --- | --- | --- | --- |")
    for size, scen, label in ((1048576, "verbs_bw_1mib", "1 MiB"),
                              (16777216, "verbs_bw_16mib", "16 MiB")):
        ref = reps_of(out, f"rep*.ib_write_bw.{size}.txt", pt("BW average[MB/sec]"))
        tw = reps_of(out, f"rep*.{scen}.json", tw_bw)
        r, t = med(ref), med(tw)
        ratio = t / r if r and t else None
        ok = "n/a" if ratio is None else ("met" if ratio >= 0.9 else "**not met**")
        print(f"| {label} | {fmt(r, '.1f')}{span(ref, '.1f')} | {fmt(t, '.1f')}{span(tw, '.1f')} "
              f"| {fmt(ratio, '.2f')} | {ok} |")
    print()
    send = reps_of(out, "rep*.ib_send_lat.64.txt", pt("t_typical[usec]"))
    s = med(send)
    print(f"One control message's trip: ib_send_lat -s 64, t_typical {fmt(s, '.1f')} us"
          f"{span(send, '.1f')}.")
    print()
    print("| latency | ib_write_lat (us) | + ib_send_lat = target (us) | tensorwire (us) "
          "| tensorwire / ib_write_lat | tensorwire / target | met | tensorwire step (us) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for size, scen, label in ((8, "verbs_lat_8b", "8 B"), (64, "verbs_lat_64b", "64 B"),
                              (512, "verbs_lat_512b", "512 B"), (4096, "verbs_lat_4kib", "4 KiB")):
        ref = reps_of(out, f"rep*.ib_write_lat.{size}.txt", pt("t_typical[usec]"))
        tw = reps_of(out, f"rep*.{scen}.json", tw_lat)
        steps = reps_of(out, f"rep*.{scen}.json", tw_step)
        r, t = med(ref), med(tw)
        target = r + s if r is not None and s is not None else None
        ok = "n/a" if t is None or target is None else ("met" if t <= target else "**not met**")
        print(f"| {label} | {fmt(r, '.1f')}{span(ref, '.1f')} | {fmt(target, '.1f')} "
              f"| {fmt(t, '.0f')}{span(tw, '.0f')} | {fmt(t / r if r and t else None, '.1f')}x "
              f"| {fmt(t / target if target and t else None, '.1f')}x | {ok} "
              f"| {fmt(med(steps), '.0f')}{span(steps, '.0f')} |")


if __name__ == "__main__":
    main()
