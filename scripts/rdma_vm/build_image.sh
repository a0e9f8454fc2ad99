#!/usr/bin/env bash
# Prepares the throwaway VM that scripts/with_rdma.sh boots to get a real soft-RoCE (rdma_rxe)
# device on a machine whose own kernel has no RDMA support: Debian's stock kernel plus a small
# busybox initramfs holding the RDMA, 9p and virtio modules and scripts/rdma_vm/init.
#
# Idempotent: when the image in the cache is current it prints the image directory and exits
# at once, without asking any package server. Otherwise it installs the missing Debian
# packages, downloads the kernel package (apt-get download, never installed on the host),
# builds vmlinuz + initrd.img into the cache and prints the image directory.
#
#   scripts/rdma_vm/build_image.sh            # build if needed; stdout: the image directory
#   scripts/rdma_vm/build_image.sh --rebuild  # rebuild (and pick up a newer Debian kernel)
#   scripts/rdma_vm/build_image.sh --check    # 0 and the directory if ready, else 1; builds nothing
#
# Cache: ${TENSORWIRE_VM_CACHE:-$HOME/.cache/tensorwire/rdma-vm} (outside the repository).
# Exit codes: 0 image ready; 77 it cannot be built here (no network, no apt, no root/sudo),
# the reason on stderr; 1 anything else (a bug; the failing step is named on stderr).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${TENSORWIRE_VM_CACHE:-${HOME:-/tmp}/.cache/tensorwire/rdma-vm}"
image="$cache/image"

say() { echo "rdma_vm: $*" >&2; }
# Environment problems (no network, no privileges) are "cannot build here" = 77, so callers can
# report a skip rather than a failure.
cannot() { say "cannot build the VM image: $*"; exit 77; }
die() { say "FAILED: $*"; exit 1; }

rebuild=0
check_only=0
case "${1:-}" in
  --rebuild) rebuild=1 ;;
  --check) check_only=1 ;;  # exit 0 (printing the directory) only if ready; never builds
  "") ;;
  *) die "unknown argument '$1' (usage: build_image.sh [--rebuild | --check])" ;;
esac

# Host packages: the emulator, the initramfs tools, and the RDMA userland that runs inside the
# guest (the guest's root file system is the host's, shared read-only over 9p).
packages=(
  qemu-system-x86 busybox-static kmod cpio gzip
  rdma-core ibverbs-providers ibverbs-utils perftest iproute2
  libibverbs-dev librdmacm-dev
)

# Modules the guest loads, in this order after their dependencies (resolved with modprobe
# --show-depends below). crc32_generic: rdma_rxe asks the crypto API for "crc32" and fails
# with ENOENT without it. rdma_ucm: /dev/infiniband/rdma_cm for librdmacm. virtio_rng: so
# getrandom() does not stall early in an emulated guest.
modules=(crc32_generic rdma_rxe ib_uverbs rdma_ucm 9p 9pnet_virtio virtio_pci virtio_rng dummy)

# What the image is built from; a change to any of it makes the cached image stale. The kernel
# version is deliberately not part of it: a cached image keeps its kernel until --rebuild, so
# the fast path needs no apt metadata.
stamp_want="format=1 $(cat "$here/init" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"

image_current() {
  [ -s "$image/vmlinuz" ] && [ -s "$image/initrd.img" ] && [ -f "$image/stamp" ] &&
    [ "$(head -n1 "$image/stamp")" = "$stamp_want" ]
}

# One dpkg-query for all (this runs on every with_rdma.sh call); unknown packages print nothing.
missing_packages() {
  local installed p
  installed="$(dpkg-query -W -f='${Package} ${Status}\n' "${packages[@]}" 2>/dev/null |
    awk '$2 == "install" && $3 == "ok" && $4 == "installed" {print $1}')" || true
  for p in "${packages[@]}"; do
    grep -qx "$p" <<<"$installed" || echo "$p"
  done
}

if [ "$rebuild" -eq 0 ] && image_current && [ -z "$(missing_packages)" ]; then
  echo "$image"
  exit 0
fi
[ "$check_only" -eq 0 ] || exit 1

command -v dpkg-query >/dev/null && command -v apt-get >/dev/null ||
  cannot "not a Debian/Ubuntu host (dpkg-query/apt-get not found)"

if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || cannot "not root and no sudo (needed for apt-get)"
  SUDO=sudo
else
  SUDO=
fi
export DEBIAN_FRONTEND=noninteractive
# Another apt run (e.g. scripts/install_deps.sh in a parallel job) may hold the dpkg lock:
# wait for it instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=600 -qq)

mapfile -t missing < <(missing_packages)
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing: ${missing[*]}"
  $SUDO apt-get "${apt_opts[@]}" update >&2 || cannot "apt-get update failed (no network?)"
  $SUDO apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >&2 ||
    cannot "apt-get install ${missing[*]} failed"
fi

[ -x /bin/busybox ] || die "/bin/busybox missing after installing busybox-static"

mkdir -p "$cache" || cannot "cannot create the cache directory $cache"
# Two callers building at once (parallel test jobs) must not interleave: one builds, the other
# waits and then finds the image current.
exec 9>"$cache/.lock"
flock 9
if [ "$rebuild" -eq 0 ] && image_current; then
  echo "$image"
  exit 0
fi

