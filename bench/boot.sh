#!/usr/bin/env bash
# Boot latency (issue 19), measured side by side with hyperfine:
#   bare-own       `qemu-system-x86_64 -M microvm` booting airlock's own kernel
#                  (airlock system kernel build) and its initramfs to init
#                  (airlock.probe=1: airlock-init powers off as soon as it runs)
#   bare-debian    the same with Debian's cloud kernel, to init with its modules
#                  loaded (airlock.probe=modules), as airlock booted it before
#   airlock        `airlock run-image --rootfs <test rootfs> -- true` (own kernel)
# Ratios of medians: airlock / bare-own (goal <= 1.15: airlock's own overhead)
# and bare-own / bare-debian (goal <= 0.5). Then the host RSS of QEMU +
# virtiofsd for an idle 512 MiB guest with a workspace share.
#   bench/boot.sh [RUNS]    (default 7; a built tree: scripts/build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-7}
airlock=$root/build/airlock
cache=${AIRLOCK_CACHE_DIR:-$HOME/.cache/airlock}
work=$(mktemp -d /tmp/airlock-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
bash "$root/tests/vm/make-test-rootfs.sh" "$work/rootfs" >/dev/null
"$airlock" run-image -q --rootfs "$work/rootfs" -- true 2>/dev/null   # warm the asset and image caches
# The kernel this airlock boots (built now if it is not: several minutes).
own=$("$airlock" system kernel build -q)
own_initramfs=""  # the newest initramfs without modules: the own kernel's
for f in $(ls -t "$cache"/assets/initramfs-*/initramfs.cpio); do
  [ "$(cpio -it <"$f" 2>/dev/null | grep -c '\.ko$')" -eq 0 ] && { own_initramfs=$f; break; }
done

# Debian's kernel and its initramfs, built in a cache of their own (the kernel
# package is linked from the main cache's downloads when it is there).
mkdir -p "$work/debian-cache/downloads"
cp -al "$cache"/downloads/linux-image-*.deb "$work/debian-cache/downloads/" 2>/dev/null || true
AIRLOCK_CACHE_DIR=$work/debian-cache "$airlock" run-image -q --rootfs "$work/rootfs" -- true 2>/dev/null
debian=$(ls -d "$work"/debian-cache/assets/kernel-*/vmlinux | head -1)
debian_initramfs=$(ls -d "$work"/debian-cache/assets/initramfs-*/initramfs.cpio | head -1)

tsc=$(awk -F: '/^cpu MHz/ {printf "%d", $2*1000; exit}' /proc/cpuinfo)
accel="-accel tcg,tb-size=256,thread=single -cpu max"   # as airlock runs it
# Without -q: the TCG fallback is a notice, which -q drops.
[ "$("$airlock" run-image --rootfs "$work/rootfs" -- true 2>&1 | grep -c TCG)" -eq 0 ] && accel="-accel kvm -cpu host"
bare() {  # $1 kernel, $2 initramfs, $3 probe
  echo "qemu-system-x86_64 -M microvm,pit=on,pic=on,rtc=on,acpi=on $accel -m 512M -smp 1 -nodefaults \
-no-user-config -nographic -no-reboot -global virtio-mmio.force-legacy=false -serial null -kernel $1 \
-initrd $2 -append 'console=ttyS0 quiet panic=-1 tsc_early_khz=$tsc airlock.probe=$3'"
}

hyperfine --runs "$runs" --warmup 1 --export-json "$work/boot.json" \
  -n bare-own "$(bare "$own" "$own_initramfs" 1)" \
  -n bare-debian "$(bare "$debian" "$debian_initramfs" modules)" \
  -n airlock-run-image "$airlock run-image -q --rootfs $work/rootfs -- true" >&2
python3 - "$work/boot.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
o, d, a = r["bare-own"], r["bare-debian"], r["airlock-run-image"]
print(f"bare boot, own kernel, to init           : min {o['min']:.3f} s  median {o['median']:.3f} s")
print(f"bare boot, Debian kernel, init + modules : min {d['min']:.3f} s  median {d['median']:.3f} s")
print(f"airlock run-image true (own kernel)      : min {a['min']:.3f} s  median {a['median']:.3f} s")
print(f"own / Debian (medians)                   : {o['median'] / d['median']:.2f}  (goal <= 0.5)")
print(f"run-image / bare own (medians)           : {a['median'] / o['median']:.2f}  (goal <= 1.15)")
PY

# RSS of an idle 512 MiB guest with a virtio-fs workspace share.
before_q=$(pgrep -d' ' qemu-system-x86 || true)
"$airlock" run-image -q --rootfs "$work/rootfs" -w "$work" --memory 512 -- sleep 10 2>/dev/null &
pid=$!
sleep 7
rss_kib() { local s=0; for p in "$@"; do s=$((s + $(awk '/^VmRSS/ {print $2}' /proc/$p/status 2>/dev/null || echo 0))); done; echo $s; }
qemu=$(for p in $(pgrep qemu-system-x86); do [[ " $before_q " == *" $p "* ]] || echo $p; done)
fsd=$(pgrep -f "virtiofsd.*airlock-share" || true)  # its jail's path for the share
q=$(rss_kib $qemu)
v=$(rss_kib $fsd)
wait $pid || true
echo "idle 512 MiB guest RSS  : QEMU $((q / 1024)) MiB + virtiofsd $((v / 1024)) MiB"
