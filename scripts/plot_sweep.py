#!/usr/bin/python3
"""Plots of a `tensorwire sweep`: reads DIR/sweep.csv (and the axes from sweep.json
beside it when present) and writes PNG and SVG files into OUT_DIR:

- latency.{png,svg} and bandwidth.{png,svg}: steady step time and bandwidth against
  the size axis (a swept key whose values are sizes), log axes, one line per value of
  the other axes (e.g. per protocol);
- step_time_<key>.{png,svg}: steady step time against each other numeric axis;
- step_time.{png,svg}: a bar per point when no axis is numeric (e.g. protocols only);
- transfer_breakdown.{png,svg}: where a Recv's wait went, a stacked bar per point of
  the mean per transfer of control, queueing, wire, copies and other (the
  `breakdown.*_ns` columns; they sum to the mean latency);
- breakdown.{png,svg}: where the time went, a stacked bar per point of the busy
  time per step of each kind of resource (NIC send and receive sides, copy
  engines, CPUs; the `busy_per_step.*_ns` columns), when the results carry it.

Usage: plot_sweep.py SWEEP_CSV OUT_DIR. Exit 2 on bad input, with the reason.
Run by `tensorwire plot` and `tensorwire sweep --plot` with Debian's python3 and
python3-matplotlib (scripts/install_deps.sh).
"""
import csv
import json
import os
import re
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import matplotlib.ticker  # noqa: E402

SIZE_UNITS = {"B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
              "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}
NUMBER = re.compile(r"^\s*([-+]?[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*([A-Za-z/]*)\s*$")


def fail(message):
    print(f"plot_sweep.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def size_of(text):
    m = NUMBER.match(text)
    if not m:
        return None
    unit = m.group(2) or "B"
    return float(m.group(1)) * SIZE_UNITS[unit] if unit in SIZE_UNITS else None


def number_of(text):
    m = NUMBER.match(text)
    return float(m.group(1)) if m else None


def read_sweep(csv_path):
    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        fail(f"{csv_path} has no points")
    for needed in ("point", "steady_step_ns"):
        if needed not in rows[0]:
            fail(f"{csv_path} has no column '{needed}': is it a tensorwire sweep.csv?")
    json_path = os.path.join(os.path.dirname(csv_path), "sweep.json")
    if os.path.exists(json_path):
        with open(json_path) as f:
            axes = [a["key"] for a in json.load(f)["axes"]]
    else:  # the axis columns sit between "point" and the first derived figure
        columns = list(rows[0].keys())
        axes = columns[1:columns.index("step_time_ns")]
    return rows, axes


def kind_of(rows, axis):
    values = [r[axis] for r in rows]
    if all(size_of(v) is not None for v in values) and any(not v.isdigit() for v in values):
        return "size"
    if axis.endswith("bytes") and all(size_of(v) is not None for v in values):
        return "size"
    if all(number_of(v) is not None for v in values):
        return "number"
    return "category"


def series(rows, x_axis, others):
    """{label of the other axes' values: [row, ...]} in first-seen order."""
    out = {}
    for r in rows:
        label = ", ".join(f"{a}={r[a]}" for a in others) or "all points"
        out.setdefault(label, []).append(r)
    return out


def save(fig, out_dir, stem):
    for ext in ("png", "svg"):
        fig.savefig(os.path.join(out_dir, f"{stem}.{ext}"), dpi=120, bbox_inches="tight")
    plt.close(fig)
    print(f"wrote {os.path.join(out_dir, stem)}.png and .svg")


def line_plot(rows, x_axis, x_of, others, y_of, ylabel, logy, title):
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, group in series(rows, x_axis, others).items():
        group = sorted(group, key=lambda r: x_of(r[x_axis]))
        ax.plot([x_of(r[x_axis]) for r in group], [y_of(r) for r in group], marker="o",
                label=label)
    ax.set_xlabel(x_axis)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return fig, ax


def size_label(value, _position=None):
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        if value >= SIZE_UNITS[unit]:
            return f"{value / SIZE_UNITS[unit]:g} {unit}"
    return f"{value:g} B"


def plot_size_axis(rows, axis, others, out_dir):
    def us(r):
        return float(r["steady_step_ns"]) / 1e3

    fig, ax = line_plot(rows, axis, size_of, others, us, "one-way latency (us, steady step)",
                        True, "Latency against size")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(size_label))
    ax.set_yscale("log")
    save(fig, out_dir, "latency")
    fig, ax = line_plot(rows, axis, size_of, others, lambda r: float(r["bandwidth_gbps"]),
                        "bandwidth (Gb/s, steady step)", False, "Bandwidth against size")
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(size_label))
    save(fig, out_dir, "bandwidth")


