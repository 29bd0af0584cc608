#!/usr/bin/env bash
# scripts/demo in a real terminal (a tmux pane, so stdin and stdout are a pty):
#
#   tests/e2e/demo_pty_test.sh AIRLOCK_BINARY
#
# 1. The review is interactive on that terminal: the summary table and the
#    per-file prompt appear, keys typed into the pane answer it (A: accept the
#    rest), the accepted changes land (the demo lists the project at the end:
#    NEW.md there, old.txt gone) and the demo exits 0.
# 2. Ctrl-C at the review prompt ends the demo.
# 3. When whatever started the pane dies without cleaning up (SIGKILL: a
#    ctest timeout, a killed CI job), the tmux server goes with it and the
#    demo cleans up after the hangup: no pane, demo, VM or mock is left.
# After each: the sample project, the demo's session state and the mock model
# server are gone, and no QEMU is left running.
set -euo pipefail

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed (scripts/setup installs it)"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-demo-pty.XXXXXX")
SOCK=$WORK/tmux.sock
cleanup() {
  tmux -S "$SOCK" kill-server 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
fail() {
  echo "FAIL: $*" >&2
  echo "--- screen ---" >&2
  screen >&2 || true
  exit 1
}
screen() { tmux -S "$SOCK" capture-pane -p -J -S - -t demo; }
# wait_for TEXT SECONDS: until TEXT is on the screen (scrollback included).
wait_for() {
  local deadline=$((SECONDS + $2))
  while ((SECONDS < deadline)); do
    screen | grep -qF -- "$1" && return 0
    sleep 1
  done
  fail "waited $2 s for '$1'"
}
. "$SRC/tests/e2e/processes.sh"
# The QEMUs of the demo whose sample project (and state) is in $dir.
qemu_count() { qemu_of "$dir" | wc -l; }

# run_demo [OWNER_PID]: starts scripts/demo in a fresh 200x50 pane; the pane
# stays after the demo ends and shows its exit code. The tmux server is a
# daemon of its own: a watcher in it kills it (and so hangs up the demo)
# once OWNER_PID (default: this script) is gone, however it died.
# Each run gets its own tmux server and socket: a new session on the socket of
# a server still shutting down after kill-server fails ("server exited
# unexpectedly"; seen in CI).
RUNS=0
run_demo() {
  local owner=${1:-$$}
  tmux -S "$SOCK" kill-server 2>/dev/null || true
  RUNS=$((RUNS + 1))
  SOCK=$WORK/tmux-$RUNS.sock
  tmux -S "$SOCK" new-session -d -s demo -x 200 -y 50 \
    "env PAGER=cat AIRLOCK_DEMO_BINARY='$AIRLOCK' '$SRC/scripts/demo'; echo DEMO-EXIT=\$?; sleep 3600"
  tmux -S "$SOCK" set-option -t demo history-limit 20000 >/dev/null
  tmux -S "$SOCK" run-shell -b "while kill -0 $owner 2>/dev/null; do sleep 1; done; tmux -S '$SOCK' kill-server"
}

sample_dir() { screen | sed -n 's/^demo: sample project in \(.*\)\/project (.*/\1/p' | head -1; }

# -- 1: interactive review, accept all --------------------------------------
run_demo
wait_for "demo: sample project in" 30
dir=$(sample_dir)
[ -n "$dir" ] && [ -d "$dir/project" ] || fail "the sample project was not made"
# The first run on a machine builds the claude-code image (minutes).
wait_for "accept? [" 1500
screen | grep -q "NEW.md" || fail "the review does not list NEW.md"
screen | grep -q "old.txt" || fail "the review does not list old.txt"
tmux -S "$SOCK" send-keys -t demo A Enter
wait_for "DEMO-EXIT=" 300
screen | grep -q "DEMO-EXIT=0" || fail "the demo did not exit 0 after accepting everything"
listing=$(screen | sed -n '/your project now:/,/DEMO-EXIT=/p')
grep -q " NEW.md$" <<<"$listing" || fail "NEW.md did not land: $listing"
grep -q " old.txt$" <<<"$listing" && fail "old.txt was not deleted: $listing"
grep -q " .env$" <<<"$listing" || fail "the project's .env is gone: $listing"
screen | grep -q "demo: removed the sample project" || fail "the demo did not say it cleaned up"
[ ! -e "$dir" ] || fail "the sample project $dir is left behind"
[ "$(qemu_count)" = 0 ] || fail "a QEMU of the demo is still running"
echo "ok: interactive review in a pty, accepted changes landed, $dir removed"

# -- 2: Ctrl-C at the review prompt -----------------------------------------
run_demo
wait_for "demo: sample project in" 30
dir=$(sample_dir)
wait_for "accept? [" 900
tmux -S "$SOCK" send-keys -t demo C-c
wait_for "DEMO-EXIT=" 120
code=$(screen | sed -n 's/^DEMO-EXIT=//p' | tail -1)
[ "$code" != 0 ] || fail "Ctrl-C at the review prompt exited 0"
[ ! -e "$dir" ] || fail "after Ctrl-C the sample project $dir is left behind"
[ "$(qemu_count)" = 0 ] || fail "after Ctrl-C a QEMU of the demo is still running"
pgrep -f "mock_model_server.py.*$dir" >/dev/null && fail "after Ctrl-C the mock model server is still running"
echo "ok: Ctrl-C at the review prompt (exit $code), $dir removed"

# -- 3: the test's owner dies at the review prompt (SIGKILL, no cleanup) -----
sleep 3600 &
owner=$!
run_demo "$owner"
wait_for "demo: sample project in" 30
dir=$(sample_dir)
wait_for "accept? [" 900
mock=$(pgrep -f "mock_model_server.py.*$dir" || true)
[ -n "$mock" ] || fail "no mock model server for $dir"
kill -9 "$owner"
wait "$owner" 2>/dev/null || true
for _ in $(seq 60); do
  tmux -S "$SOCK" has-session 2>/dev/null || break
  sleep 1
done
tmux -S "$SOCK" has-session 2>/dev/null && fail "the tmux server outlived its owner"
for _ in $(seq 60); do
  [ "$(qemu_count)" = 0 ] && ! kill -0 $mock 2>/dev/null && [ ! -e "$dir" ] && break
  sleep 1
done
[ "$(qemu_count)" = 0 ] || fail "after the hangup a QEMU of the demo is still running"
kill -0 $mock 2>/dev/null && fail "after the hangup the mock model server is still running"
[ ! -e "$dir" ] || fail "after the hangup the sample project $dir is left behind"
echo "ok: the owner's death hangs up the demo, which cleans up ($dir removed)"
