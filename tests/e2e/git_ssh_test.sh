#!/usr/bin/env bash
# git push over SSH from the VM with no key in it (issue 18, item 4):
# --git-ssh-agent forwards a test ssh-agent holding keys A and B, with only
# A listed (--git-ssh-key). Claude Code commits on a new branch and pushes
# to airlock-git@git.example.test:o/r.git, Debian's OpenSSH sshd on a fake
# internet (git_ssh_server.sh), through the egress firewall's port 22.
#
#   tests/e2e/git_ssh_test.sh AIRLOCK_BINARY
#
# Asserts: with A authorized the push lands, sshd accepted A, the agent in
# the VM listed A and never B, no private key is in the VM, signing a git
# commit with the forwarded key is refused, and the session's egress log
# has the admitted SSH connection and the signed login. With only B
# authorized the push fails and sshd never saw B offered (a key not listed
# is not offered). Runs airlock as an unprivileged user (test_user.sh).
set -euo pipefail

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
. "$SRC/tests/e2e/test_user.sh"
. "$SRC/tests/e2e/git_ssh_server.sh"
. "$SRC/tests/e2e/processes.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-gitssh-e2e.XXXXXX")
INET=airlock-gitssh-inet-$$
HOST=airlock-gitssh-host-$$
pids=()
cleanup() {
  [ -z "${agent_pid:-}" ] || kill "$agent_pid" 2>/dev/null || true
  test_user_down
  git_sshd_down
  fake_internet_teardown
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
wait_for() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; fail "$1: no '$2': $(cat "$1")"; }

fake_internet_up "$INET" "$HOST" 192.0.2.11 192.0.2.53
cd "$WORK"
ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 git.example.test=192.0.2.11 >dns.out 2>&1 &
pids+=($!)
git_sshd_up "$INET" 192.0.2.11 "$WORK" git.example.test || fail "sshd did not start"
git_sshd_repo o/r.git

# The user's clone, its remote on the git host over SSH.
g() { git -c user.name=Host -c user.email=host@example.com -c init.defaultBranch=main -c safe.directory='*' "$@"; }
mkdir -p home/.ssh
g init -q project
echo "# SSH project" >project/README.md
g -C project add README.md
g -C project commit -qm base
g -C project remote add origin airlock-git@git.example.test:o/r.git
cp "$GIT_SSHD_KNOWN_HOSTS" home/.ssh/known_hosts
printf '[user]\n\tname = Ada Lovelace\n\temail = ada@example.com\n' >home/.gitconfig
ssh-keygen -q -t ed25519 -N '' -C key-a -f keys-a
ssh-keygen -q -t ed25519 -N '' -C key-b -f keys-b
fp_a=$(ssh-keygen -lf keys-a.pub | cut -d' ' -f2)
fp_b=$(ssh-keygen -lf keys-b.pub | cut -d' ' -f2)
wait_for dns.out READY

test_user_up "$WORK" claude-code
test_user_own "$WORK"
chown -R airlock-git: "$GIT_SSHD_HOME"
# The user's agent (ssh-agent serves only its own uid) holds both keys.
"${as_test_user[@]}" ssh-agent -a "$WORK/agent.sock" -s >agent.env
agent_pid=$(sed -n 's/^SSH_AGENT_PID=\([0-9]*\);.*/\1/p' agent.env)
"${as_test_user[@]}" env SSH_AUTH_SOCK="$WORK/agent.sock" ssh-add -q keys-a keys-b 2>/dev/null
rm -f keys-a keys-b  # the agent holds them now

# The test user in the host namespace, with the test's directories and agent
# (an array, not a function: airlock_pid must be airlock's own pid).
as_user=(ip netns exec "$HOST" "${as_test_user[@]}" env HOME="$WORK/home" XDG_STATE_HOME="$WORK/state"
  XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" AIRLOCK_CACHE_DIR="$CACHE"
  SSH_AUTH_SOCK="$WORK/agent.sock")
start_agent() {  # start_agent N SCENARIO [airlock run flags...]: in the background, sets airlock_pid
  local n=$1 scenario=$2
  shift 2
  fake_internet_mock_model "$n" "$scenario"
  "${as_user[@]}" ANTHROPIC_BASE_URL="http://10.0.2.2:$mock_port" ANTHROPIC_API_KEY=airlock-e2e \
    "$AIRLOCK" run claude-code -q -w "$WORK/project" --review=auto --host-port "$mock_port" "$@" \
    --git-ssh-agent --git-ssh-key "$fp_a" --git-host git.example.test -- -p "Do the scripted task." \
    --output-format json </dev/null >"airlock-$n.out" 2>"airlock-$n.err" &
  airlock_pid=$!
}
run_agent() {  # run_agent N: the push scenario, to its end; sets code
  start_agent "$1" git_ssh.json
  set +e
  wait "$airlock_pid"
  code=$?
  set -e
  kill "$mock_pid" 2>/dev/null || true
}