def plot_number_axis(rows, axis, others, out_dir):
    fig, _ = line_plot(rows, axis, number_of, others,
                       lambda r: float(r["steady_step_ns"]) / 1e3, "steady step time (us)",
                       False, f"Step time against {axis}")
    save(fig, out_dir, "step_time_" + re.sub(r"[^A-Za-z0-9_.-]", "_", axis))


def point_labels(rows, axes):
    return ["\n".join(r[a] for a in axes) or r["point"] for r in rows]


def bar_axes(count):
    fig, ax = plt.subplots(figsize=(max(6, 1.9 * count), 4.5))
    return fig, ax


def label_bars(ax, rows, axes):
    ax.set_xticks(range(len(rows)), point_labels(rows, axes), fontsize="small", rotation=15)


def plot_bars(rows, axes, out_dir):
    fig, ax = bar_axes(len(rows))
    ax.bar(range(len(rows)), [float(r["steady_step_ns"]) / 1e3 for r in rows])
    label_bars(ax, rows, axes)
    ax.set_ylabel("steady step time (us)")
    ax.set_title("Step time per point")
    save(fig, out_dir, "step_time")


def plot_breakdown(rows, axes, out_dir, prefix="busy_per_step.", stem="breakdown",
                   ylabel="busy time per step, summed over resources (ms)",
                   title="Where the time went: busy time by kind of resource", scale=1e6):
    parts = [c for c in rows[0].keys() if c.startswith(prefix) and c.endswith("_ns")]
    if not parts:
        return
    fig, ax = bar_axes(len(rows))
    bottom = [0.0] * len(rows)
    for part in parts:
        heights = [float(r.get(part) or 0) / scale for r in rows]
        ax.bar(range(len(rows)), heights, bottom=bottom, label=part[len(prefix):-3].replace("_", " "))
        bottom = [b + h for b, h in zip(bottom, heights)]
    label_bars(ax, rows, axes)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize="small")
    save(fig, out_dir, stem)


def main(argv):
    if len(argv) != 3:
        fail("usage: plot_sweep.py SWEEP_CSV OUT_DIR")
    csv_path, out_dir = argv[1], argv[2]
    if not os.path.isfile(csv_path):
        fail(f"{csv_path} does not exist")
    rows, axes = read_sweep(csv_path)
    os.makedirs(out_dir, exist_ok=True)
    kinds = {a: kind_of(rows, a) for a in axes}
    for axis in axes:
        others = [a for a in axes if a != axis]
        if kinds[axis] == "size":
            plot_size_axis(rows, axis, others, out_dir)
        elif kinds[axis] == "number":
            plot_number_axis(rows, axis, others, out_dir)
    if all(k == "category" for k in kinds.values()):
        plot_bars(rows, axes, out_dir)
    plot_breakdown(rows, axes, out_dir)
    plot_breakdown(rows, axes, out_dir, "breakdown.", "transfer_breakdown",
                   "mean wait per Recv, steady steps (us)",
                   "Where a Recv's wait went: control, queueing, wire, copies, other", 1e3)


if __name__ == "__main__":
    main(sys.argv)
