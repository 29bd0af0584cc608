# Sourced by the credential-broker e2e tests (login_broker_test.sh,
# login_broker_gemini_test.sh, login_broker_codex_test.sh), after
# fake_internet.sh, test_user.sh and pane.sh; expects INET, SRC, pids and
# fail().

# start_mock SCENARIO RUN [FLAGS...]: the mock model server on the fake
# internet (192.0.2.10:443, TLS with api.crt) for one run, following
# tests/e2e/scenarios/SCENARIO.json, logging to mock-RUN.log and dumping
# each request under requests-RUN/; sets mock_pid. Waits for it and the DNS
# server (dns.out) to be ready.
start_mock() {
  local scenario=$1 run=$2
  shift 2
  mkdir -p "requests-$run" gate
  ip netns exec "$INET" python3 "$SRC/tests/e2e/mock_model_server.py" --host 192.0.2.10 --port 443 \
    --tls-cert api.crt --tls-key api.key --scenario "$SRC/tests/e2e/scenarios/$scenario.json" \
    --log "mock-$run.log" --dump-dir "requests-$run" --gate-dir gate --exit-after 1500 --quiet "$@" \
    >"mock-$run.out" 2>&1 &
  mock_pid=$!
  pids+=($mock_pid)
  for _ in $(seq 100); do grep -q '^PORT ' "mock-$run.out" && grep -q READY dns.out && break; sleep 0.1; done
  grep -q '^PORT ' "mock-$run.out" || fail "mock model server did not start: $(cat "mock-$run.out")"
}

# no_placeholder_upstream DIR: no request the API got (DIR: a run's dumps)
# carried a placeholder or an API key in a header.
no_placeholder_upstream() {
  python3 - "$1" <<'PY' || fail "a placeholder or an API key reached the API in a header"
import json, os, sys
for name in os.listdir(sys.argv[1]):
    headers = json.load(open(os.path.join(sys.argv[1], name)))["headers"]
    for k, v in headers.items():
        if "airlock-placeholder" in v or "SHOULD-NOT" in v:
            sys.exit("%s: %s: %s" % (name, k, v))
PY
}

# The login made in a VM on a terminal (`airlock login AGENT` in a tmux
# pane, pane.sh), as the test user; also expects HOST, WORK, CACHE,
# AIRLOCK and as_test_user (test_user.sh).
#
# vm_login_start AGENT [ENV-ARGS...]: logs AGENT out, makes the user's
# config trust the fake internet's CA (extra_ca_certs), and starts
# `airlock login AGENT` in a pane with the test's directories and env(1)'s
# ENV-ARGS (-u NAME, then NAME=VALUE).
vm_login_start() {
  local agent=$1
  shift
  "${as_test_user[@]}" env HOME="$WORK/home" XDG_DATA_HOME="$WORK/data" AIRLOCK_SECRET_STORE=file \
    "$AIRLOCK" logout "$agent" 2>/dev/null || fail "logout of $agent before its login in a VM failed"
  mkdir -p "$WORK/config/airlock"
  echo "extra_ca_certs: $WORK/ca.crt" >"$WORK/config/airlock/config.yaml"
  test_user_own "$WORK"
  pane_start ip netns exec "$HOST" "${as_test_user[@]}" env "$@" HOME="$WORK/home" XDG_STATE_HOME="$WORK/state" \
    XDG_CONFIG_HOME="$WORK/config" XDG_DATA_HOME="$WORK/data" AIRLOCK_CACHE_DIR="$CACHE" AIRLOCK_SECRET_STORE=file \
    "$AIRLOCK" login "$agent"
}

# vm_login_done AGENT RUN SAID: the pane's login exited 0 and said SAID
# (a grep pattern: what it stored, whose); the pane is gone after.
vm_login_done() {
  pane_wait "PANE-EXIT=" 300
  pane_screen | grep -q "PANE-EXIT=0" ||
    fail "airlock login $1 failed: $(pane_screen | grep -v '^$' | tail -20) mock: $(cat "mock-$2.log")"
  pane_screen | grep -q "$1 login stored in the file store .*: $3" ||
    fail "airlock login $1 did not say what it stored: $(pane_screen | grep -v '^$' | tail -10)"
  pane_stop
}

# mock_rotation KIND RUN: the "rotated" value of the first KIND entry of
# mock-RUN.log (the mock's name for the tokens it issued).
mock_rotation() {
  grep -o "\"kind\": \"$1\".*\"rotated\": \"[0-9a-f]*\"" "mock-$2.log" | head -1 |
    grep -o '"rotated": "[0-9a-f]*"' | cut -d'"' -f4
}

# requests_carry RUN PATH TEXT WHAT: every request to PATH dumped for RUN
# carries TEXT (at least one such request); else fails saying WHAT.
requests_carry() {
  local f found=
  for f in $(grep -l "\"$2" "requests-$1"/*.json); do
    found=1
    grep -qi -- "$3" "$f" || fail "run $1: $4: $(grep -i -e authorization -e account-id "$f")"
  done
  [ -n "$found" ] || fail "run $1: no request to $2 was dumped"
}