work="$(mktemp -d "$cache/build.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# The kernel: whatever linux-image-amd64 (Debian's default flavour) currently depends on.
kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\)$/\1/p' | head -n1
}
kpkg="$(kernel_package)" || true
if [ -z "$kpkg" ]; then
  # No package lists yet (a fresh container): fetch them once and retry.
  $SUDO apt-get "${apt_opts[@]}" update >&2 || cannot "apt-get update failed (no network?)"
  kpkg="$(kernel_package)" || true
fi
[ -n "$kpkg" ] || cannot "apt-cache cannot resolve linux-image-amd64 to a kernel package"
kver="${kpkg#linux-image-}"
say "downloading $kpkg (kernel $kver)"
# apt-get download writes into the current directory; as root it warns that _apt cannot write
# there (harmless, filtered). It needs no root itself.
(cd "$work" && apt-get -qq download "$kpkg" 2>&1 | grep -v 'unsandboxed' >&2) || true
deb="$(find "$work" -maxdepth 1 -name 'linux-image-*.deb' | head -n1)"
[ -n "$deb" ] || cannot "apt-get download $kpkg failed (no network?)"

say "unpacking the kernel"
dpkg -x "$deb" "$work/k" || die "dpkg -x $deb"
rm -f "$deb"
[ -s "$work/k/boot/vmlinuz-$kver" ] || die "no /boot/vmlinuz-$kver in $kpkg"
[ -d "$work/k/lib/modules/$kver" ] || die "no /lib/modules/$kver in $kpkg"
depmod -b "$work/k" "$kver" || die "depmod -b $work/k $kver"

# The initramfs: static busybox, the modules (uncompressed, so busybox insmod can load them),
# an ordered load list, and the init script.
rd="$work/rd"
mkdir -p "$rd/bin" "$rd/etc" "$rd/lib/modules" "$rd/proc" "$rd/sys" "$rd/dev" "$rd/root" \
  "$rd/xchg" "$rd/sbin" "$rd/usr/bin" "$rd/usr/sbin"
cp /bin/busybox "$rd/bin/busybox"
install -m 0755 "$here/init" "$rd/init"

: >"$work/order"
for m in "${modules[@]}"; do
  out="$(modprobe -d "$work/k" -S "$kver" --show-depends "$m" 2>&1)" ||
    die "modprobe --show-depends $m (kernel $kver): $out"
  printf '%s\n' "$out" >>"$work/order"
done
# Lines are "insmod PATH [PARAMS]" or "builtin NAME"; keep the first occurrence of each module.
: >"$rd/etc/modules.list"
declare -A seen=()
while read -r verb path params; do
  [ "$verb" = insmod ] || continue
  [ -z "${seen[$path]:-}" ] || continue
  seen[$path]=1
  name="$(basename "$path")"
  case "$name" in
    *.ko) cp "$path" "$rd/lib/modules/$name" ;;
    *.ko.xz) xz -dc "$path" >"$rd/lib/modules/${name%.xz}"; name="${name%.xz}" ;;
    *.ko.zst) zstd -qdc "$path" >"$rd/lib/modules/${name%.zst}"; name="${name%.zst}" ;;
    *.ko.gz) gzip -dc "$path" >"$rd/lib/modules/${name%.gz}"; name="${name%.gz}" ;;
    *) die "unexpected module file $path" ;;
  esac
  echo "$name${params:+ $params}" >>"$rd/etc/modules.list"
done <"$work/order"
echo "$kver" >"$rd/etc/kernel-version"

(cd "$rd" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$work/initrd.img" ||
  die "cpio/gzip of the initramfs"

# Publish atomically: a half-built image must never look current.
mkdir -p "$work/image"
mv "$work/initrd.img" "$work/image/initrd.img"
cp "$work/k/boot/vmlinuz-$kver" "$work/image/vmlinuz"

# The uncompressed kernel (ELF vmlinux) boots through PVH (CONFIG_PVH): QEMU jumps straight
# into it, skipping the firmware's real-mode setup and the in-guest decompression, which
# under emulation saves about 3 s per boot. Optional: without it with_rdma.sh boots vmlinuz.
if grep -q '^CONFIG_PVH=y' "$work/k/boot/config-$kver"; then
  for magic in '\xfd7zXZ\x00:xz -dc --single-stream' '\x28\xb5\x2f\xfd:zstd -qdc'; do
    off="$(LC_ALL=C grep -obUaP "${magic%%:*}" "$work/image/vmlinuz" | head -n1 | cut -d: -f1)" || true
    [ -n "$off" ] || continue
    # The payload is followed by other data: the decompressor reports trailing garbage.
    tail -c +"$((off + 1))" "$work/image/vmlinuz" | ${magic#*:} >"$work/vmlinux" 2>/dev/null || true
    if [ "$(head -c 4 "$work/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ]; then
      mv "$work/vmlinux" "$work/image/vmlinux"
      break
    fi
  done
  [ -s "$work/image/vmlinux" ] || say "note: could not extract vmlinux from vmlinuz; booting the slower bzImage"
fi
cp "$work/k/boot/config-$kver" "$work/image/config"
cp "$rd/etc/modules.list" "$work/image/modules.list"
printf '%s\nkernel=%s package=%s built=%s\n' "$stamp_want" "$kver" "$kpkg" \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ)" >"$work/image/stamp"
rm -rf "$cache/image.old"
[ ! -e "$image" ] || mv "$image" "$cache/image.old"
mv "$work/image" "$image"
rm -rf "$cache/image.old"
say "image ready in $image (kernel $kver, $(du -sh "$image" | cut -f1))"
echo "$image"
