#!/usr/bin/env bash
# Runs a command where a real RDMA device is available, and exits with its exit status.
#
#   scripts/with_rdma.sh [OPTIONS] [--] CMD [ARGS...]
#   scripts/with_rdma.sh --check
#
# If this host has an RDMA device (/sys/class/infiniband is not empty) CMD runs here, with
# TENSORWIRE_RDMA_DEVICE set to the first device and TENSORWIRE_RDMA_ADDR to an IPv4 address
# of its netdev (when one is found). Otherwise CMD runs inside a throwaway QEMU VM booted with
# Debian's stock kernel (scripts/rdma_vm/, built on first use), which has a soft-RoCE device:
# TENSORWIRE_RDMA_DEVICE=rxe0, TENSORWIRE_RDMA_ADDR=10.77.0.1, TENSORWIRE_RDMA_VM=1.
#
# In the VM the command sees this host's whole file system at the same paths, READ-ONLY,
# except the writable directories: the current directory (so `meson test -C build` from the
# project root can write build/meson-logs), plus every --rw DIR and every directory in
# TENSORWIRE_VM_RW (colon-separated). /tmp and /dev/shm in the VM are fresh tmpfs (nothing
# written there comes back). It runs as root, in the current directory, with stdin from
# /dev/null; its stdout and stderr come to this script's stdout and stderr as it runs.
#
# Options:
#   --check     say whether a device is available (host device, or VM image built) and exit
#               0 (yes) or 1 (no); builds and boots nothing
#   --rw DIR    also make DIR writable in the VM (repeatable)
#   --vm        use the VM even if the host has an RDMA device
#   -h, --help  this text
#
# Environment (all optional):
#   TENSORWIRE_VM_TIMEOUT  seconds for the whole VM run, boot included (default 1200)
#   TENSORWIRE_VM_MEM      guest memory (default 2G)
#   TENSORWIRE_VM_CPUS     guest CPUs (default: this host's CPU count)
#   TENSORWIRE_VM_RW       extra writable directories, colon-separated
#   TENSORWIRE_VM_PASSENV  extra variable names to pass into the VM, space-separated
#   TENSORWIRE_VM_ACCEL    tcg (default: software emulation, works anywhere) or kvm (much faster
#                          where KVM really works; not auto-detected, see scripts/rdma_vm/README.md)
#   TENSORWIRE_VM_VERBOSE  1: print the guest's console log and timings on stderr afterwards
#   TENSORWIRE_VM_CACHE    image cache (default $HOME/.cache/tensorwire/rdma-vm)
#
# Passed into the VM: PATH, HOME, USER, LOGNAME, LANG, LC_*, TERM, TZ, CI, *SAN_OPTIONS,
# MESON_TESTTHREADS, GTEST_*, TENSORWIRE_* and the names in TENSORWIRE_VM_PASSENV.
#
# Exit status: CMD's. Besides: 77 no RDMA device here and the VM cannot be built (reason on
# stderr; meson reports 77 as SKIP); 124 the VM run timed out; 125 the VM failed before CMD
# finished (reason and the console tail on stderr); 130 interrupted.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
me="with_rdma.sh"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//'; }

check=0
force_vm=0
rw_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --check) check=1; shift ;;
    --vm) force_vm=1; shift ;;
    --rw)
      [ $# -ge 2 ] || { echo "$me: --rw needs a directory" >&2; exit 2; }
      rw_args+=("$2"); shift 2 ;;
    --rw=*) rw_args+=("${1#--rw=}"); shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    -*) echo "$me: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ "$check" -eq 0 ] && [ $# -eq 0 ]; then
  echo "$me: no command given (usage: $me [--rw DIR] [--vm] CMD ARGS... | --check)" >&2
  exit 2
fi

# ---- a device on this host: run directly -------------------------------------------------

