#!/usr/bin/env bash
# A sharded check on a real Slurm: starts a one-node cluster on this machine
# (munged, slurmctld, slurmd as root, a generated slurm.conf with
# proctrack/linuxproc and task/none, state and spool in a temporary
# directory), submits `tensorwire check --shard` as a 4-task array job with
# `sbatch --wait`, merges the shards with `tensorwire check-merge` and
# compares the verdict and the distinct states with the one-process search.
# Stops every daemon it started at the end, also on failure. Exit 77 (skip,
# with the reason) only when the daemons cannot start here.
#   usage: slurm_shard_test.sh TENSORWIRE SOURCE_ROOT
set -uo pipefail

tensorwire=$(realpath "$1")
root=$(realpath "$2")
scenario="$root/scenarios/model_2x3.toml"
tasks=4
work=$(mktemp -d /tmp/tensorwire-slurm.XXXXXX)
chmod 755 "$work"
pids=()

stop_daemons() {
  # Only the daemons this script started, by their pid.
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null
  done
  rm -rf "$work"
}
trap stop_daemons EXIT

skip() { echo "SKIP: $*" >&2; exit 77; }
fail() { echo "FAIL: $*" >&2; for f in "$work"/log/*; do echo "== $f"; tail -20 "$f"; done >&2; exit 1; }

# Waits up to $1 seconds for the command after it to succeed.
wait_for() {
  local limit=$1; shift
  for _ in $(seq $((limit * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  return 1
}

[ "$(id -u)" = 0 ] || skip "the Slurm daemons need root here (run as root)"
for tool in munged slurmctld slurmd sbatch squeue; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install_deps.sh installs it)"
done

mkdir -p "$work"/{munge,state,spool,log,out}
chmod 700 "$work/munge"
dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$work/munge/munge.key"
socket="$work/munge/munge.socket"
munged --key-file="$work/munge/munge.key" --socket="$socket" --pid-file="$work/munge/munged.pid" \
  --log-file="$work/log/munged.log" --seed-file="$work/munge/seed" -f 2>"$work/log/munged.err" ||
  skip "munged does not start: $(cat "$work/log/munged.err")"
wait_for 10 test -s "$work/munge/munged.pid" || skip "munged wrote no pid file"
pids+=("$(cat "$work/munge/munged.pid")")

host=$(hostname -s)
cpus=$(nproc)
port=$((20000 + RANDOM % 20000))
cat >"$work/slurm.conf" <<CONF
ClusterName=tensorwire-test
SlurmctldHost=$host
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
export SLURM_CONF="$work/slurm.conf"

slurmctld -i -f "$SLURM_CONF" 2>"$work/log/slurmctld.err" || skip "slurmctld does not start: $(cat "$work/log/slurmctld.err")"
wait_for 15 test -s "$work/slurmctld.pid" || skip "slurmctld wrote no pid file ($(tail -3 "$work/log/slurmctld.log" 2>/dev/null))"
pids+=("$(cat "$work/slurmctld.pid")")
slurmd -f "$SLURM_CONF" 2>"$work/log/slurmd.err" || skip "slurmd does not start: $(cat "$work/log/slurmd.err") $(tail -5 "$work/log/slurmd.log" 2>/dev/null)"
wait_for 15 test -s "$work/slurmd.pid" || skip "slurmd wrote no pid file ($(tail -3 "$work/log/slurmd.log" 2>/dev/null))"
pids+=("$(cat "$work/slurmd.pid")")
wait_for 30 sh -c "sinfo -h -o %T | grep -qE '^(idle|mixed|allocated)'" ||
  skip "the Slurm node does not come up ($(sinfo -h 2>&1 | head -2))"

# The array job: each task runs its shard, reading it from Slurm.
cat >"$work/shard.sbatch" <<JOB
#!/bin/sh
#SBATCH --output=$work/out/%a.log
exec "$tensorwire" check "$scenario" --strategy dfs --max-schedules 1000000 --jobs 1 \\
  --shard "\$SLURM_ARRAY_TASK_ID/\$SLURM_ARRAY_TASK_COUNT" --out "$work/out/check"
JOB
timeout 300 sbatch --wait --array=0-$((tasks - 1)) --time=5 "$work/shard.sbatch" >"$work/log/sbatch.out" 2>&1 ||
  fail "the array job did not succeed: $(cat "$work/log/sbatch.out")"

shards=("$work"/out/check.shard-*-of-$tasks.json)
[ "${#shards[@]}" = "$tasks" ] || fail "expected $tasks shard result files, found ${#shards[@]}"
timeout 60 "$tensorwire" check-merge "${shards[@]}" >"$work/merged.txt" || fail "check-merge failed: $(cat "$work/merged.txt")"
timeout 300 "$tensorwire" check "$scenario" --strategy dfs --max-schedules 1000000 \
  --result "$work/single.json" >"$work/single.txt" || fail "the one-process search failed"

# The same verdict, every order explored, and the same distinct states.
for line in outcome "distinct states"; do
  merged=$(grep "^$line" "$work/merged.txt" | sed 's/(.*//')
  single=$(grep "^$line" "$work/single.txt" | sed 's/(.*//')
  [ -n "$merged" ] && [ "$merged" = "$single" ] || fail "$line: merged '$merged', one process '$single'"
done
grep -q "every order explored" "$work/merged.txt" || fail "the merged shards did not explore every order"
cat "$work/merged.txt"
echo "PASS: $tasks Slurm array tasks merged give the one-process verdict and states"
