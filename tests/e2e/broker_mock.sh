# Sourced by the credential-broker e2e tests (login_broker_test.sh,
# login_broker_gemini_test.sh, login_broker_codex_test.sh), after
# fake_internet.sh; expects INET, SRC, pids and fail().

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
