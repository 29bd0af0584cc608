#!/usr/bin/env bash
# Benchmark for the review gate (issue 3):
#   1. `airlock snapshot` of a generated tree vs `cp -a --reflink=auto` of the
#      same tree (goal: ratio <= 1.0), on the filesystem of $BENCH_DIR and,
#      when run as root with mkfs.xfs available, on a loop-mounted XFS image
#      with reflink (the FICLONE path);
#      and the workspace image a session then writes (mkfs.erofs, the flags
#      of vm/workspace_image.cc) against the same cp -a;
#   2. `airlock review` (diff + flush) of 10 changed files in that tree vs
#      `git status` on it (goal: ratio <= 0.5).
# Usage: bench/snapshot.sh   (env: AIRLOCK=path/to/airlock FILES=100000 RUNS=5 BENCH_DIR=/var/tmp)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
AIRLOCK=${AIRLOCK:-$here/../build/airlock}
FILES=${FILES:-100000}
RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/var/tmp}

for tool in hyperfine git python3 "$AIRLOCK"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool not found (run scripts/setup, build airlock or set AIRLOCK=)" >&2; exit 65; }
done

work=$(mktemp -d "$BENCH_DIR/airlock-bench.XXXXXX")
mnt=""
cleanup() {
  if [ -n "$mnt" ]; then umount "$mnt" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT
export XDG_STATE_HOME="$work/state"

# A source-like tree: FILES files of 200 B - 8 KiB in directories of 100.
generate() {
  python3 - "$1" "$FILES" <<'PY'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(42)
line = b"int function_%d(int x) { return x * %d + 1; }  /* generated */\n"
for i in range(n):
    d = os.path.join(root, "pkg%03d" % (i // 10000), "mod%03d" % ((i // 100) % 100))
    if i % 100 == 0:
        os.makedirs(d, exist_ok=True)
    k = rnd.randint(3, 120)
    with open(os.path.join(d, "file%05d.c" % i), "wb") as f:
        f.write(b"".join(line % (j, i) for j in range(k)))
PY
}

mean() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["results"][int(sys.argv[2])]["mean"])' "$1" "$2"; }
ratio() { python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) / float(sys.argv[2])))' "$1" "$2"; }

bench_snapshot() {  # $1 = tree, $2 = label
  local tree=$1 label=$2 out="$work/snap-$2.json"
  hyperfine --style basic --warmup 1 --runs "$RUNS" --export-json "$out" \
    --prepare "rm -rf '$work/s-$label' '$work/cp-$label'" \
    -n "airlock snapshot ($label)" "'$AIRLOCK' snapshot -w '$tree' -s '$work/s-$label'" \
    -n "cp -a --reflink=auto ($label)" "cp -a --reflink=auto '$tree' '$work/cp-$label'" \
    -n "workspace image ($label)" "mkfs.erofs --quiet --preserve-mtime -x -1 --chunksize=4096 --force-uid=1000 \
--force-gid=1000 '$work/i-$label.erofs' '$tree' && rm '$work/i-$label.erofs'" >&2
  rm -rf "$work/s-$label" "$work/cp-$label"
  local a c i
  a=$(mean "$out" 0)
  c=$(mean "$out" 1)
  i=$(mean "$out" 2)
  echo "snapshot/$label: airlock ${a}s, cp -a ${c}s, ratio $(ratio "$a" "$c") (goal <= 1.0)"
  # What a session adds before boot (vm/workspace_image.h), with the same flags.
  echo "snapshot/$label: workspace image (mkfs.erofs) ${i}s, ratio to cp -a $(ratio "$i" "$c")"
}

echo "bench: generating $FILES files in $work/tree" >&2
generate "$work/tree"
results=()
results+=("$(bench_snapshot "$work/tree" "$(stat -f -c %T "$work" | tr -c "a-zA-Z0-9\n" -)")")

if [ "$(id -u)" -eq 0 ] && command -v mkfs.xfs >/dev/null; then
  echo "bench: XFS loop image with reflink" >&2
  truncate -s 6G "$work/xfs.img"
  mkfs.xfs -q -m reflink=1 "$work/xfs.img"
  mnt="$work/xfs"
  mkdir -p "$mnt"
  if mount -o loop "$work/xfs.img" "$mnt"; then
    generate "$mnt/tree"
    results+=("$(bench_snapshot "$mnt/tree" xfs-reflink)")
    umount "$mnt"
  else
    echo "bench: cannot loop-mount XFS here; skipping the reflink case" >&2
  fi
  mnt=""
  rm -f "$work/xfs.img"
else
  echo "bench: not root or no mkfs.xfs: skipping the XFS reflink case" >&2
fi

# Diff + flush of 10 changed files vs git status.
tree="$work/tree"
git -C "$tree" init -q && git -C "$tree" add -A && git -C "$tree" -c user.name=b -c user.email=b@b commit -qm base
"$AIRLOCK" snapshot -w "$tree" -s "$work/base" >/dev/null
mkdir -p "$work/layer" "$work/orig"
changed=$(cd "$tree" && find pkg* -name '*.c' | sort | awk 'NR % 9973 == 1' | head -10)
for f in $changed; do
  mkdir -p "$work/layer/$(dirname "$f")" "$work/orig/$(dirname "$f")"
  cp -p "$tree/$f" "$work/orig/$f"
  { cat "$tree/$f"; echo "/* changed by the agent */"; } >"$work/layer/$f"
done
tar -C "$work/layer" -cf "$work/layer.tar" .
restore="cp -p -r '$work/orig/.' '$tree/' && rm -rf '$work/base'/review-* '$work/base/pending'"
hyperfine --style basic --warmup 1 --runs "$RUNS" --export-json "$work/review.json" --prepare "$restore" \
  -n "airlock review (10 files)" "'$AIRLOCK' review -w '$tree' -s '$work/base' -c '$work/layer.tar' --review=all --json >/dev/null" \
  -n "git status" "git -C '$tree' status --porcelain >/dev/null" >&2
a=$(mean "$work/review.json" 0)
g=$(mean "$work/review.json" 1)
results+=("review: airlock diff+flush ${a}s, git status ${g}s, ratio $(ratio "$a" "$g") (goal <= 0.5)")

echo
echo "airlock benchmark, $FILES files, $(nproc) CPUs, $RUNS runs each:"
printf '  %s\n' "${results[@]}"
