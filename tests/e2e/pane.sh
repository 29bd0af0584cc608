# Sourced by the e2e tests that drive airlock in a real terminal (a tmux
# pane): login_broker_test.sh, login_broker_codex_test.sh. Expects WORK and fail().
#
# pane_start COMMAND...: a fresh 200x50 pane running COMMAND (as given, one
# word per argument), then "PANE-EXIT=<its exit code>"; pane_screen: the
# pane's whole history; pane_wait TEXT SECONDS [FORBIDDEN...]: until TEXT
# is on the screen, failing at once when one of FORBIDDEN shows up;
# pane_type TEXT: TEXT, then Enter once TEXT is echoed (up to 30 s) and a
# pause (a paste and Enter at once can be taken as one multi-line paste); pane_stop: the pane and its server gone.
PANE_SOCK=
pane_start() {
  pane_stop
  PANE_SOCK=$WORK/tmux-$RANDOM.sock
  tmux -S "$PANE_SOCK" new-session -d -s run -x 200 -y 50 "$(printf '%q ' "$@"); echo PANE-EXIT=\$?; sleep 3600"
  tmux -S "$PANE_SOCK" set-option -t run history-limit 20000 >/dev/null
}
pane_screen() { tmux -S "$PANE_SOCK" capture-pane -p -J -S - -t run; }
pane_wait() {
  local text=$1 seconds=$2 started=$SECONDS deadline=$((SECONDS + $2)) s forbidden
  shift 2
  while ((SECONDS < deadline)); do
    s=$(pane_screen)
    for forbidden in "$@"; do
      grep -qF -- "$forbidden" <<<"$s" && fail "'$forbidden' showed up in the terminal: $(grep -v '^$' <<<"$s" | tail -25)"
    done
    if grep -qF -- "$text" <<<"$s"; then
      echo "pane: '$text' after $((SECONDS - started)) s"
      return 0
    fi
    sleep 1
  done
  fail "waited $seconds s for '$text' in the terminal: $(pane_screen | grep -v '^$' | tail -25)"
}
pane_count() { pane_screen | { grep -oF -- "$1" || true; } | wc -l; }
pane_type() {
  local before deadline=$((SECONDS + 30))
  before=$(pane_count "$1")
  tmux -S "$PANE_SOCK" send-keys -t run -l "$1"
  # Enter only once the text is echoed: keys typed before the program reads
  # its terminal can be lost or taken as part of a paste.
  while (($(pane_count "$1") <= before)) && ((SECONDS < deadline)); do sleep 1; done
  sleep 1
  tmux -S "$PANE_SOCK" send-keys -t run Enter
}
pane_stop() { [ -z "$PANE_SOCK" ] || tmux -S "$PANE_SOCK" kill-server 2>/dev/null || true; }
