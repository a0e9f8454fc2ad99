#!/usr/bin/env python3
"""Where a small tensor's request-to-completion time goes on verbs, from a trace.

    tensorwire launch -n 2 bench/scenarios/verbs_lat_8b.toml --device rxe0 --trace T.json
    bench/verbs_latency_breakdown.py T.json

For a latency scenario (one tensor from one rank to another per step, zero-copy
Request/Response with an unchanged meta-data cache), each Recv of the trace is
cut into the stages of TensorFlow verbs' protocol, and the median of each
stage over the steps where all of them were found is printed (step 1, with
its meta-data exchange, has more messages and is left out):

  request built    Recv called -> TENSOR_REQUEST posted (receiver's CPU)
  request post     the ibv_post_send call itself (the NIC's doorbell; on
                   soft-RoCE the whole kernel path of the packet runs in it)
  request flight   TENSOR_REQUEST posted -> its arrival seen by the sender
  response built   arrival seen -> RDMA write with immediate posted (sender's CPU)
  write post       that ibv_post_send call
  write flight     write posted -> its arrival seen by the receiver
  done             arrival seen -> the Recv's done callback
  total            the Recv's request-to-completion time

Times come from one clock when the ranks share a host (the trace's
otherData.clocks says which). Not a test: it prints numbers, asserts nothing.
"""
import json
import re
import statistics
import sys


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    try:
        with open(argv[1], encoding="utf-8") as f:
            trace = json.load(f)
        raw = trace["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"verbs_latency_breakdown: {argv[1]}: not a Chrome trace: {e}", file=sys.stderr)
        return 2
    tracks = {(e["pid"], e["tid"]): e["args"]["name"] for e in raw
              if e.get("ph") == "M" and e.get("name") == "thread_name"}
    events = []
    for e in raw:
        if e.get("ph") not in ("X", "i"):
            continue
        events.append({"track": tracks.get((e["pid"], e["tid"]), "?"), "name": e["name"],
                       "ts": float(e["ts"]), "dur": float(e.get("dur", 0.0)),
                       "detail": e.get("args", {}).get("detail", "")})
    events.sort(key=lambda e: e["ts"])

    def first(track, name, after, until):
        for e in events:
            if e["track"] == track and e["name"] == name and after <= e["ts"] <= until:
                return e
        return None

    def post_us(e):
        m = re.search(r"the post took (\d+) us", e["detail"])
        return float(m.group(1)) if m else None

    stages = {k: [] for k in ("request built", "request post", "request flight", "response built",
                              "write post", "write flight", "done", "total")}
    recvs = [e for e in events if e["track"].endswith("/recv") and e["dur"] > 0]
    for r in recvs:
        dst = re.match(r"rank (\d+)/recv", r["track"])
        src = re.search(r"rank (\d+) -> rank", r["detail"])
        if not dst or not src:
            continue
        d, s = dst.group(1), src.group(1)
        end = r["ts"] + r["dur"]
        req = first(f"node{d}/nic tx to node{s}", "send", r["ts"], end)
        if req is None:
            continue
        seen = first(f"node{s}/nic rx from node{d}", "recv", req["ts"], end)
        if seen is None:
            continue
        write = first(f"node{s}/nic tx to node{d}", "rdma write with imm", seen["ts"], end)
        if write is None:
            continue
        landed = first(f"node{d}/nic rx from node{s}", "recv rdma with imm", write["ts"], end)
        if landed is None or post_us(req) is None or post_us(write) is None:
            continue
        # A recv between request and write means more than one round (meta-data update).
        if first(f"node{d}/nic rx from node{s}", "recv", req["ts"], write["ts"]) is not None:
            continue
        stages["request built"].append(req["ts"] - r["ts"])
        stages["request post"].append(post_us(req))
        stages["request flight"].append(seen["ts"] - req["ts"])
        stages["response built"].append(write["ts"] - seen["ts"])
        stages["write post"].append(post_us(write))
        stages["write flight"].append(landed["ts"] - write["ts"])
        stages["done"].append(end - landed["ts"])
        stages["total"].append(r["dur"])
    n = len(stages["total"])
    if n == 0:
        print(f"verbs_latency_breakdown: {argv[1]}: no Recv with one request and one write "
              "(is it a latency scenario traced with --trace?)", file=sys.stderr)
        return 1
    clocks = trace.get("otherData", {}).get("clocks", "?")
    print(f"{argv[1]}: {n} of {len(recvs)} Recvs ({clocks})")
    print("| stage | median (us) | min (us) | max (us) |")
    print("| --- | --- | --- | --- |")
    for name, values in stages.items():
        print(f"| {name} | {statistics.median(values):.0f} | {min(values):.0f} | {max(values):.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
