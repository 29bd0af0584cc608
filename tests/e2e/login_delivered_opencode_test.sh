#!/usr/bin/env bash
# OpenCode on a ChatGPT login (issue 15, item 4): OpenCode sends it to a
# fixed https://chatgpt.com endpoint, so the broker cannot keep it; the
# login enters the VM as OpenCode's own auth.json on a tmpfs, OpenCode
# refreshes it there (OpenAI rotates the refresh token), and airlock reads
# it back when OpenCode exits and stores it: the spent copy is never
# delivered again.
#
#   tests/e2e/login_delivered_opencode_test.sh AIRLOCK_BINARY
#
# The fake internet of login_broker_test.sh (fake_internet.sh): the mock
# model server with TLS on 192.0.2.10:443 as chatgpt.com and
# auth.openai.com, under a CA made here that the guest trusts through the
# user's `extra_ca_certs` setting (as a company's TLS-inspecting proxy's CA
# would be). airlock runs as airlock-4242 when started by root.
#
# A FAKE ChatGPT login (OpenCode's auth.json, expired an hour ago) is
# imported with `airlock login opencode --from-host`. Run 1 asserts: the
# guest reached chatgpt.com and auth.openai.com under `locked` egress,
# OpenCode refreshed with the imported refresh token and used the new
# access token, the file sat on the tmpfs (scenario), no API key entered
# the VM, the change landed, the rotated login was stored, and no token is
# in the session's files or the saved state. Run 2: OpenCode gets the
# rotated login (its access token on the wire, no refresh). Run 3: after a
# logout, `airlock login opencode` in a terminal (a tmux pane) runs
# OpenCode's headless ChatGPT login (a device code) in a VM that reaches
# only auth.openai.com; its login is stored and the next run delivers it.
set -euo pipefail
command -v tmux >/dev/null || { echo "FAIL: tmux is not installed (scripts/setup installs it)" >&2; exit 1; }

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
. "$SRC/tests/e2e/test_user.sh"
. "$SRC/tests/e2e/broker_mock.sh"
. "$SRC/tests/e2e/pane.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-login-opencode-e2e.XXXXXX")
INET=airlock-ologin-inet-$$
HOST=airlock-ologin-host-$$
pids=()
cleanup() {
  pane_stop
  test_user_down
  fake_internet_teardown
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

fake_internet_up "$INET" "$HOST" 192.0.2.10 192.0.2.53
cd "$WORK"
fake_tls_cert airlock-login-opencode-e2e-ca chatgpt.com auth.openai.com

ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 \
  chatgpt.com=192.0.2.10 auth.openai.com=192.0.2.10 >dns.out 2>&1 &
pids+=($!)

# The user's machine: OpenCode's ChatGPT login (expired) next to an API key
# entry of another provider, under $XDG_DATA_HOME as OpenCode keeps it.
mkdir -p data/opencode project
python3 - data/opencode/auth.json <<'PY'
import json, sys, time
json.dump({"openai": {"type": "oauth", "refresh": "rt_FAKE-REAL-REFRESH", "access": "FAKE-REAL-ACCESS",
                      "expires": int(time.time() * 1000) - 3600 * 1000, "accountId": "acct-FAKE-1"},
           "anthropic": {"type": "api", "key": "sk-ant-api03-FAKE-OTHER-PROVIDER"}}, open(sys.argv[1], "w"))
PY
echo "# Delivered project" >project/README.md
mkdir -p config/airlock
echo "extra_ca_certs: $WORK/ca.crt" >config/airlock/config.yaml

test_user_up "$WORK" opencode
as_user() {
  ip netns exec "$HOST" "${as_test_user[@]}" env -u OPENAI_BASE_URL \
    HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" \
    AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file OPENAI_API_KEY=sk-SHOULD-NOT-REACH-THE-VM "$@"
}
stored_login() { cat "$WORK/data/airlock/secrets/login.opencode"; }
test_user_own "$WORK"

as_user "$AIRLOCK" login opencode --from-host 2>login.err || fail "login --from-host: $(cat login.err)"
grep -q 'cannot be brokered' login.err || fail "login did not say the login enters the VM: $(cat login.err)"
stored_login | grep -q 'rt_FAKE-REAL-REFRESH' || fail "the store lacks the imported login"
if stored_login | grep -q 'FAKE-OTHER-PROVIDER'; then fail "another provider's key was stored with the login"; fi
as_user "$AIRLOCK" info opencode -w "$WORK/project" >info.out 2>&1 || fail "info: $(cat info.out)"
grep -q 'enters the VM' info.out || fail "info does not say the login enters the VM: $(cat info.out)"

run_agent() {
  set +e
  as_user "$AIRLOCK" run opencode -w "$WORK/project" --review=auto --egress-profile locked -- "Do the scripted task." \
    </dev/null >"airlock-$1.out" 2>"airlock-$1.err"
  code=$?
  set -e
  [ "$code" = 0 ] || fail "run $1: airlock exited $code: $(cat "airlock-$1.err") mock: $(cat "mock-$1.log" 2>/dev/null) egress log: $(cat "$WORK"/state/airlock/sessions/*/egress.log)"
  grep -q '"step": ' "mock-$1.log" || fail "run $1: the model was never reached: $(cat "mock-$1.log") $(cat "airlock-$1.err")"
  if grep -q '"violations": \[{' "mock-$1.log"; then fail "run $1: the scenario's checks failed: $(cat "mock-$1.log")"; fi
  grep -q 'login enters the VM' "airlock-$1.err" || fail "run $1 did not say the login enters the VM: $(cat "airlock-$1.err")"
  [ "$(cat project/DELIVERED.md)" = "Written with a ChatGPT login in the VM." ] || fail "run $1: the change did not land"
  # No token in what airlock keeps of the session or of OpenCode's state.
  if grep -rqs -e 'FAKE-REAL' -e 'rt_rotated-' -e 'SHOULD-NOT' "$WORK/state/airlock" "$WORK/data/airlock/state"; then
    fail "run $1: a token was written outside the secret store: $(grep -rls -e FAKE-REAL -e rt_rotated- -e SHOULD-NOT "$WORK/state/airlock" "$WORK/data/airlock/state")"
  fi
}

# Run 1: OpenCode refreshes the expired login in the VM; the rotated one comes back.
start_mock login_delivered_opencode 1
run_agent 1
python3 - mock-1.log requests-1 <<'PY' || fail "OpenCode did not refresh at auth.openai.com and use the new token: $(cat mock-1.log)"
import json, os, sys
entries = list(map(json.loads, open(sys.argv[1])))
refreshes = [e for e in entries if e.get("kind") == "oauth_token"]
assert len(refreshes) == 1, refreshes
r = refreshes[0]
assert r["path"] == "/oauth/token" and r["grant_type"] == "refresh_token", r
assert r["refresh_token"] == "rt_FAKE-REAL-REFRESH" and r["client_id"] == "app_EMoamEEZ73f0CkXaXp7hrann", r
calls = 0
for name in os.listdir(sys.argv[2]):
    d = json.load(open(os.path.join(sys.argv[2], name)))
    if d["path"].startswith("/backend-api/codex/responses"):
        calls += 1
        h = {k.lower(): v for k, v in d["headers"].items()}
        assert h["authorization"] == "Bearer " + r["access_token"], h["authorization"]
        assert h["chatgpt-account-id"] == "acct-FAKE-1", h
assert calls, "no model request"
PY
rotated=$(python3 -c 'import json,sys; print([e for e in map(json.loads, open(sys.argv[1])) if e.get("kind") == "oauth_token"][0]["rotated"])' mock-1.log)
access=$(python3 -c 'import json,sys; print([e for e in map(json.loads, open(sys.argv[1])) if e.get("kind") == "oauth_token"][0]["access_token"])' mock-1.log)
grep -q 'refreshed its login in the VM; the new one is stored' airlock-1.err || fail "run 1 did not say the refreshed login was stored: $(cat airlock-1.err)"
stored_login | grep -q "rt_rotated-$rotated" || fail "the rotated refresh token was not stored: $(stored_login | head -c 300)"
if stored_login | grep -q 'rt_FAKE-REAL-REFRESH'; then fail "the spent refresh token is still stored"; fi
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 2: the rotated login goes in; OpenCode uses its access token as it is.
rm project/DELIVERED.md
start_mock login_delivered_opencode 2
run_agent 2
if grep -q '"kind": "oauth_token"' mock-2.log; then fail "run 2 refreshed again: a stale login was delivered: $(cat mock-2.log)"; fi
for f in $(grep -l '"/backend-api/codex/responses' requests-2/*.json); do
  grep -q "\"Bearer $access\"" "$f" || fail "run 2 did not use the rotated access token: $(grep -i authorization "$f")"
done
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 3: a new login made in a VM, on a terminal, then delivered.
as_user "$AIRLOCK" logout opencode 2>/dev/null || fail "logout failed"
start_mock login_delivered_opencode 3
pane_start ip netns exec "$HOST" "${as_test_user[@]}" env HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" \
  XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file \
  "$AIRLOCK" login opencode
pane_wait "FAKE-1234" 600
pane_wait "PANE-EXIT=" 300
pane_screen | grep -q "PANE-EXIT=0" || fail "airlock login opencode failed: $(pane_screen | grep -v '^$' | tail -20) mock: $(cat mock-3.log)"
pane_stop
grep '"kind": "oauth_code"' mock-3.log | grep -q '"code_verifier": "FAKE-VERIFIER"' ||
  fail "the login in the VM did not finish OpenCode's device-code flow: $(cat mock-3.log)"
device=$(grep -o '"kind": "oauth_code".*"rotated": "[0-9a-f]*"' mock-3.log | grep -o '"rotated": "[0-9a-f]*"' | cut -d'"' -f4)
stored_login | grep -q "rt_device-$device" || fail "the login made in the VM was not stored: $(stored_login | head -c 300)"
stored_login | grep -q 'acct-DEVICE-1' || fail "the stored login lacks its account"
rm project/DELIVERED.md
run_agent 3
for f in $(grep -l '"/backend-api/codex/responses' requests-3/*.json); do
  grep -qi '"chatgpt-account-id": "acct-DEVICE-1"' "$f" || fail "run 3 did not use the login made in the VM: $(head -c 1500 "$f")"
done
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
ls /sys/class/net | grep -q airlock0 && fail "a tap device was left on the host"
echo "PASS: OpenCode's ChatGPT login entered the VM on a tmpfs, was refreshed there, read back and stored; the next run got the rotated one; \`airlock login opencode\` logged in inside a VM"