# Run 1: A is authorized: the push lands with A; B never shows.
grep -h "ssh-ed25519" keys-a.pub >"$GIT_SSHD_AUTHORIZED"
run_agent 1
[ "$code" = 0 ] || fail "run 1: airlock exited $code: $(cat airlock-1.err) mock: $(cat mock-1.log)"
grep -q '"step": ' mock-1.log || fail "the model was never reached: $(cat mock-1.log)"
if grep -q '"violations": \[{' mock-1.log; then fail "run 1: a step went wrong in the VM: $(cat mock-1.log)"; fi
[ "$(g --git-dir="$GIT_SSHD_HOME/o/r.git" log -1 --format=%s agent-ssh 2>&1)" = "agent over ssh" ] ||
  fail "agent-ssh did not reach the git host: $(cat "$GIT_SSHD_LOG")"
grep -q "Accepted publickey for airlock-git from .* $fp_a" "$GIT_SSHD_LOG" || fail "sshd did not accept A: $(cat "$GIT_SSHD_LOG")"
grep -q "${fp_a#SHA256:}" mock-1.log || fail "the agent in the VM did not list A: $(cat mock-1.log)"
if grep -q "${fp_b#SHA256:}" mock-1.log "$GIT_SSHD_LOG"; then fail "B (not listed) was seen in the VM or by sshd"; fi
grep -q 'sign-exit=[1-9]' mock-1.log || fail "a git commit was signed with the forwarded key: $(cat mock-1.log)"
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log | head -1)
grep -q 'tcp 192.0.2.11:22 (ssh git.example.test) allowed' "$log" ||
  fail "no admitted SSH connection in the egress log: $(cat "$log")"
fp_host=$(ssh-keygen -lf "$WORK/sshd_known_host_key.pub" | cut -d' ' -f2)
grep -q "ssh-agent: signed a login as airlock-git with $fp_a to host key $fp_host" "$log" ||
  fail "no signed (host-bound) login to the git host in the egress log: $(cat "$log")"
grep -q "ssh-agent: refused to sign with $fp_a: the data is not an SSH login" "$log" ||
  fail "the commit signature's refusal is not in the egress log: $(cat "$log")"
grep -q 'git: 1 new commit on agent-ssh' airlock-1.err || fail "the review did not import the commit: $(cat airlock-1.err)"

# Run 2: only B is authorized: A is refused and B, not listed, is never offered.
g --git-dir="$GIT_SSHD_HOME/o/r.git" branch -D agent-ssh >/dev/null
grep -h "ssh-ed25519" keys-b.pub >"$GIT_SSHD_AUTHORIZED"
: >"$GIT_SSHD_LOG"  # sshd appends: run 2's lines only
rm -rf "$WORK/state"
run_agent 2
if [ -n "$(g --git-dir="$GIT_SSHD_HOME/o/r.git" branch --list agent-ssh)" ]; then fail "run 2 pushed with a key not listed"; fi
grep -q 'push-exit=[1-9]' mock-2.log || fail "run 2's push did not fail: $(cat mock-2.log)"
if grep -q "$fp_b" "$GIT_SSHD_LOG"; then fail "sshd saw B, a key not listed: $(cat "$GIT_SSHD_LOG")"; fi
grep -q "Failed publickey for airlock-git from .* $fp_a" "$GIT_SSHD_LOG" || fail "run 2 did not even offer A: $(cat "$GIT_SSHD_LOG")"
# Run 3: SIGTERM to airlock while the agent works. The port's thread must
# not take the signal (it killed airlock on the spot): airlock forwards it,
# and the session ends with a review, not "dead".
rm -rf "$WORK/state"
start_agent 3 git_ssh_term.json --name term-test
for _ in $(seq 600); do grep -q '"step": 0' mock-3.log 2>/dev/null && break; sleep 0.1; done
grep -q '"step": 0' mock-3.log || fail "run 3: the agent never started its command: $(cat airlock-3.err)"
sleep 2
kill -TERM "$airlock_pid"
set +e
wait "$airlock_pid"
set -e
state=$("${as_user[@]}" "$AIRLOCK" ls --all 2>&1)
echo "$state" | grep -q 'term-test' || fail "run 3: no session term-test: $state"
if echo "$state" | grep 'term-test' | grep -q dead; then
  fail "run 3: SIGTERM killed airlock (the session is dead): $state; $(cat airlock-3.err)"
fi
[ -z "$(qemu_of "$WORK")" ] || fail "run 3: QEMU is still running"
echo "PASS: git push over SSH through the forwarded agent"
