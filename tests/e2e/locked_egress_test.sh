#!/usr/bin/env bash
# Claude Code under `--egress-profile locked` on a fake internet.
#
#   tests/e2e/locked_egress_test.sh AIRLOCK_BINARY
#
# Two network namespaces made here: "inet" (the fake internet: DNS on
# 192.0.2.53 answering api.anthropic.com=192.0.2.10 and github.com=192.0.2.20,
# the mock model server with TLS on 192.0.2.10:443 under a certificate from a
# CA made here, an HTTP server on 192.0.2.20:80) and "host" (where airlock
# runs; its resolv.conf names 192.0.2.53 via /etc/netns). Neither has a
# default route: no packet can leave the namespaces this test made.
# Asserts: the agent reaches the model API by name over TLS and its change
# lands; a name not on the list gets no address and an address by literal
# gets nothing; the egress log and the end-of-session summary show both.
set -euo pipefail

AIRLOCK=$1
SRC=$(cd "$(dirname "$0")/../.." && pwd)
. "$SRC/tests/e2e/fake_internet.sh"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/airlock-locked-e2e.XXXXXX")
INET=airlock-e2e-inet-$$
HOST=airlock-e2e-host-$$
pids=()
cleanup() {
  fake_internet_teardown
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

fake_internet_up "$INET" "$HOST" 192.0.2.10 192.0.2.20 192.0.2.53

# A CA and a certificate for api.anthropic.com; the guest trusts the CA via
# NODE_EXTRA_CA_CERTS (a file in the project: *.crt is not a secret pattern).
cd "$WORK"
fake_tls_cert airlock-e2e-ca api.anthropic.com

ip netns exec "$INET" python3 "$SRC/tests/egress/fake_dns.py" 192.0.2.53 \
  api.anthropic.com=192.0.2.10 github.com=192.0.2.20 >dns.out 2>&1 &
pids+=($!)
mkdir -p site gate && echo fake-internet-reached >site/index.html
ip netns exec "$INET" python3 -m http.server --bind 192.0.2.20 --directory site 80 >http.out 2>&1 &
pids+=($!)
ip netns exec "$INET" python3 "$SRC/tests/e2e/mock_model_server.py" --host 192.0.2.10 --port 443 \
  --tls-cert api.crt --tls-key api.key --scenario "$SRC/tests/e2e/scenarios/locked_egress.json" \
  --log mock.log --gate-dir gate --exit-after 1500 --quiet >mock.out 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q '^PORT ' mock.out && grep -q READY dns.out && break; sleep 0.1; done
grep -q '^PORT ' mock.out || fail "mock model server did not start: $(cat mock.out)"

mkdir -p project
echo "# Locked project" >project/README.md
cp ca.crt project/test-ca.crt
set +e
ip netns exec "$HOST" env -u ANTHROPIC_BASE_URL XDG_STATE_HOME="$WORK/state" XDG_CONFIG_HOME="$WORK/config" \
  ANTHROPIC_API_KEY=airlock-e2e "$AIRLOCK" run claude-code -w "$WORK/project" --review=auto \
  --egress-profile locked --env NODE_EXTRA_CA_CERTS=/workspace/test-ca.crt -- \
  -p "Do the scripted task." --output-format json </dev/null >airlock.out 2>airlock.err
code=$?
set -e
[ "$code" = 0 ] || fail "airlock exited $code: $(cat airlock.err) mock: $(cat mock.log 2>/dev/null)"
[ "$(cat project/NEW.md)" = "Written under the locked profile." ] || fail "NEW.md did not land: $(cat airlock.err)"
grep -q '"step": ' mock.log || fail "the model API was never reached"
if grep -q '"violations": \[{' mock.log; then fail "a blocked path got through: $(cat mock.log)"; fi
grep -q 'literal-done' mock.log || fail "the agent did not run the literal check: $(cat mock.log)"
log=$(ls "$WORK"/state/airlock/sessions/*/egress.log)
grep -q 'api.anthropic.com' "$log" || fail "egress log lacks the allowed model API: $(cat "$log")"
grep -q 'github.com' "$log" || fail "egress log lacks the blocked name: $(cat "$log")"
grep -q 'github.com' airlock.err || fail "the end-of-session summary lacks github.com: $(cat airlock.err)"
grep -q '192.0.2.20' airlock.err || fail "the end-of-session summary lacks 192.0.2.20: $(cat airlock.err)"
ls /sys/class/net | grep -q airlock0 && fail "a tap device was left on the host"
echo "PASS: locked profile: model API over TLS by name works, github.com and 192.0.2.20 blocked"
