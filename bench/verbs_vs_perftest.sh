#!/usr/bin/env bash
# tensorwire's verbs backend against perftest, on the same RDMA device in the same session.
#
#   bench/verbs_vs_perftest.sh [--reps N] [--out DIR] [--quick]
#
# Inside ONE scripts/with_rdma.sh session (the host's RDMA device, or the soft-RoCE rxe0 of the
# throwaway VM) it runs, N times over (default 3), interleaved so that both sides see the same
# machine:
#   bandwidth  ib_write_bw -s 1 MiB / 16 MiB   vs  tensorwire launch -n 2 bench/scenarios/verbs_bw_*.toml
#   latency    ib_write_lat -s 8 B .. 4 KiB    vs  tensorwire launch -n 2 bench/scenarios/verbs_lat_*.toml
#              ib_send_lat -s 64               (one control message's trip: TENSOR_REQUEST is a send)
# then prints a Markdown table (medians over the repetitions) with the ratios against the
# targets of issue 3: bandwidth >= 0.9 x ib_write_bw; latency <= ib_write_lat + one control
# message trip (ib_send_lat).
#
# tensorwire side, from the results JSON of rank 0 (--json): steps 2.. only (step 1 carries the
# meta-data exchange). Each tensor's measured_ns is its Recv's request-to-completion time (the
# scenarios call Send first, so the sender's source is filled and its Send posted before the
# Recv starts the clock). Bandwidth = tensor bytes / median measured_ns of the steady steps;
# latency = median measured_ns. perftest side: "BW average" (MB/sec = MiB/s, perftest divides by
# 0x100000) and "t_typical" (its median of half the round trip).
#
# Every raw output (perftest text, tensorwire JSON and logs) stays in DIR (default
# build/bench-verbs), with the table in DIR/table.md. Timings in the VM are emulated-CPU
# timings: compare only numbers of the same session. Not a test (no assertions on timings).
#
# Options:
#   --reps N   repetitions (default 3)
#   --out DIR  where raw results and the table go (default build/bench-verbs); must be under the
#              project root (the VM writes only there)
#   --quick    one repetition, fewer iterations (a smoke run of the script itself)
#   -h, --help this text
#
# Environment: TENSORWIRE_BIN (default build/apps/tensorwire/tensorwire), and with_rdma.sh's own
# (TENSORWIRE_VM_*).
#
# Exit status: 0 the table was printed (whether or not the targets are met); 1 a run failed;
# 2 bad usage or something missing (tensorwire not built, perftest not installed, python3).
set -euo pipefail

me="verbs_vs_perftest.sh"
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)"
usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

reps=3
out="build/bench-verbs"
quick=0
inner=0
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) [ $# -ge 2 ] || { echo "$me: --reps needs a number" >&2; exit 2; }; reps="$2"; shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "$me: --out needs a directory" >&2; exit 2; }; out="$2"; shift 2 ;;
    --quick) quick=1; reps=1; shift ;;
    --inner) inner=1; shift ;;  # internal: the part that runs on the RDMA device
    -h | --help) usage; exit 0 ;;
    *) echo "$me: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
case "$reps" in '' | *[!0-9]* | 0) echo "$me: --reps must be a positive integer" >&2; exit 2 ;; esac

cd "$root"
tw="${TENSORWIRE_BIN:-$root/build/apps/tensorwire/tensorwire}"

# The cases: perftest size, its iterations, the scenario. Iterations are chosen so that one
# repetition of everything takes about a minute in the emulated VM (~20-60 MB/s, ~50 us RTT/2).
if [ "$quick" -eq 1 ]; then
  bw_iters_1m=16 bw_iters_16m=5 lat_iters=300  # ib_write_bw wants -n >= 5
else
  bw_iters_1m=64 bw_iters_16m=8 lat_iters=1000
fi
bw_cases=("1048576 $bw_iters_1m verbs_bw_1mib" "16777216 $bw_iters_16m verbs_bw_16mib")
lat_cases=("8 verbs_lat_8b" "64 verbs_lat_64b" "512 verbs_lat_512b" "4096 verbs_lat_4kib")

