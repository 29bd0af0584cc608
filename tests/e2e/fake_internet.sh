# Sourced by the e2e tests that need a fake internet (locked_egress_test.sh,
# login_broker_test.sh): two network namespaces, none with a default route.

# fake_internet_up INET HOST ADDRESS...: namespace INET holds ADDRESS.../24
# on in0 (the fake internet's hosts; DNS is expected on 192.0.2.53),
# namespace HOST (where airlock runs) holds 192.0.2.1/24 on up0, and its
# resolv.conf (via /etc/netns) names 192.0.2.53.
fake_internet_up() {
  local inet=$1 host=$2
  shift 2
  ip netns add "$inet"
  ip netns add "$host"
  ip -n "$inet" link set lo up
  ip -n "$host" link set lo up
  ip link add up0 netns "$host" type veth peer name in0 netns "$inet"
  ip -n "$host" addr add 192.0.2.1/24 dev up0
  ip -n "$host" link set up0 up
  for a in "$@"; do ip -n "$inet" addr add "$a/24" dev in0; done
  ip -n "$inet" link set in0 up
  mkdir -p "/etc/netns/$host"
  echo "nameserver 192.0.2.53" >"/etc/netns/$host/resolv.conf"
}

# fake_internet_down INET HOST: removes both namespaces and HOST's resolv.conf.
fake_internet_down() {
  ip netns del "$1" 2>/dev/null || true
  ip netns del "$2" 2>/dev/null || true
  rm -rf "/etc/netns/$2"
}

# fake_internet_teardown: the end of a test on the fake internet (in its
# EXIT trap, after the test's own steps): kills the servers in pids, removes
# the namespaces INET and HOST, and WORK.
fake_internet_teardown() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  fake_internet_down "$INET" "$HOST"
  rm -rf "$WORK"
}

# fake_tls_cert CA_NAME NAME...: in the current directory, a CA (ca.crt,
# ca.key) and a server certificate (api.crt, api.key) for the DNS NAMEs.
fake_tls_cert() {
  local ca=$1 san
  shift
  san=$(printf 'DNS:%s,' "$@")
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt -days 2 \
    -subj "/CN=$ca" 2>/dev/null
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout api.key -out api.csr \
    -subj "/CN=$1" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth\n' "${san%,}" >api.ext
  openssl x509 -req -in api.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out api.crt -days 2 -extfile api.ext \
    2>/dev/null
}

# fake_internet_mock_model N SCENARIO: starts the mock model API
# (mock_model_server.py, scripted by SCENARIO, a file under
# tests/e2e/scenarios) on the HOST namespace's loopback, logging to
# mock-N.log in the current directory; waits until it listens and sets
# mock_pid and mock_port (for --host-port and the agent's base URL). Needs
# SRC, HOST, WORK, pids and the test's wait_for.
fake_internet_mock_model() {
  ip netns exec "$HOST" python3 "$SRC/tests/e2e/mock_model_server.py" --port 0 \
    --scenario "$SRC/tests/e2e/scenarios/$2" --log "mock-$1.log" --gate-dir "$WORK" \
    --exit-after 1500 --quiet >"mock-$1.out" 2>&1 &
  mock_pid=$!
  pids+=($mock_pid)
  wait_for "mock-$1.out" '^PORT '
  mock_port=$(sed -n 's/^PORT //p' "mock-$1.out")
}
