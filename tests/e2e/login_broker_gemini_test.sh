#!/usr/bin/env bash
# Gemini CLI on a Google login kept on the host (issue 15): the VM gets a
# placeholder access token and Code Assist at the credential broker
# (CODE_ASSIST_ENDPOINT); the host refreshes the real token at Google's
# token endpoint, form-encoded with Gemini's public client id and secret.
#
#   tests/e2e/login_broker_gemini_test.sh AIRLOCK_BINARY
#
# The fake internet of login_broker_test.sh (fake_internet.sh): the mock
# model server with TLS on 192.0.2.10:443 as cloudcode-pa.googleapis.com
# and oauth2.googleapis.com, under a CA made here that the host side trusts
# through SSL_CERT_FILE. airlock runs as airlock-4242 when started by root.
#
# A FAKE Google login (~/.gemini/oauth_creds.json, access token expiring in
# a minute; ~/.gemini/google_accounts.json) is imported with `airlock login
# gemini --from-host`. Run 1 asserts: the host refreshes it first (the
# mock's /token gets the real refresh token, client id and secret as a
# form), Code Assist sees the refreshed token and the project its
# loadCodeAssist answered, the guest holds only the placeholder (no real or
# refreshed token, no oauth_creds.json, no API key: GEMINI_API_KEY is set on
# the host and not forwarded), the model hosts are unreachable from the
# guest, and the change lands. Run 2: Code Assist refuses the token once
# (401); the broker refreshes with the same refresh token (Google's do not
# rotate) and retries, and the run succeeds. Run 3: `airlock login gemini`
# in a tmux pane: Gemini's own Google sign-in in a VM (the pasted code
# exchanged, the e-mail fetched, /quit in its chat), stored with its
# e-mail; run 4 uses that login.
set -euo pipefail
command -v tmux >/dev/null || { echo "FAIL: tmux is not installed (scripts/setup installs it)" >&2; exit 1; }

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
. "$SRC/tests/e2e/test_user.sh"
. "$SRC/tests/e2e/broker_mock.sh"
. "$SRC/tests/e2e/pane.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-login-gemini-e2e.XXXXXX")
INET=airlock-glogin-inet-$$
HOST=airlock-glogin-host-$$
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
fake_tls_cert airlock-login-gemini-e2e-ca cloudcode-pa.googleapis.com oauth2.googleapis.com www.googleapis.com

ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 \
  cloudcode-pa.googleapis.com=192.0.2.10 oauth2.googleapis.com=192.0.2.10 www.googleapis.com=192.0.2.10 >dns.out 2>&1 &
pids+=($!)

# The user's machine: a Google login whose access token expires in a minute.
mkdir -p home/.gemini project
expires=$(( ($(date +%s) + 60) * 1000 ))
cat >home/.gemini/oauth_creds.json <<JSON
{"access_token":"ya29.FAKE-REAL-ACCESS","refresh_token":"1//FAKE-REAL-REFRESH","scope":"https://www.googleapis.com/auth/cloud-platform https://www.googleapis.com/auth/userinfo.email openid","token_type":"Bearer","id_token":"eyJhbGciOiJub25lIn0.FAKE-REAL-ID.","expiry_date":$expires}
JSON
echo '{"active":"user@example.com","old":[]}' >home/.gemini/google_accounts.json
echo "# Brokered project" >project/README.md

test_user_up "$WORK" gemini
as_user() {
  ip netns exec "$HOST" "${as_test_user[@]}" env -u GOOGLE_CLOUD_ACCESS_TOKEN -u CODE_ASSIST_ENDPOINT \
    HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" \
    AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file SSL_CERT_FILE="$WORK/ca.crt" \
    GEMINI_API_KEY=AIza-SHOULD-NOT-REACH-THE-VM "$@"
}
stored_login() { cat "$WORK/data/airlock/secrets/login.gemini"; }
test_user_own "$WORK"

as_user "$AIRLOCK" login gemini --from-host 2>login.err || fail "login --from-host: $(cat login.err)"
grep -q 'gemini login stored' login.err || fail "login did not say what it stored: $(cat login.err)"
if grep -q 'may have to log in again' login.err; then fail "a Google login was said to break on refresh: $(cat login.err)"; fi
stored_login | grep -q '1//FAKE-REAL-REFRESH' || fail "the store lacks the imported login"
if stored_login | grep -q 'FAKE-REAL-ID'; then fail "the id token was stored"; fi

run_agent() {
  set +e
  as_user "$AIRLOCK" run gemini -w "$WORK/project" --review=auto --egress-profile locked -- \
    -p "Do the scripted task." </dev/null >"airlock-$1.out" 2>"airlock-$1.err"
  code=$?
  set -e
  [ "$code" = 0 ] || fail "run $1: airlock exited $code: $(cat "airlock-$1.err") mock: $(cat "mock-$1.log" 2>/dev/null) egress log: $(cat "$WORK"/state/airlock/sessions/*/egress.log)"
  grep -q '"step": ' "mock-$1.log" || fail "run $1: Code Assist was never reached: $(cat "mock-$1.log")"
  if grep -q '"violations": \[{' "mock-$1.log"; then fail "run $1: the guest saw a secret: $(cat "mock-$1.log")"; fi
  grep -q 'login stays on this host' "airlock-$1.err" || fail "run $1 did not say the login is brokered"
  [ "$(cat project/BROKERED.md)" = "Written with a brokered Google login." ] || fail "run $1: the change did not land"
}

