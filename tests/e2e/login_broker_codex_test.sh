#!/usr/bin/env bash
# Codex on a ChatGPT login kept on the host (issue 15): the VM gets a
# placeholder auth.json; Codex talks to the credential broker, the model
# over plain HTTP (a custom provider) and its account checks over HTTPS
# (chatgpt_base_url) under a CA made for the session; the host refreshes
# the real token at auth.openai.com.
#
#   tests/e2e/login_broker_codex_test.sh AIRLOCK_BINARY
#
# The fake internet of login_broker_test.sh (fake_internet.sh): the mock
# model server with TLS on 192.0.2.10:443 as chatgpt.com and
# auth.openai.com, under a CA made here that the host side trusts through
# SSL_CERT_FILE. airlock runs as airlock-4242 when started by root.
#
# A FAKE ChatGPT login (~/.codex/auth.json whose access JWT expires in a
# minute) is imported with `airlock login codex --from-host`. Run 1
# asserts: the host refreshes it first (the mock's /oauth/token gets the
# real refresh token and Codex's client id), the account check and the
# model requests carry the refreshed token and the account id, the guest
# holds only placeholders (no real or refreshed token, no API key:
# CODEX_API_KEY is set on the host and not forwarded), chatgpt.com is
# unreachable from the guest, and the change lands; the rotated tokens are
# stored. Run 2: the model API refuses the token once (401); the broker
# refreshes with the rotated refresh token and retries. Run 3: after a
# logout, `airlock login codex` in a terminal (a tmux pane) runs Codex's
# own device-code login in a VM that reaches only auth.openai.com (trusted
# through the user's extra_ca_certs): the code is shown, the login's tokens
# are stored (Codex's client id, the device's PKCE verifier), and a run then
# goes through the broker with them.
set -euo pipefail
command -v tmux >/dev/null || { echo "FAIL: tmux is not installed (scripts/setup installs it)" >&2; exit 1; }

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
. "$SRC/tests/e2e/test_user.sh"
. "$SRC/tests/e2e/broker_mock.sh"
. "$SRC/tests/e2e/pane.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-login-codex-e2e.XXXXXX")
INET=airlock-clogin-inet-$$
HOST=airlock-clogin-host-$$
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
fake_tls_cert airlock-login-codex-e2e-ca chatgpt.com auth.openai.com

ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 \
  chatgpt.com=192.0.2.10 auth.openai.com=192.0.2.10 >dns.out 2>&1 &
pids+=($!)

# The user's machine: a ChatGPT login whose access token expires in a minute.
mkdir -p home/.codex project
python3 - home/.codex/auth.json <<'PY'
import base64, json, sys, time
def b64(d): return base64.urlsafe_b64encode(d).rstrip(b"=").decode()
def jwt(claims): return "%s.%s.%s" % (b64(b'{"alg":"RS256","typ":"JWT"}'), b64(json.dumps(claims).encode()), b64(b"FAKE-REAL-SIG"))
auth = {"chatgpt_account_id": "acct-FAKE-1", "chatgpt_plan_type": "pro", "chatgpt_user_id": "user-FAKE-1"}
json.dump({"auth_mode": "chatgpt", "OPENAI_API_KEY": None,
           "tokens": {"id_token": jwt({"email": "user@example.com", "https://api.openai.com/auth": auth,
                                       "exp": int(time.time()) + 3600, "marker": "FAKE-REAL-ID"}),
                      "access_token": jwt({"exp": int(time.time()) + 60, "marker": "FAKE-REAL-ACCESS"}),
                      "refresh_token": "rt_FAKE-REAL-REFRESH", "account_id": "acct-FAKE-1"},
           "last_refresh": "2026-12-01T00:00:00Z"}, open(sys.argv[1], "w"))
PY
echo "# Brokered project" >project/README.md

test_user_up "$WORK" codex
as_user() {
  ip netns exec "$HOST" "${as_test_user[@]}" env -u CODEX_CA_CERTIFICATE -u OPENAI_BASE_URL \
    HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" \
    AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file SSL_CERT_FILE="$WORK/ca.crt" \
    CODEX_API_KEY=sk-proj-SHOULD-NOT-REACH-THE-VM OPENAI_API_KEY=sk-SHOULD-NOT-REACH-THE-VM "$@"
}
stored_login() { cat "$WORK/data/airlock/secrets/login.codex"; }
test_user_own "$WORK"

as_user "$AIRLOCK" login codex --from-host 2>login.err || fail "login --from-host: $(cat login.err)"
grep -q 'subscription (pro)' login.err || fail "login did not say what it stored: $(cat login.err)"
stored_login | grep -q 'rt_FAKE-REAL-REFRESH' || fail "the store lacks the imported login"
if stored_login | grep -q 'RkFLRS1SRUFMLUlE'; then fail "the id token was stored"; fi

run_agent() {
  set +e
  as_user "$AIRLOCK" run codex -w "$WORK/project" --review=auto --egress-profile locked -- \
    "Do the scripted task." </dev/null >"airlock-$1.out" 2>"airlock-$1.err"
  code=$?
  set -e
  [ "$code" = 0 ] || fail "run $1: airlock exited $code: $(cat "airlock-$1.err") mock: $(cat "mock-$1.log" 2>/dev/null) egress log: $(cat "$WORK"/state/airlock/sessions/*/egress.log)"
  grep -q '"step": ' "mock-$1.log" || fail "run $1: the model was never reached: $(cat "mock-$1.log") $(cat "airlock-$1.err")"
  if grep -q '"violations": \[{' "mock-$1.log"; then fail "run $1: the guest saw a secret: $(cat "mock-$1.log")"; fi
  grep -q 'login stays on this host' "airlock-$1.err" || fail "run $1 did not say the login is brokered"
  [ "$(cat project/BROKERED.md)" = "Written with a brokered ChatGPT login." ] || fail "run $1: the change did not land"
}

