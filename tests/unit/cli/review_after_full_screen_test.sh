#!/usr/bin/env bash
# The review after a full-screen program, in a real terminal (a tmux pane):
#
#   tests/unit/cli/review_after_full_screen_test.sh AIRLOCK_BINARY
#
# A program enters and leaves the alternate screen (as an agent's TUI does),
# then five lines are printed (airlock's own lines after the agent: the
# blocked-egress summary, "collecting the guest's changes"), then the review
# resets the terminal and draws its table. Every one of the five lines must
# still be on the screen: leaving the alternate screen restores the cursor
# saved on entering it, and a bare "leave" in the reset drew the table over them.
set -euo pipefail

AIRLOCK=$1
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed (scripts/setup installs it)"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-fullscreen.XXXXXX")
SOCK=$WORK/tmux.sock
cleanup() {
  tmux -S "$SOCK" kill-server 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
screen() { tmux -S "$SOCK" capture-pane -p -J -S - -t t; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- screen ---" >&2
  screen >&2 || true
  exit 1
}

mkdir -p "$WORK/ws" "$WORK/layer" "$WORK/state"
echo original > "$WORK/ws/file.txt"
echo changed > "$WORK/layer/file.txt"
tar -C "$WORK/layer" -cf "$WORK/changes.tar" file.txt
cat > "$WORK/run.sh" <<SCRIPT
printf '\033[?1049h'; printf 'full screen program\n'; sleep 0.2; printf '\033[?1049l'
for i in 1 2 3 4 5; do echo "line-before-review-\$i"; done
cd '$WORK/ws' && XDG_STATE_HOME='$WORK/state' PAGER=cat '$AIRLOCK' review -c '$WORK/changes.tar' --review=interactive
echo "REVIEW-EXIT=\$?"
sleep 3600
SCRIPT
tmux -S "$SOCK" new-session -d -s t -x 160 -y 40 "bash $WORK/run.sh"
for _ in $(seq 1 60); do
  screen | grep -qF "accept?" && break
  sleep 0.5
done
screen | grep -qF "accept?" || fail "no review prompt"
for i in 1 2 3 4 5; do
  screen | grep -qx "line-before-review-$i" || fail "line $i before the review was drawn over"
done
tmux -S "$SOCK" send-keys -t t a Enter
for _ in $(seq 1 40); do
  screen | grep -qF "REVIEW-EXIT=" && break
  sleep 0.5
done
screen | grep -qF "REVIEW-EXIT=0" || fail "the review did not exit 0"
[ "$(cat "$WORK/ws/file.txt")" = changed ] || fail "the accepted change did not land"
echo ok