# Run 1: refresh on the host before the first request, form-encoded with Gemini's client.
start_mock login_broker_gemini 1
run_agent 1
python3 - mock-1.log <<'PY' || fail "the host did not refresh at Google's endpoint as Gemini would: $(cat mock-1.log)"
import json, sys
refreshes = [e for e in map(json.loads, open(sys.argv[1])) if e.get("kind") == "oauth_token"]
assert len(refreshes) == 1, refreshes
r = refreshes[0]
assert r["path"] == "/token" and r["form"] and r["grant_type"] == "refresh_token", r
assert r["refresh_token"] == "1//FAKE-REAL-REFRESH", r
assert r["client_id"].startswith("681255809395-") and r["client_secret"].startswith("GOCSPX-"), r
PY
rotated=$(grep -o '"rotated": "[0-9a-f]*"' mock-1.log | head -1 | cut -d'"' -f4)
generate=$(grep -l '"/v1internal:streamGenerateContent' requests-1/*.json || true)
[ -n "$generate" ] || fail "no Code Assist request was dumped: $(ls requests-1)"
for f in $generate; do
  grep -q "\"Authorization\": \"Bearer ya29.rotated-$rotated\"" "$f" ||
    fail "a Code Assist request did not carry the refreshed token: $(grep -i authorization "$f")"
  grep -q '"project": "airlock-mock-project"' "$f" || fail "Code Assist was used without its project: $(head -c 1500 "$f")"
done
grep -q '"kind": "load_code_assist"' mock-1.log || fail "Gemini never asked loadCodeAssist"
no_placeholder_upstream requests-1
stored_login | grep -q "ya29.rotated-$rotated" || fail "the refreshed token was not stored"
stored_login | grep -q '1//FAKE-REAL-REFRESH' || fail "the refresh token Google did not replace was lost"
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log | head -1)
grep -q 'broker gemini: POST /v1internal:streamGenerateContent' "$log" ||
  fail "the egress log lacks the broker's lines: $(cat "$log")"
if grep -q 'googleapis.com.* allowed' "$log"; then fail "the guest reached a Google API directly: $(cat "$log")"; fi
grep -q "dns A cloudcode-pa.googleapis.com -> nxdomain (reached through the host's credential broker)" "$log" ||
  fail "the guest's lookup of Code Assist is not logged as brokered: $(cat "$log")"
grep -q "dns A www.googleapis.com -> nxdomain (not needed: the login's account is on the host)" "$log" ||
  fail "Gemini's userinfo lookup is not logged as not needed: $(cat "$log")"
if grep -q 'egress blocked' airlock-1.err; then fail "a brokered run reported blocked egress: $(cat airlock-1.err)"; fi
grep -q 'your account login stays on this host' airlock-1.err || fail "run 1 did not say which login: $(cat airlock-1.err)"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 2: Code Assist refuses the stored token once; Gemini never sees the 401.
rm project/BROKERED.md
start_mock login_broker_gemini 2 --reject-first-bearer
run_agent 2
grep -q '"kind": "rejected_bearer"' mock-2.log || fail "the mock never refused a token"
grep -q '"kind": "oauth_token".*"refresh_token": "1//FAKE-REAL-REFRESH"' mock-2.log ||
  fail "after the 401 the broker did not refresh with the stored refresh token: $(cat mock-2.log)"
no_placeholder_upstream requests-2
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 3: `airlock login gemini` on a terminal runs Gemini's own Google
# sign-in in a VM that reaches only Google's token, userinfo and Code
# Assist hosts (trusted through extra_ca_certs): airlock says what to do,
# Gemini shows the link and asks for the code, exchanges it, opens its
# chat, and /quit ends the login; the login and its e-mail are stored.
# Run 4 uses that login, brokered.
start_mock login_broker_gemini 3
vm_login_start gemini -u GOOGLE_CLOUD_ACCESS_TOKEN -u CODE_ASSIST_ENDPOINT GEMINI_API_KEY=AIza-SHOULD-NOT-REACH-THE-VM
pane_wait "type /quit to store the login" 60
pane_wait "Enter the authorization code" 600
pane_screen | grep -q "https://accounts.google.com/o/oauth2/v2/auth?" || fail "no sign-in link was shown: $(pane_screen | grep -v '^$' | tail -10)"
pane_type "FAKE-GOOGLE-CODE"
pane_wait "Type your message" 480
pane_type "/quit"
vm_login_done gemini 3 "account of user@example.com"
python3 - mock-3.log <<'PY' || fail "the login in the VM did not run Gemini's sign-in: $(cat mock-3.log)"
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
code = [e for e in entries if e.get("kind") == "google_oauth_code"]
assert len(code) == 1, entries
c = code[0]
assert c["code"] == "FAKE-GOOGLE-CODE" and c["code_verifier"] and c["form"], c
assert c["client_id"].startswith("681255809395-") and c["client_secret"].startswith("GOCSPX-"), c
assert c["redirect_uri"] == "https://codeassist.google.com/authcode", c
assert any(e.get("kind") == "google_userinfo" for e in entries), entries
assert not any("SHOULD-NOT" in json.dumps(e) for e in entries), entries
PY
signed=$(mock_rotation google_oauth_code 3)
stored_login | grep -q "1//login-$signed" || fail "the login made in the VM was not stored: $(stored_login | head -c 300)"
stored_login | grep -q "user@example.com" || fail "the account was not stored: $(stored_login | head -c 600)"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
rm project/BROKERED.md
start_mock login_broker_gemini 4
run_agent 4
requests_carry 4 /v1internal:streamGenerateContent "\"Authorization\": \"Bearer ya29.login-$signed\"" "the login made in the VM was not used"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
ls /sys/class/net | grep -q airlock0 && fail "a tap device was left on the host"
echo "PASS: the Google login stayed on the host: Gemini reached Code Assist through the broker with a placeholder, refreshed form-encoded before expiry and after a 401; \`airlock login gemini\` ran Gemini's sign-in in a VM, stored it with its e-mail, and a run used it"