# Run 1: refresh on the host before the first request.
start_mock login_broker_codex 1
run_agent 1
python3 - mock-1.log <<'PY' || fail "the host did not refresh at auth.openai.com as Codex would, or the account check lacked the refreshed token: $(cat mock-1.log)"
import json, sys
entries = list(map(json.loads, open(sys.argv[1])))
refreshes = [e for e in entries if e.get("kind") == "oauth_token"]
assert len(refreshes) == 1, refreshes
r = refreshes[0]
assert r["path"] == "/oauth/token" and r["grant_type"] == "refresh_token", r
assert r["refresh_token"] == "rt_FAKE-REAL-REFRESH" and r["client_id"] == "app_EMoamEEZ73f0CkXaXp7hrann", r
checks = [e for e in entries if e.get("kind") == "accounts_check"]
assert checks, "no accounts/check"
for c in checks:
    assert c["authorization"] == "Bearer " + r["access_token"] and c["account"] == "acct-FAKE-1", c
PY
access=$(python3 -c 'import json,sys; print([e for e in map(json.loads, open(sys.argv[1])) if e.get("kind") == "oauth_token"][0]["access_token"])' mock-1.log)
rotated=$(grep -o '"rotated": "[0-9a-f]*"' mock-1.log | head -1 | cut -d'"' -f4)
responses=$(grep -l '"/backend-api/codex/responses' requests-1/*.json || true)
[ -n "$responses" ] || fail "no model request was dumped: $(ls requests-1)"
for f in $responses; do
  grep -q "\"Authorization\": \"Bearer $access\"" "$f" ||
    fail "a model request did not carry the refreshed token: $(grep -i authorization "$f")"
  grep -qi '"chatgpt-account-id": "acct-FAKE-1"' "$f" || fail "a model request lacks the account id: $(head -c 1500 "$f")"
done
no_placeholder_upstream requests-1
stored_login | grep -q "rt_rotated-$rotated" || fail "the rotated refresh token was not stored"
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log | head -1)
grep -q 'broker codex: POST /backend-api/codex/responses' "$log" || fail "the egress log lacks the broker's lines: $(cat "$log")"
grep -q 'broker codex: GET /backend-api/wham/accounts/check' "$log" || fail "the account check did not go through the broker's HTTPS side: $(cat "$log")"
if grep -q 'chatgpt.com.* allowed' "$log"; then fail "the guest reached chatgpt.com directly: $(cat "$log")"; fi
if grep -q 'egress blocked' airlock-1.err; then fail "a brokered run reported blocked egress: $(cat airlock-1.err)"; fi
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 2: the model API refuses the stored token once; Codex never sees the 401.
rm project/BROKERED.md
start_mock login_broker_codex 2 --reject-first-bearer
run_agent 2
grep -q '"kind": "rejected_bearer"' mock-2.log || fail "the mock never refused a token"
grep -q "\"kind\": \"oauth_token\".*\"refresh_token\": \"rt_rotated-$rotated\"" mock-2.log ||
  fail "after the 401 the broker did not refresh with the stored rotated token: $(cat mock-2.log)"
no_placeholder_upstream requests-2
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
# Run 3: the login made in a VM, on a terminal.
start_mock login_broker_codex 3
vm_login_start codex OPENAI_API_KEY=sk-SHOULD-NOT-REACH-THE-VM
pane_wait "FAKE-1234" 600
vm_login_done codex 3 "subscription (plus) of device@example.com"
python3 - mock-3.log <<'PY' || fail "the login in the VM did not run Codex's device-code flow: $(cat mock-3.log)"
import json, sys
entries = list(map(json.loads, open(sys.argv[1])))
kinds = [e.get("kind") for e in entries]
assert "device_usercode" in kinds and "oauth_code" in kinds, kinds
start = [e for e in entries if e.get("kind") == "device_usercode"][0]
assert start["client_id"] == "app_EMoamEEZ73f0CkXaXp7hrann", start
code = [e for e in entries if e.get("kind") == "oauth_code"][0]
assert code["code"] == "FAKE-DEVICE-AUTH-CODE" and code["code_verifier"] == "FAKE-VERIFIER", code
assert code["redirect_uri"] == "https://auth.openai.com/deviceauth/callback", code
PY
device=$(mock_rotation oauth_code 3)
stored_login | grep -q "rt_device-$device" || fail "the login made in the VM was not stored: $(stored_login | head -c 300)"
stored_login | grep -q 'acct-DEVICE-1' || fail "the stored login lacks its account"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
rm project/BROKERED.md
start_mock login_broker_codex 4
run_agent 4
requests_carry 4 /backend-api/codex/responses '"chatgpt-account-id": "acct-DEVICE-1"' "the login made in the VM was not used"
no_placeholder_upstream requests-4
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
ls /sys/class/net | grep -q airlock0 && fail "a tap device was left on the host"
echo "PASS: the ChatGPT login stayed on the host: Codex reached the model over HTTP and its account checks over HTTPS through the broker with placeholders, refreshed before expiry and after a 401; \`airlock login codex\` ran Codex's device-code login in a VM and stored it"
