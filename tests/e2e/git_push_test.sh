#!/usr/bin/env bash
# git push from the VM with no token in it (issue 18, item 4): Claude Code
# commits on a new branch and pushes to https://github.com/o/r.git; the
# guest's git sends that to the git broker at the gateway, which adds the
# token (--git-token env:GITHUB_TOKEN) on the host and forwards over TLS.
#
#   tests/e2e/git_push_test.sh AIRLOCK_BINARY
#
# A fake internet like login_broker_test.sh: namespace "inet" with DNS on
# 192.0.2.53 (github.com = 192.0.2.10) and a git host with TLS on
# 192.0.2.10:443 (git http-backend, pushes only with the token as the Basic
# password) under a certificate from a CA made here; namespace "host",
# where airlock runs, trusting that CA through SSL_CERT_FILE. The mock model
# is on the host's loopback (--host-port). Asserts: the push lands on the
# git host with the token; the guest's environment, git config and
# processes never held it; the broker's lines are in the egress log (the
# remote names the repository's old name: the host's 301 comes back
# through the broker, as GitHub's does for a renamed repository); the
# agent's commit also comes back as refs/airlock/...; a second run whose
# token the host refuses fails the push (403) and nothing is pushed; the
# session's egress log says why, naming --git-token.
set -euo pipefail

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
. "$SRC/tests/e2e/test_user.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-gitpush-e2e.XXXXXX")
INET=airlock-gitpush-inet-$$
HOST=airlock-gitpush-host-$$
TOKEN=ghp_FAKE_PUSH_TOKEN_0123456789
pids=()
cleanup() {
  test_user_down
  fake_internet_teardown
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
wait_for() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; fail "$1: no '$2': $(cat "$1")"; }

fake_internet_up "$INET" "$HOST" 192.0.2.10 192.0.2.53
cd "$WORK"
fake_tls_cert airlock-gitpush-e2e-ca github.com
ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 github.com=192.0.2.10 >dns.out 2>&1 &
pids+=($!)

# The git host's repository o/r.git, and the user's clone of it.
g() { git -c user.name=Host -c user.email=host@example.com -c init.defaultBranch=main -c safe.directory='*' "$@"; }
mkdir -p srv/o home
g init -q --bare srv/o/r.git
g init -q project
echo "# Pushed project" >project/README.md
g -C project add README.md
g -C project commit -qm base
g -C project push -q "$WORK/srv/o/r.git" main
g -C project remote add origin https://github.com/o/old-name.git  # renamed on the host: 301 to o/r.git
printf '[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n' >home/.gitconfig
ip netns exec "$INET" python3 "$SRC/tests/e2e/git_http_server.py" --host 192.0.2.10 --port 443 --tls-cert api.crt \
  --tls-key api.key --root "$WORK/srv" --token "$TOKEN" --log git.log --public-url https://github.com \
  --redirect /o/old-name.git=/o/r.git >git.out 2>&1 &
pids+=($!)
wait_for git.out '^PORT '
wait_for dns.out READY

test_user_up "$WORK" claude-code
test_user_own "$WORK"
chown -R 0:0 "$WORK/srv"  # the git host's, not the user's

run_agent() {  # run_agent N TOKEN
  fake_internet_mock_model "$1" git_push.json
  local port=$mock_port
  set +e
  ip netns exec "$HOST" "${as_test_user[@]}" env HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" \
    XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" AIRLOCK_CACHE_DIR="$CACHE" \
    SSL_CERT_FILE="$WORK/ca.crt" ANTHROPIC_BASE_URL="http://10.0.2.2:$port" ANTHROPIC_API_KEY=airlock-e2e \
    GITHUB_TOKEN="$2" "$AIRLOCK" run claude-code -q -w "$WORK/project" --review=auto --host-port "$port" \
    --git-token env:GITHUB_TOKEN -- -p "Do the scripted task." --output-format json </dev/null \
    >"airlock-$1.out" 2>"airlock-$1.err"
  code=$?
  set -e
  kill "$mock_pid" 2>/dev/null || true
}

# Run 1: the push lands with the token added on the host.
run_agent 1 "$TOKEN"
[ "$code" = 0 ] || fail "run 1: airlock exited $code: $(cat airlock-1.err) mock: $(cat mock-1.log)"
grep -q '"step": ' mock-1.log || fail "the model was never reached: $(cat mock-1.log)"
if grep -q '"violations": \[{' mock-1.log; then fail "run 1: a step went wrong in the VM: $(cat mock-1.log)"; fi
[ "$(git --git-dir="$WORK/srv/o/r.git" log -1 --format=%s agent-fix 2>&1)" = "agent fix" ] ||
  fail "agent-fix did not reach the git host: $(git --git-dir="$WORK/srv/o/r.git" for-each-ref) git log: $(cat git.log)"
grep -q '"method": "POST", "path": "/o/r.git/git-receive-pack", "query": "", "auth": "ok"' git.log ||
  fail "the push did not carry the token: $(cat git.log)"
if grep -q '"auth": "bad"' git.log; then fail "a request carried another password: $(cat git.log)"; fi
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log | head -1)
grep -q 'broker git: POST /o/r.git/git-receive-pack -> 200' "$log" || fail "no broker line in the egress log: $(cat "$log")"
grep -q 'broker git: GET /o/old-name.git/info/refs -> 301' "$log" ||
  fail "the renamed repository's redirect did not go through the broker: $(cat "$log")"
if grep -rq "$TOKEN" "$WORK/state" "$WORK/project" airlock-1.out airlock-1.err; then
  fail "the token was written to the session, the project or airlock's output"
fi
grep -q 'git: 1 new commit on agent-fix' airlock-1.err || fail "the review did not import the commit: $(cat airlock-1.err)"
[ "$(g -C project log -1 --format=%s main)" = base ] || fail "the host's main moved"

# Run 2: a token the git host refuses: the push fails, naming --git-token.
g --git-dir="$WORK/srv/o/r.git" branch -D agent-fix >/dev/null
rm -rf "$WORK/state"
run_agent 2 ghp_WRONG_TOKEN
if [ "$(git --git-dir="$WORK/srv/o/r.git" branch --list agent-fix)" != "" ]; then fail "run 2 pushed with a wrong token"; fi
grep -q 'push-exit=[1-9]' mock-2.log || fail "run 2's push did not fail: $(cat mock-2.log)"
grep -q 'error: 403' mock-2.log || fail "the agent's git did not get the broker's 403: $(cat mock-2.log)"
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log | head -1)
grep -q 'broker git: the git host refused the token from env:GITHUB_TOKEN (--git-token)' "$log" ||
  fail "the egress log does not say why the push failed: $(cat "$log")"
echo "PASS: git push through the broker"
