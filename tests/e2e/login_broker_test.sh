#!/usr/bin/env bash
# Claude Code on a subscription login kept on the host (issue 15): the VM
# gets placeholders, the credential broker puts the real token on the wire.
#
#   tests/e2e/login_broker_test.sh AIRLOCK_BINARY
#
# A fake internet like locked_egress_test.sh: namespace "inet" with DNS on
# 192.0.2.53 (api.anthropic.com and platform.claude.com = 192.0.2.10) and
# the mock model server with TLS on 192.0.2.10:443 under a certificate from
# a CA made here; namespace "host", where airlock runs, trusting that CA
# through SSL_CERT_FILE. No default route anywhere.
#
# A FAKE subscription login (~/.claude/.credentials.json, access token
# expiring in a minute, and the account in ~/.claude.json) is imported with
# `airlock login --from-host`.
# Run 1 asserts: the broker refreshes it on the host first (the mock's
# /v1/oauth/token gets the real refresh token), the model API sees the
# rotated token with Claude's oauth beta header, the guest's environment,
# files and processes hold only placeholders (no real, rotated or API-key
# value; ANTHROPIC_API_KEY is set on the host and not forwarded), the model
# host is unreachable from the guest, and the change lands; the rotated
# tokens are in the store. Run 2 (no new login) asserts: the API refusing
# the token (401) never reaches the agent: the broker refreshes with the
# refresh token run 1 stored and retries, and the run succeeds. Run 3: a
# long-lived token typed on standard input. Run 4: the subscription login
# in Claude's interactive TUI in a tmux pane: no login or first-run
# question, a typed prompt reaches the model, /exit ends it, the change lands.
# Run 5: `airlock login claude-code` in a tmux pane: Claude's own sign-in
# in a VM (the pasted code exchanged, the account fetched), stored with its
# account; run 6 uses that login.
set -euo pipefail
command -v tmux >/dev/null || { echo "FAIL: tmux is not installed (scripts/setup installs it)" >&2; exit 1; }

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
. "$SRC/tests/e2e/test_user.sh"
. "$SRC/tests/e2e/broker_mock.sh"
. "$SRC/tests/e2e/pane.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-login-e2e.XXXXXX")
INET=airlock-login-inet-$$
HOST=airlock-login-host-$$
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
fake_tls_cert airlock-login-e2e-ca api.anthropic.com platform.claude.com

ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 \
  api.anthropic.com=192.0.2.10 platform.claude.com=192.0.2.10 >dns.out 2>&1 &
pids+=($!)

# The user's machine: a Claude subscription login whose access token expires in a minute.
mkdir -p home/.claude project
expires=$(( ($(date +%s) + 60) * 1000 ))
cat >home/.claude/.credentials.json <<JSON
{"claudeAiOauth":{"accessToken":"sk-ant-oat01-FAKE-REAL-ACCESS","refreshToken":"sk-ant-ort01-FAKE-REAL-REFRESH","expiresAt":$expires,"scopes":["user:inference","user:profile"],"subscriptionType":"max","rateLimitTier":"default_claude_max_20x"}}
JSON
cat >home/.claude.json <<JSON
{"numStartups": 3, "oauthAccount": {"accountUuid": "00000000-0000-4000-8000-000000000001", "emailAddress": "user@example.com", "organizationUuid": "00000000-0000-4000-8000-000000000002", "billingType": "stripe_subscription"}, "projects": {"/home/user/src": {"allowedTools": []}}}
JSON
echo "# Brokered project" >project/README.md

# The user airlock runs as: root's own session when not started by root,
# else airlock-4242 with its own copy of airlock and root's agent image.
test_user_up "$WORK" claude-code

as_user() {
  ip netns exec "$HOST" "${as_test_user[@]}" env -u ANTHROPIC_BASE_URL -u ANTHROPIC_AUTH_TOKEN HOME="$WORK/home" \
    XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" \
    AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file \
    SSL_CERT_FILE="$WORK/ca.crt" ANTHROPIC_API_KEY=sk-ant-api03-SHOULD-NOT-REACH-THE-VM "$@"
}
stored_login() { cat "$WORK/data/airlock/secrets/login.claude-code"; }

test_user_own "$WORK"
as_user "$AIRLOCK" login claude-code --from-host 2>login.err || fail "login --from-host: $(cat login.err)"
grep -q 'subscription (max)' login.err || fail "login did not say what it stored: $(cat login.err)"
stored_login | grep -q FAKE-REAL-REFRESH || fail "the store lacks the imported login"

run_agent() {
  set +e
  as_user "$AIRLOCK" run claude-code -w "$WORK/project" --review=auto --egress-profile locked -- \
    -p "Do the scripted task." --output-format json </dev/null >"airlock-$1.out" 2>"airlock-$1.err"
  code=$?
  set -e
  [ "$code" = 0 ] || fail "run $1: airlock exited $code: $(cat "airlock-$1.err") mock: $(cat "mock-$1.log" 2>/dev/null) egress log: $(cat "$WORK"/state/airlock/sessions/*/egress.log)"
  grep -q '"step": ' "mock-$1.log" || fail "run $1: the model API was never reached"
  if grep -q '"violations": \[{' "mock-$1.log"; then fail "run $1: the guest saw a secret: $(cat "mock-$1.log")"; fi
  grep -q 'login stays on this host' "airlock-$1.err" || fail "run $1 did not say the login is brokered"
}