# ---- on the RDMA device --------------------------------------------------------------------
if [ "$inner" -eq 1 ]; then
  dev="${TENSORWIRE_RDMA_DEVICE:?no TENSORWIRE_RDMA_DEVICE (run through scripts/with_rdma.sh)}"
  addr="${TENSORWIRE_RDMA_ADDR:?no TENSORWIRE_RDMA_ADDR: the device has no IPv4 address}"
  gid=()
  # The VM's rxe0: GID 1 is the IPv4 RoCE v2 GID, the one tensorwire's rdma_cm uses too.
  if [ "${TENSORWIRE_RDMA_VM:-0}" = 1 ]; then gid=(-x 1); fi
  port=18600
  failed=0

  # perftest NAME ARGS... -> stdout of the client in $out/NAME.txt; the server in the
  # background, the client only once the server listens (a fixed sleep is not enough).
  perftest() {
    local name="$1" tool="$2"
    shift 2
    port=$((port + 1))
    timeout 300 "$tool" -d "$dev" "${gid[@]}" -F -p "$port" "$@" >"$out/$name.server.txt" 2>&1 &
    local spid=$! i
    for i in $(seq 300); do
      ss -ltn 2>/dev/null | grep -q ":$port " && break
      kill -0 "$spid" 2>/dev/null || break
      sleep 0.1
    done
    if ! timeout 300 "$tool" -d "$dev" "${gid[@]}" -F -p "$port" "$@" "$addr" >"$out/$name.txt" 2>&1; then
      echo "$me: FAILED: $tool $* (client; see $out/$name.txt and $name.server.txt)" >&2
      kill "$spid" 2>/dev/null || true
      failed=1
    fi
    wait "$spid" 2>/dev/null || true
    echo "  $(date +%T) $tool $*" >&2
  }
  tensorwire() {
    local name="$1" scenario="$2"
    if ! "$tw" launch -n 2 "bench/scenarios/$scenario.toml" --device "$dev" \
      --json "$out/$name.json" >"$out/$name.log" 2>&1; then
      echo "$me: FAILED: tensorwire launch -n 2 bench/scenarios/$scenario.toml (see $out/$name.log)" >&2
      failed=1
    fi
    echo "  $(date +%T) tensorwire launch -n 2 bench/scenarios/$scenario.toml" >&2
  }

  {
    echo "device $dev ($addr), $(nproc) CPUs, kernel $(uname -r)"
    echo "VM ${TENSORWIRE_RDMA_VM:-0}; $(dpkg-query -W -f='perftest ${Version}' perftest 2>/dev/null || echo 'perftest ?')"
    echo "started $(date -u +%FT%TZ)"
  } >"$out/session.txt"
  for r in $(seq "$reps"); do
    echo "$me: repetition $r of $reps" >&2
    for c in "${bw_cases[@]}"; do
      read -r size iters scen <<<"$c"
      perftest "rep$r.ib_write_bw.$size" ib_write_bw -s "$size" -n "$iters"
      tensorwire "rep$r.$scen" "$scen"
    done
    perftest "rep$r.ib_send_lat.64" ib_send_lat -s 64 -n "$lat_iters"
    for c in "${lat_cases[@]}"; do
      read -r size scen <<<"$c"
      perftest "rep$r.ib_write_lat.$size" ib_write_lat -s "$size" -n "$lat_iters"
      tensorwire "rep$r.$scen" "$scen"
    done
  done
  echo "finished $(date -u +%FT%TZ)" >>"$out/session.txt"
  exit "$failed"
fi

# ---- on this host: checks, then the device session, then the table -------------------------
"$root/scripts/install_deps.sh" || { echo "$me: scripts/install_deps.sh failed" >&2; exit 2; }
missing=()
[ -x "$tw" ] || missing+=("tensorwire is not built ($tw): run scripts/build.sh (or ninja -C build)")
for t in ib_write_bw ib_write_lat ib_send_lat; do
  command -v "$t" >/dev/null || {
    missing+=("perftest's $t is not installed: run scripts/install_deps.sh (Debian package perftest)")
    break
  }
done
command -v ss >/dev/null || missing+=("ss is not installed (Debian package iproute2)")
command -v python3 >/dev/null || missing+=("python3 is not installed: run scripts/install_deps.sh")
if [ "${#missing[@]}" -gt 0 ]; then
  for m in "${missing[@]}"; do echo "$me: $m" >&2; done
  exit 2
fi

mkdir -p "$out"
out="$(cd "$out" && pwd -P)"
case "$out/" in
  "$root"/*) ;;
  *) echo "$me: --out must be under the project root ($root): the VM writes only there" >&2; exit 2 ;;
esac
rm -f "$out"/rep*.txt "$out"/rep*.json "$out"/rep*.log "$out"/table.md "$out"/session.txt "$out"/host_load.txt
out_rel="${out#"$root"/}"

cmd=("$root/bench/$me" --inner --reps "$reps" --out "$out_rel")
[ "$quick" -eq 0 ] || cmd+=(--quick)
t0="$(date +%s)"
echo "host load before: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) CPUs)" >"$out/host_load.txt"
rc=0
"$root/scripts/with_rdma.sh" "${cmd[@]}" || rc=$?
t1="$(date +%s)"
echo "host load after: $(cut -d' ' -f1-3 /proc/loadavg); device session $((t1 - t0)) s" >>"$out/host_load.txt"
if [ "$rc" -eq 77 ]; then
  echo "$me: no RDMA device here and the RDMA VM cannot be built (see above)" >&2
  exit 2
fi
echo "$me: the device session took $((t1 - t0)) s (boot included)" >&2
python3 "$root/bench/verbs_vs_perftest_table.py" "$out" | tee "$out/table.md"
[ "$rc" -eq 0 ] || { echo "$me: some runs failed (exit $rc); the table has what finished" >&2; exit 1; }
