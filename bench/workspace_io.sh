#!/usr/bin/env bash
# Workspace I/O in the guest (issues 14 and 19): inside one VM per workspace
# kind, read / create / append to FILES small files and write and read one
# 200 MiB file, plus `grep -r` over a copy of airlock's own sources, in
# /workspace and in guest tmpfs (the baseline, copied in the same VM), and
# report each workspace time as a ratio against tmpfs (goal <= 1.5).
# Workspace kinds:
#   snapshot  the default `run` path: the snapshot's erofs image on a
#             read-only virtio-blk disk, overlay upper on the scratch disk
#   share     a read-only virtio-fs share (run-image -w without --review;
#             the path `run` used for the snapshot lower before the erofs
#             image): reads only
# Times come from the guest's /proc/uptime (10 ms steps); medians of RUNS VMs.
#   bench/workspace_io.sh   (env: FILES=2000 RUNS=3 AIRLOCK=build/airlock; needs root for the share kind)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
AIRLOCK=${AIRLOCK:-$root/build/airlock}
FILES=${FILES:-2000}
RUNS=${RUNS:-3}
for tool in python3 "$AIRLOCK"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool not found (run scripts/setup, scripts/build or set AIRLOCK=)" >&2; exit 65; }
done
work=$(mktemp -d /var/tmp/airlock-bench-io.XXXXXX)
trap 'rm -rf "$work"' EXIT
export XDG_STATE_HOME="$work/state"
bash "$root/tests/vm/make-test-rootfs.sh" "$work/rootfs" >/dev/null

echo "bench: generating $FILES files and a copy of src/ in $work/tree" >&2
python3 - "$work/tree/small" "$FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(7)
for i in range(n):
    d = os.path.join(root, "d%03d" % (i // 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "f%05d.c" % i), "wb") as f:
        f.write(b"int f%d(void) { return %d; }\n" % (i, i) * rnd.randint(3, 60))
PY
cp -a "$root/src" "$work/tree/src"

# The guest script: one line "name seconds" per measurement, for $1 (the
# workspace) and for a tmpfs copy of the same tree.
cat >"$work/io.sh" <<'SH'
now() { read up _ </proc/uptime; echo "$up"; }
span() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }
measure() {  # $1 = label, $2 = directory holding small/ and src/
  d=$2
  t0=$(now); find "$d/small" -type f -exec cat {} + >/dev/null; t1=$(now)
  echo "$1 read $(span "$t0" "$t1")"
  t0=$(now); grep -r "namespace" "$d/src" >/dev/null; t1=$(now)
  echo "$1 grep-r $(span "$t0" "$t1")"
  [ "$MODE" = share ] && [ "$1" = workspace ] && return  # read-only: nothing to write
  mkdir "$d/new"; t0=$(now); i=0
  while [ $i -lt "$FILES" ]; do echo new >"$d/new/n$i"; i=$((i + 1)); done
  t1=$(now); echo "$1 create $(span "$t0" "$t1")"
  t0=$(now); find "$d/small" -type f | while read -r f; do echo more >>"$f"; done; t1=$(now)
  echo "$1 append $(span "$t0" "$t1")"
  t0=$(now); dd if=/dev/zero of="$d/big" bs=1M count=200 2>/dev/null; sync; t1=$(now)
  echo "$1 write-200MiB $(span "$t0" "$t1")"
  echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  t0=$(now); cat "$d/big" >/dev/null; t1=$(now)
  echo "$1 read-200MiB $(span "$t0" "$t1")"
  rm -f "$d/big"
}
cp -a /workspace/small /workspace/src /tmp/
measure tmpfs /tmp
measure workspace /workspace
SH

run_kind() {  # $1 = kind; prints "kind label op seconds" lines
  local kind=$1 extra=()
  [ "$kind" = snapshot ] && extra=(--review none)
  for _ in $(seq "$RUNS"); do
    # --review none keeps the changes pending: exit 70.
    local rc=0
    "$AIRLOCK" run-image -q --rootfs "$work/rootfs" --memory 1024 -w "$work/tree" "${extra[@]}" --user 0 \
      -e FILES="$FILES" -e MODE="$kind" -- sh -c "$(cat "$work/io.sh")" >"$work/out" 2>"$work/err" || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 70 ]; then
      echo "bench: the $kind run failed ($rc):" >&2
      cat "$work/err" >&2
      exit 1
    fi
    grep -E '^(tmpfs|workspace) [A-Za-z0-9-]+ [0-9.]+$' "$work/out" | sed "s/^/$kind /"
  done
}

{
  run_kind snapshot
  if [ "$(id -u)" -eq 0 ]; then run_kind share; else echo "bench: share kind skipped (virtiofsd needs root)" >&2; fi
} >"$work/results.txt"

python3 - "$work/results.txt" "$FILES" <<'PY'
import collections, statistics, sys
times = collections.defaultdict(list)
for line in open(sys.argv[1]):
    kind, label, op, sec = line.split()
    times[(kind, label, op)].append(float(sec))
ops = ["read", "create", "append", "write-200MiB", "read-200MiB", "grep-r"]
print(f"workspace I/O in the guest, {sys.argv[2]} small files, medians (s); ratio = workspace / tmpfs (goal <= 1.5)")
for kind in ("snapshot", "share"):
    if not any(k[0] == kind for k in times):
        continue
    for op in ops:
        if (kind, "workspace", op) not in times:
            continue
        w = statistics.median(times[(kind, "workspace", op)])
        t = statistics.median(times[(kind, "tmpfs", op)])
        ratio = f"{w / t:.2f}" if t > 0 else "n/a"
        print(f"{kind:9} {op:13} workspace {w:6.2f}  tmpfs {t:6.2f}  ratio {ratio}")
PY
