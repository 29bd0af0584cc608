#!/usr/bin/env bash
# `airlock run claude-code` as a user starts it: interactive, in a real
# terminal (a tmux pane), with their own ~/.claude/settings.json imported,
# against the mock model:
#
#   tests/e2e/interactive_claude_pty_test.sh AIRLOCK_BINARY
#
# Claude asks none of its first-run questions (onboarding, folder trust, "use
# this API key?", the bypass-permissions warning), on the first run and on the
# next run on the same project; a prompt typed into the pane reaches the
# model, the agent's edit lands after the review, and /exit ends the session.
set -euo pipefail

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
command -v tmux >/dev/null || { echo "SKIPPED: tmux is not installed (scripts/setup installs it)"; exit 77; }
CACHE=${AIRLOCK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-interactive.XXXXXX")
SOCK=$WORK/tmux.sock
MOCK_PID=
cleanup() {
  tmux -S "$SOCK" kill-server 2>/dev/null || true
  [ -z "$MOCK_PID" ] || kill "$MOCK_PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
screen() { tmux -S "$SOCK" capture-pane -p -J -S - -t run; }
fail() {
  echo "FAIL: $*" >&2
  echo "--- screen ---" >&2
  screen >&2 || true
  echo "--- mock log ---" >&2
  tail -5 "$WORK/mock.log" >&2 || true
  exit 1
}
# wait_for TEXT SECONDS: until TEXT is on the screen; a first-run question
# on the way fails at once.
wait_for() {
  local deadline=$((SECONDS + $2)) s
  while ((SECONDS < deadline)); do
    s=$(screen)
    for question in "Do you want to use this API key" "Bypass Permissions mode" "Do you trust the files" \
                    "Choose the text style" "Select login method"; do
      grep -qF -- "$question" <<<"$s" && fail "Claude asked a first-run question: '$question'"
    done
    grep -qF -- "$1" <<<"$s" && return 0
    sleep 1
  done
  fail "waited $2 s for '$1'"
}

HOME_DIR=$WORK/home PROJECT=$WORK/project
mkdir -p "$HOME_DIR/.claude" "$PROJECT"
printf '# Sample project\n' >"$PROJECT/README.md"
# A user's own settings (their bypass-permissions answer is not in it).
printf '{"cleanupPeriodDays": 30, "env": {"EDITOR": "vi"}}\n' >"$HOME_DIR/.claude/settings.json"

python3 "$SRC/tests/e2e/mock_model_server.py" --port 0 --scenario "$SRC/tests/e2e/scenarios/single_edit.json" \
  --log "$WORK/mock.log" --exit-after 1500 --quiet >"$WORK/mock.out" 2>&1 &
MOCK_PID=$!
for _ in $(seq 100); do grep -q '^PORT ' "$WORK/mock.out" 2>/dev/null && break; sleep 0.1; done
PORT=$(sed -n 's/^PORT //p' "$WORK/mock.out")
[ -n "$PORT" ] || fail "the mock model server did not start"

# run_agent N: airlock run claude-code in a fresh 200x50 pane.
run_agent() {
  tmux -S "$SOCK" kill-server 2>/dev/null || true
  SOCK=$WORK/tmux-$1.sock
  tmux -S "$SOCK" new-session -d -s run -x 200 -y 50 \
    "env HOME='$HOME_DIR' XDG_STATE_HOME='$WORK/state' XDG_DATA_HOME='$WORK/data' XDG_CONFIG_HOME='$WORK/config' \
       AIRLOCK_CACHE_DIR='$CACHE' ANTHROPIC_BASE_URL=http://10.0.2.2:$PORT \
       ANTHROPIC_API_KEY=sk-ant-airlock-interactive-test-key PAGER=cat \
       '$AIRLOCK' run claude-code -w '$PROJECT' --review=auto --host-port $PORT; echo RUN-EXIT=\$?; sleep 3600"
  tmux -S "$SOCK" set-option -t run history-limit 20000 >/dev/null
  tmux -S "$SOCK" run-shell -b "while kill -0 $$ 2>/dev/null; do sleep 1; done; tmux -S '$SOCK' kill-server"
}

# type TEXT: TEXT into Claude's input line, then Enter (a pause between, as
# a paste and Enter at once can be taken as one multi-line paste).
type_line() {
  tmux -S "$SOCK" send-keys -t run -l "$1"
  sleep 1
  tmux -S "$SOCK" send-keys -t run Enter
}
# exit_agent WHAT: /exit, then the run must end with 0.
exit_agent() {
  type_line "/exit"
  wait_for "RUN-EXIT=" 300
  screen | grep -q "RUN-EXIT=0" || fail "$1 did not exit 0"
}

# -- 1: first run on the project -------------------------------------------
run_agent 1
# Claude's input line in bypass mode (the first run may build the image).
wait_for "bypass permissions on" 1500
type_line "Do the scripted task."
for _ in $(seq 180); do grep -q '"text": "Done: wrote AGENT_NOTE.md."' "$WORK/mock.log" 2>/dev/null && break; sleep 1; done
grep -q '"text": "Done: wrote AGENT_NOTE.md."' "$WORK/mock.log" || fail "the typed prompt did not reach the model"
wait_for "Done: wrote AGENT_NOTE.md." 60
exit_agent "the run"
[ "$(cat "$PROJECT/AGENT_NOTE.md" 2>/dev/null)" = "Edited by the agent under airlock." ] ||
  fail "the agent's edit did not land"
echo "ok: first interactive run, no first-run question, the edit landed"

# -- 2: the next run on the same project: still no question ----------------
run_agent 2
wait_for "bypass permissions on" 600
exit_agent "the second run"
echo "ok: second interactive run, no first-run question"
echo PASS