host_device() {
  local d
  for d in /sys/class/infiniband/*; do
    [ -e "$d" ] && { basename "$d"; return 0; }
  done
  return 1
}

# An IPv4 address on the device's netdev: the RoCE GID table names it; an IB device's IPoIB
# interface sits under device/net.
host_device_addr() {
  local dev="$1" nd addr
  for nd in $(cat /sys/class/infiniband/"$dev"/ports/*/gid_attrs/ndevs/* 2>/dev/null || true) \
    $(ls /sys/class/infiniband/"$dev"/device/net 2>/dev/null || true); do
    addr="$(ip -4 -o addr show dev "$nd" 2>/dev/null | awk '{print $4}' | cut -d/ -f1 | head -n1)"
    [ -z "$addr" ] || { echo "$addr"; return 0; }
  done
  return 0
}

if [ "$force_vm" -eq 0 ] && dev="$(host_device)"; then
  addr="$(host_device_addr "$dev")"
  if [ "$check" -eq 1 ]; then
    echo "rdma: host device $dev${addr:+ ($addr)}"
    exit 0
  fi
  export TENSORWIRE_RDMA_DEVICE="$dev"
  if [ -n "$addr" ]; then export TENSORWIRE_RDMA_ADDR="$addr"; fi
  exec "$@"
fi

# ---- no device: the VM --------------------------------------------------------------------

if [ "$check" -eq 1 ]; then
  if img="$("$here/rdma_vm/build_image.sh" --check 2>/dev/null)"; then
    echo "rdma: no host device; VM image ready ($img), commands run on rxe0 in the VM"
    exit 0
  fi
  echo "rdma: no host device and no VM image (run scripts/rdma_vm/build_image.sh)"
  exit 1
fi

img="$("$here/rdma_vm/build_image.sh")" || {
  echo "$me: skipped: no RDMA device on this host and the RDMA VM could not be built (see above)" >&2
  exit 77
}
command -v qemu-system-x86_64 >/dev/null || {
  echo "$me: skipped: qemu-system-x86_64 not found" >&2
  exit 77
}

timeout_s="${TENSORWIRE_VM_TIMEOUT:-1200}"
mem="${TENSORWIRE_VM_MEM:-2G}"
cpus="${TENSORWIRE_VM_CPUS:-$(nproc)}"
case "$timeout_s" in '' | *[!0-9]*) echo "$me: TENSORWIRE_VM_TIMEOUT must be seconds" >&2; exit 2 ;; esac
# Emulation (TCG) unless asked for KVM: a /dev/kvm that opens is no promise that KVM works
# (on a Firecracker-style host it exists, and a guest on it hangs without a word).
accel="${TENSORWIRE_VM_ACCEL:-tcg}"
case "$accel" in
  tcg) cpu=max ;;  # every instruction TCG can emulate, AVX2 included (host binaries may use them)
  kvm*) cpu=host ;;
  *) echo "$me: TENSORWIRE_VM_ACCEL must be tcg or kvm" >&2; exit 2 ;;
esac

# The writable directories: physical paths (the guest mounts them at the same paths), no
# duplicates, and none inside another (it would be the same files twice).
rw_in=("${rw_args[@]}")
# The current directory, unless it is / (a writable root would defeat the read-only share).
if [ "$(pwd -P)" != / ]; then rw_in+=("$PWD"); fi
if [ -n "${TENSORWIRE_VM_RW:-}" ]; then
  IFS=: read -r -a extra <<<"$TENSORWIRE_VM_RW"
  rw_in+=("${extra[@]}")
fi
rw_abs=()
for d in "${rw_in[@]}"; do
  [ -n "$d" ] || continue
  p="$(cd "$d" 2>/dev/null && pwd -P)" || { echo "$me: writable directory '$d' does not exist" >&2; exit 2; }
  case "$p" in
    /) echo "$me: refusing to make / writable in the VM; name a project directory" >&2; exit 2 ;;
    *$'\n'*) echo "$me: directory name with a newline: '$p'" >&2; exit 2 ;;
  esac
  rw_abs+=("$p")
done
mapfile -t rw_sorted < <(printf '%s\n' "${rw_abs[@]}" | LC_ALL=C sort -u)
rw_dirs=()
for p in "${rw_sorted[@]}"; do
  [ -n "$p" ] || continue  # printf of an empty list gives one empty line
  inside=0
  for q in "${rw_dirs[@]}"; do
    case "$p/" in "$q"/*) inside=1 ;; esac
  done
  [ "$inside" -eq 1 ] || rw_dirs+=("$p")
done

tmp="$(mktemp -d "${TMPDIR:-/tmp}/tensorwire-vm.XXXXXX")"
share="$tmp/x"  # the exchange share (/xchg in the guest): run.sh, rw.list, status
mkdir "$share"
qpid=""
cat_pids=()
cleanup() {
  [ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true
  local p
  for p in "${cat_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

# The command, with the environment it gets, as a bash script the guest runs in the chroot.
passenv=(PATH HOME USER LOGNAME LANG TERM TZ CI ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
  TSAN_OPTIONS MSAN_OPTIONS MESON_TESTTHREADS)
for n in $(compgen -e); do
  case "$n" in TENSORWIRE_* | LC_* | GTEST_*) passenv+=("$n") ;; esac
done
# shellcheck disable=SC2206
passenv+=(${TENSORWIRE_VM_PASSENV:-})
out_tty=0; [ -t 1 ] && out_tty=1
err_tty=0; [ -t 2 ] && err_tty=1
{
  echo "# written by scripts/with_rdma.sh; run by scripts/rdma_vm/init in the VM"
  for n in "${passenv[@]}"; do
    if [ -n "${!n+x}" ]; then printf 'export %s=%q\n' "$n" "${!n}"; fi
  done
  echo "export TENSORWIRE_RDMA_DEVICE=rxe0 TENSORWIRE_RDMA_ADDR=10.77.0.1 TENSORWIRE_RDMA_VM=1"
  # Memory registration pins pages; root in the guest, but say it anyway.
  echo "ulimit -l unlimited 2>/dev/null || true"
  printf 'cd -- %q || { echo "with_rdma.sh (in the VM): cannot cd to %q" >&2; exit 126; }\n' "$PWD" "$PWD"
  printf 'tw_cmd=('
  printf ' %q' "$@"
  printf ' )\n'
  # In the guest stdout and stderr are serial ttys. Where ours are not ttys (CI logs, meson's
  # pipes, a file), pass them through pipes there too, so that test runners see what they
  # would see here: no colours, no \r progress lines.
  printf 'tw_out_tty=%d tw_err_tty=%d\n' "$out_tty" "$err_tty"
  cat <<'EOF_RUN'
if [ "$tw_out_tty$tw_err_tty" = 11 ]; then
  exec "${tw_cmd[@]}"
fi
tw_pids=()
if [ "$tw_out_tty" = 0 ]; then
  mkfifo /tmp/.tensorwire/out
  cat /tmp/.tensorwire/out &
  tw_pids+=($!)
  exec 3>&1 >/tmp/.tensorwire/out
fi
if [ "$tw_err_tty" = 0 ]; then
  mkfifo /tmp/.tensorwire/err
  cat /tmp/.tensorwire/err >&2 &
  tw_pids+=($!)
  exec 4>&2 2>/tmp/.tensorwire/err
fi
tw_rc=0
"${tw_cmd[@]}" || tw_rc=$?
[ "$tw_out_tty" = 1 ] || exec >&3 3>&-
[ "$tw_err_tty" = 1 ] || exec 2>&4 4>&-
# Let the copies drain; a background process that still holds the pipe must not keep the VM up.
for _ in $(seq 50); do
  kill -0 "${tw_pids[@]}" 2>/dev/null || break
  sleep 0.1
done
exit "$tw_rc"
EOF_RUN
} >"$share/run.sh"

virtfs=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
  -virtfs "local,path=$share,mount_tag=twx,security_model=none")
: >"$share/rw.list"
i=0
for p in "${rw_dirs[@]}"; do
  # QEMU option values escape a comma by doubling it.
  virtfs+=(-virtfs "local,path=${p//,/,,},mount_tag=rw$i,security_model=none,multidevs=remap")
  printf 'rw%d %s\n' "$i" "$p" >>"$share/rw.list"
  i=$((i + 1))
done

# The guest's stdout/stderr serial ports write into FIFOs that cat copies to ours: works
# whatever our stdout/stderr are (tty, pipe, file, socket).
mkfifo "$tmp/out" "$tmp/err"
cat "$tmp/out" &
cat_pids+=($!)
cat "$tmp/err" >&2 &
cat_pids+=($!)

# mitigations=off, tsc=reliable, no_timer_check, nokaslr: a throwaway test guest needs none of
# the protections, and each saves boot or run time under emulation.
append="console=ttyS2 quiet loglevel=3 panic=-1 8250.nr_uarts=4 mitigations=off tsc=reliable no_timer_check nokaslr"
kernel="$img/vmlinuz"
if [ -s "$img/vmlinux" ]; then kernel="$img/vmlinux"; fi  # PVH boot, see build_image.sh
t0="$(date +%s.%N)"
# -nodefaults: no VGA, NIC, floppy or default serial; the three serial ports are ttyS0..2.
timeout -k 10 "$timeout_s" qemu-system-x86_64 \
  -name tensorwire-rdma -nodefaults -display none -no-reboot \
  -machine "accel=$accel" -cpu "$cpu" -m "$mem" -smp "$cpus" \
  -kernel "$kernel" -initrd "$img/initrd.img" -append "$append" \
  -chardev "file,id=out,path=$tmp/out" -serial chardev:out \
  -chardev "file,id=err,path=$tmp/err" -serial chardev:err \
  -chardev "file,id=con,path=$tmp/console.log" -serial chardev:con \
  "${virtfs[@]}" -device virtio-rng-pci \
  </dev/null >"$tmp/qemu.log" 2>&1 &
qpid=$!

interrupted=""
# timeout runs QEMU in its own process group, so a terminal ^C reaches only us: pass it on.
trap 'interrupted=1; kill -TERM "$qpid" 2>/dev/null || true' INT TERM HUP
qrc=0
wait "$qpid" || qrc=$?
while kill -0 "$qpid" 2>/dev/null; do
  qrc=0
  wait "$qpid" || qrc=$?
done
qpid=""
t1="$(date +%s.%N)"

# If QEMU died before opening a FIFO its cat still waits in open(): a read-write open
# completes that open without blocking us; closing it gives cat its EOF.
exec 3<>"$tmp/out" 3>&-
exec 3<>"$tmp/err" 3>&-
for p in "${cat_pids[@]}"; do wait "$p" 2>/dev/null || true; done
cat_pids=()

console_tail() {
  echo "$me: --- last lines of the VM console ---" >&2
  tail -n 30 "$tmp/console.log" >&2 2>/dev/null || true
  if [ -s "$tmp/qemu.log" ]; then
    echo "$me: --- qemu ---" >&2
    tail -n 20 "$tmp/qemu.log" >&2
  fi
}

if [ "${TENSORWIRE_VM_VERBOSE:-0}" = 1 ]; then
  {
    echo "$me: --- VM console ---"
    cat "$tmp/console.log" 2>/dev/null || true
    cat "$tmp/qemu.log" 2>/dev/null || true
    echo "$me: accel=$accel mem=$mem cpus=$cpus; guest booted in $(cat "$share/booted" 2>/dev/null || echo '?') s;" \
      "qemu ran $(awk "BEGIN{printf \"%.2f\", $t1-$t0}") s in all"
  } >&2
fi

if [ -n "$interrupted" ]; then
  echo "$me: interrupted; the VM was stopped" >&2
  exit 130
fi
if [ -f "$share/status" ]; then
  exit "$(cat "$share/status")"
fi
if [ "$qrc" -eq 124 ] || [ "$qrc" -eq 137 ]; then
  echo "$me: FAILED: the VM run timed out after ${timeout_s}s (TENSORWIRE_VM_TIMEOUT); the command was stopped" >&2
  console_tail
  exit 124
fi
if [ -f "$share/init_error" ]; then
  echo "$me: FAILED: the VM could not be set up: $(cat "$share/init_error")" >&2
else
  echo "$me: FAILED: the VM stopped (qemu exit $qrc) without reporting the command's exit status" >&2
fi
console_tail
exit 125
