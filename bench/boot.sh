#!/usr/bin/env bash
# Boot-to-command latency: `airlock run-image --rootfs <test rootfs> -- true`
# against a bare `qemu-system-x86_64 -M microvm` boot of the same kernel and
# initramfs to init (airlock.probe=1: airlock-init powers off as soon as it
# runs), measured in the same run with hyperfine; reported as a ratio of
# medians (goal <= 1.15). Then the host RSS of QEMU + virtiofsd for an idle
# 512 MiB guest with a workspace share.
#   bench/boot.sh [RUNS]    (default 7; a built tree: scripts/build)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
runs=${1:-7}
airlock=$root/build/airlock
work=$(mktemp -d /tmp/airlock-bench-XXXXXX)
trap 'rm -rf "$work"' EXIT
bash "$root/tests/vm/make-test-rootfs.sh" "$work/rootfs" >/dev/null
"$airlock" run-image -q --rootfs "$work/rootfs" -- true 2>/dev/null   # warm the asset and image caches

kernel=$(ls -d "${AIRLOCK_CACHE_DIR:-$HOME/.cache/airlock}"/assets/kernel-*/vmlinux | head -1)
initramfs=$(ls -t "${AIRLOCK_CACHE_DIR:-$HOME/.cache/airlock}"/assets/initramfs-*/initramfs.cpio | head -1)
tsc=$(awk -F: '/^cpu MHz/ {printf "%d", $2*1000; exit}' /proc/cpuinfo)
accel="-accel tcg,tb-size=256,thread=single -cpu max"   # as airlock runs it
# Without -q: the TCG fallback is a notice, which -q drops.
[ "$("$airlock" run-image --rootfs "$work/rootfs" -- true 2>&1 | grep -c TCG)" -eq 0 ] && accel="-accel kvm -cpu host"
bare="qemu-system-x86_64 -M microvm,pit=on,pic=on,rtc=on,acpi=on $accel -m 512M -smp 1 -nodefaults \
-no-user-config -nographic -no-reboot -global virtio-mmio.force-legacy=false -serial null -kernel $kernel \
-initrd $initramfs -append 'console=ttyS0 quiet panic=-1 tsc_early_khz=$tsc airlock.probe=1'"

hyperfine --runs "$runs" --warmup 1 --export-json "$work/boot.json" \
  -n bare-qemu-to-init "$bare" \
  -n airlock-run-image "$airlock run-image -q --rootfs $work/rootfs -- true" >&2
python3 - "$work/boot.json" <<'PY'
import json, sys
r = {x["command"]: x for x in json.load(open(sys.argv[1]))["results"]}
b, a = r["bare-qemu-to-init"], r["airlock-run-image"]
print(f"bare QEMU boot to init : min {b['min']:.3f} s  median {b['median']:.3f} s")
print(f"airlock run-image true : min {a['min']:.3f} s  median {a['median']:.3f} s")
print(f"ratio (medians)        : {a['median'] / b['median']:.2f}  (goal <= 1.15)")
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