# Run 1: refresh on the host before the first request.
start_mock login_broker 1
run_agent 1
grep -q '"kind": "oauth_token".*"refresh_token": "sk-ant-ort01-FAKE-REAL-REFRESH"' mock-1.log ||
  fail "the broker did not refresh the expiring login with the real refresh token: $(cat mock-1.log)"
rotated=$(grep -o '"rotated": "[0-9a-f]*"' mock-1.log | head -1 | cut -d'"' -f4)
[ -n "$rotated" ] || fail "no rotation in the mock's log"
grep -l '"/v1/messages' requests-1/*.json >/dev/null || fail "no model request was dumped"
for f in $(grep -l '"/v1/messages' requests-1/*.json); do
  grep -q "\"Authorization\": \"Bearer sk-ant-oat01-rotated-$rotated\"" "$f" ||
    fail "a model request did not carry the rotated real token: $(grep -i authorization "$f")"
  grep -q 'oauth-2025-04-20' "$f" || fail "a model request lacks Claude's oauth beta header: $(head -c 2000 "$f")"
done
no_placeholder_upstream requests-1
[ "$(cat project/BROKERED.md)" = "Written with a brokered login." ] || fail "the change did not land"
stored_login | grep -q "sk-ant-ort01-rotated-$rotated" || fail "the rotated refresh token was not stored"
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log | head -1)
grep -q 'broker claude-code: POST /v1/messages' "$log" || fail "the egress log lacks the broker's lines: $(cat "$log")"
if grep -q 'api.anthropic.com.* allowed' "$log"; then fail "the guest reached the model host directly: $(cat "$log")"; fi
grep -q "dns A api.anthropic.com -> nxdomain (reached through the host's credential broker)" "$log" ||
  fail "the guest's lookup of the model host is not logged as brokered: $(cat "$log")"
if grep -q 'egress blocked' airlock-1.err; then fail "a brokered run reported blocked egress: $(cat airlock-1.err)"; fi
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 2: the API refuses the stored token once; the agent never sees the 401.
rm project/BROKERED.md
start_mock login_broker 2 --reject-first-bearer
run_agent 2
grep -q '"kind": "rejected_bearer"' mock-2.log || fail "the mock never refused a token"
grep -q "\"kind\": \"oauth_token\".*\"refresh_token\": \"sk-ant-ort01-rotated-$rotated\"" mock-2.log ||
  fail "after the 401 the broker did not refresh with the stored rotated token: $(cat mock-2.log)"
[ "$(cat project/BROKERED.md)" = "Written with a brokered login." ] || fail "run 2's change did not land"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# A login whose refresh the API refuses fails before anything boots, naming the fix.
as_user "$AIRLOCK" login claude-code --from-host 2>/dev/null || fail "second login --from-host failed"
start_mock login_broker refused --refuse-refresh
set +e
as_user "$AIRLOCK" run claude-code -w "$WORK/project" --review=auto -- -p "Do the scripted task." </dev/null \
  >airlock-refused.out 2>airlock-refused.err
code=$?
set -e
[ "$code" = 65 ] || fail "a refused refresh: exit $code, not 65: $(cat airlock-refused.err)"
grep -q 'airlock login claude-code' airlock-refused.err || fail "no fix named: $(cat airlock-refused.err)"
grep -q booting airlock-refused.err && fail "a VM booted for a login that cannot work: $(cat airlock-refused.err)"
grep -q '"kind": "oauth_token_refused"' mock-refused.log || fail "the refresh never reached the API"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 3: a long-lived token (`claude setup-token`) typed on standard input
# instead: the guest gets CLAUDE_CODE_OAUTH_TOKEN as a placeholder, the API
# the token, and nothing is refreshed.
as_user "$AIRLOCK" logout claude-code 2>/dev/null || fail "logout failed"
[ ! -e "$WORK/data/airlock/secrets/login.claude-code" ] || fail "logout left the login in the store"
printf 'sk-ant-oat01-FAKE-REAL-LONG-LIVED\n' | as_user "$AIRLOCK" login claude-code 2>login3.err ||
  fail "login from stdin: $(cat login3.err)"
rm project/BROKERED.md
start_mock login_broker 3
run_agent 3
grep -q 'long-lived token login stays on this host' airlock-3.err || fail "run 3 did not say which login: $(cat airlock-3.err)"
grep -q '"kind": "oauth_token"' mock-3.log && fail "a long-lived token was refreshed"
for f in $(grep -l '"/v1/messages' requests-3/*.json); do
  grep -q '"Authorization": "Bearer sk-ant-oat01-FAKE-REAL-LONG-LIVED"' "$f" ||
    fail "a model request did not carry the long-lived token: $(grep -i authorization "$f")"
done
grep -q 'CLAUDE_CODE_OAUTH_TOKEN=sk-ant-oat01-airlock-placeholder' mock-3.log ||
  fail "the guest did not get the token's placeholder: $(cat mock-3.log)"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
# Run 4: the subscription login again, in Claude's interactive TUI in a real
# terminal (a tmux pane), as most users start it: no login prompt or other
# first-run question, a typed prompt reaches the model through the broker,
# /exit ends the session and the change lands.
as_user "$AIRLOCK" login claude-code --from-host 2>/dev/null || fail "login --from-host for run 4 failed"
rm project/BROKERED.md
start_mock login_broker 4
questions=("Select login method" "Do you want to use this API key" "Bypass Permissions mode" "Do you trust the files"
           "Choose the text style" "Please run /login")
pane_start ip netns exec "$HOST" "${as_test_user[@]}" env -u ANTHROPIC_BASE_URL -u ANTHROPIC_AUTH_TOKEN \
  HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" \
  AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file SSL_CERT_FILE="$WORK/ca.crt" PAGER=cat \
  ANTHROPIC_API_KEY=sk-ant-api03-SHOULD-NOT-REACH-THE-VM \
  "$AIRLOCK" run claude-code -w "$WORK/project" --review=auto --egress-profile locked
pane_wait "bypass permissions on" 600 "${questions[@]}"
pane_type "Do the scripted task."
for _ in $(seq 240); do grep -q '"text": "Done: the login stayed on the host."' mock-4.log 2>/dev/null && break; sleep 1; done
grep -q '"text": "Done: the login stayed on the host."' mock-4.log || fail "run 4: the typed prompt did not reach the model: $(tail -3 mock-4.log)"
if grep -q '"violations": \[{' mock-4.log; then fail "run 4: the guest saw a secret: $(cat mock-4.log)"; fi
pane_wait "Done: the login stayed on the host." 60 "${questions[@]}"
pane_type "/exit"
pane_wait "PANE-EXIT=" 300
pane_screen | grep -q "PANE-EXIT=0" || fail "run 4: the interactive run did not exit 0: $(pane_screen | grep -v '^$' | tail -20)"
[ "$(cat project/BROKERED.md)" = "Written with a brokered login." ] || fail "run 4's change did not land"
no_placeholder_upstream requests-4
pane_stop
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true

# Run 5: `airlock login claude-code` on a terminal runs Claude's own
# sign-in in a VM that reaches only platform.claude.com and
# api.anthropic.com (trusted through extra_ca_certs): it shows the sign-in
# link, the code the browser's last page gives is pasted, Claude exchanges
# it and fetches the profile, and the login and its account are stored
# before the VM stops. A run then uses it, brokered.
start_mock login_broker 5
vm_login_start claude-code -u ANTHROPIC_BASE_URL -u ANTHROPIC_AUTH_TOKEN ANTHROPIC_API_KEY=sk-ant-api03-SHOULD-NOT-REACH-THE-VM
pane_wait "Paste code here" 600
pane_screen | grep -q "https://claude.ai/oauth/authorize?" || fail "no sign-in link was shown: $(pane_screen | grep -v '^$' | tail -10)"
pane_type "FAKE-CLAUDE-CODE#state-from-the-browser"
vm_login_done claude-code 5 "subscription (max) of login@example.com"
python3 - mock-5.log <<'PY' || fail "the login in the VM did not run Claude's sign-in: $(cat mock-5.log)"
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
code = [e for e in entries if e.get("kind") == "claude_oauth_code"]
assert len(code) == 1, entries
assert code[0]["code"] == "FAKE-CLAUDE-CODE" and code[0]["code_verifier"], code
assert code[0]["client_id"] == "9d1c250a-e61b-44d9-88ed-5944d1962f5e", code
assert code[0]["redirect_uri"] == "https://platform.claude.com/oauth/code/callback", code
assert any(e.get("kind") == "claude_profile" for e in entries), entries
assert not any("SHOULD-NOT" in json.dumps(e) for e in entries), entries
PY
signed=$(mock_rotation claude_oauth_code 5)
stored_login | grep -q "sk-ant-ort01-login-$signed" || fail "the login made in the VM was not stored: $(stored_login | head -c 300)"
stored_login | grep -q "login@example.com" || fail "the account the login fetched was not stored: $(stored_login | head -c 600)"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
rm project/BROKERED.md
start_mock login_broker 6
run_agent 6
requests_carry 6 /v1/messages "\"Authorization\": \"Bearer sk-ant-oat01-login-$signed\"" "the login made in the VM was not used"
grep -q '"kind": "oauth_token"' mock-6.log && fail "a fresh login was refreshed"
[ "$(cat project/BROKERED.md)" = "Written with a brokered login." ] || fail "run 6's change did not land"
kill "$mock_pid"; wait "$mock_pid" 2>/dev/null || true
ls /sys/class/net | grep -q airlock0 && fail "a tap device was left on the host"
echo "PASS: the subscription login and a long-lived token stayed on the host: brokered, refreshed before expiry and after a 401, rotated tokens stored, only placeholders in the VM; the interactive TUI in a terminal asked no login question; \`airlock login claude-code\` ran Claude's sign-in in a VM, stored it with its account, and a run used it"
