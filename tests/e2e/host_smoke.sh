#!/usr/bin/env bash
# Host smoke test of one real agent CLI against tests/e2e/mock_model_server.py.
#
#   tests/e2e/host_smoke.sh claude-code|codex|gemini|opencode [--keep]
#
# For developers (not run by CI). No VM: the agent CLI runs on this host, in a
# temporary project directory with a fresh temporary $HOME, inside a network
# namespace that has only loopback (so nothing can reach outside hosts), against
# the mock server scripted by scenarios/edit_project.json. Then it checks the
# project: NEW.md written with exact content, one line appended to README.md,
# old.txt deleted, src/hello.c untouched, and the mock's log (all steps answered,
# no expectation violations).
#
# The pinned CLI is installed with npm on first use into
# ${AIRLOCK_NPM_VALIDATE_DIR:-~/.cache/airlock/npm-validate}/<agent>/.
# Needs: bash, python3, npm (node >= 20 for gemini), unshare (util-linux), ip.
# As root Claude Code needs IS_SANDBOX=1 for --dangerously-skip-permissions (set here).
# Environment knobs: SMOKE_TIMEOUT (seconds per agent run, default 300),
# SMOKE_NO_NETNS=1 (skip the network namespace; still loopback-only config),
# SMOKE_STRACE=1 (record connect() calls with strace and list those that were
# not to loopback or a local socket: attempts to reach outside hosts).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PY=${PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || PY=python3

# ---------------------------------------------------------------- inner part
# Runs inside the network namespace: start the mock, run the agent, stop the mock.
if [ "${1:-}" = "--inner" ]; then
    agent=$2 work=$3
    ip link set lo up 2>/dev/null || true
    "$PY" "$HERE/mock_model_server.py" --host 127.0.0.1 --port 0 \
        --scenario "$HERE/scenarios/edit_project.json" --log "$work/mock.log" \
        --dump-dir "$work/requests" --max-requests 200 --exit-after 900 >"$work/mock.port" 2>"$work/mock.err" &
    mock_pid=$!
    trap 'kill "$mock_pid" 2>/dev/null || true' EXIT
    for _ in $(seq 100); do
        grep -q '^PORT ' "$work/mock.port" 2>/dev/null && break
        sleep 0.1
    done
    port=$(awk '/^PORT /{print $2}' "$work/mock.port")
    [ -n "$port" ] || { echo "mock server did not start" >&2; cat "$work/mock.err" >&2; exit 1; }
    base="http://127.0.0.1:$port"
    home="$work/home"
    proj="$work/project"
    bin=$(cat "$work/bin")
    prompt="Carry out the scripted changes in this project."
    # Expand the placeholder in the home config files written by the outer part.
    find "$home" -type f -print0 | xargs -0 -r sed -i "s|@BASE_URL@|$base|g"

    common=(env -i PATH="$PATH" HOME="$home" USER="${USER:-agent}" LANG=C.UTF-8
            TERM=dumb TMPDIR="$work/tmp")
    case $agent in
    claude-code)
        cmd=("${common[@]}" ANTHROPIC_BASE_URL="$base" ANTHROPIC_API_KEY=mock-key
             CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1)
        [ "$(id -u)" = 0 ] && cmd+=(IS_SANDBOX=1)
        cmd+=("$bin" -p "$prompt" --output-format json --dangerously-skip-permissions)
        ;;
    codex)
        cmd=("${common[@]}" MOCK_API_KEY=mock-key
             "$bin" exec --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox
             "$prompt")
        ;;
    gemini)
        cmd=("${common[@]}" GEMINI_API_KEY=mock-key GOOGLE_GEMINI_BASE_URL="$base"
             "$bin" -p "$prompt" --yolo --skip-trust --output-format json)
        ;;
    opencode)
        cmd=("${common[@]}" OPENCODE_DISABLE_MODELS_FETCH=1
             npm_config_registry="$base/npm/"
             "$bin" run --auto -m mock/mock-model "$prompt")
        ;;
    esac
    if [ "${SMOKE_STRACE:-0}" = 1 ]; then
        cmd=(strace -f -qq -e trace=connect,sendto,sendmsg,sendmmsg -o "$work/strace.log" "${cmd[@]}")
    fi
    cd "$proj"
    t0=$(date +%s.%N)
    rc=0
    timeout "${SMOKE_TIMEOUT:-300}" "${cmd[@]}" </dev/null >"$work/agent.out" 2>"$work/agent.err" || rc=$?
    t1=$(date +%s.%N)
    echo "$rc" >"$work/agent.rc"
    "$PY" -c "import sys; print('%.2f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$t0" "$t1" >"$work/agent.time"
    exit 0
fi

# ---------------------------------------------------------------- outer part
agent=${1:-}
keep=0
[ "${2:-}" = "--keep" ] && keep=1
case $agent in
claude-code) pkg=@anthropic-ai/claude-code@2.1.332 rel=node_modules/@anthropic-ai/claude-code-linux-x64/claude ;;
codex)       pkg=@openai/codex@0.171.0 rel=node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex ;;
gemini)      pkg=@google/gemini-cli@0.61.0 rel=node_modules/@google/gemini-cli/bundle/gemini.js ;;
opencode)    pkg=opencode-ai@1.18.33 rel=node_modules/opencode-linux-x64/bin/opencode ;;
*) echo "usage: $0 claude-code|codex|gemini|opencode [--keep]" >&2; exit 2 ;;
esac

cache=${AIRLOCK_NPM_VALIDATE_DIR:-$HOME/.cache/airlock/npm-validate}/$agent
if [ ! -e "$cache/$rel" ]; then
    echo "== installing $pkg into $cache"
    mkdir -p "$cache"
    [ -f "$cache/package.json" ] || echo '{"private":true}' >"$cache/package.json"
    (cd "$cache" && npm install --no-audit --no-fund --loglevel=error "$pkg")
fi
[ -e "$cache/$rel" ] || { echo "agent binary missing: $cache/$rel" >&2; exit 1; }
if [ "$agent" = gemini ]; then
    node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
    [ "$node_major" -ge 20 ] || { echo "gemini needs node >= 20 (have $node_major)" >&2; exit 1; }
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/airlock-smoke-$agent.XXXXXX")
cleanup() { if [ $keep = 1 ]; then echo "kept: $work"; else rm -rf "$work"; fi; }
trap cleanup EXIT
mkdir -p "$work/project/src" "$work/home" "$work/tmp"
echo "$cache/$rel" >"$work/bin"

# The sample project.
printf '# Sample project\n\nUsed by the airlock host smoke test.\n' >"$work/project/README.md"
printf 'This file is deleted by the agent.\n' >"$work/project/old.txt"
printf '#include <stdio.h>\nint main(void) { puts("hello"); return 0; }\n' >"$work/project/src/hello.c"

# $HOME config files; @BASE_URL@ is replaced inside the namespace once the port is known.
h=$work/home
case $agent in
claude-code)
    # Nothing is required; this only skips first-run notices.
    printf '{\n  "hasCompletedOnboarding": true\n}\n' >"$h/.claude.json"
    ;;
codex)
    mkdir -p "$h/.codex"
    cat >"$h/.codex/config.toml" <<'EOF'
model = "gpt-5.5"
model_provider = "mock"

[model_providers.mock]
name = "mock"
base_url = "@BASE_URL@/v1"
env_key = "MOCK_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
EOF
    ;;
gemini)
    mkdir -p "$h/.gemini"
    cat >"$h/.gemini/settings.json" <<'EOF'
{
  "security": { "auth": { "selectedType": "gemini-api-key" } },
  "privacy": { "usageStatisticsEnabled": false }
}
EOF
    ;;
opencode)
    mkdir -p "$h/.config/opencode"
    cat >"$h/.config/opencode/opencode.json" <<'EOF'
{
  "$schema": "https://opencode.ai/config.json",
  "autoupdate": false,
  "share": "disabled",
  "model": "mock/mock-model",
  "provider": {
    "mock": {
      "npm": "@ai-sdk/openai-compatible",
      "name": "Mock",
      "options": { "baseURL": "@BASE_URL@/v1", "apiKey": "mock-key" },
      "models": { "mock-model": { "name": "Mock model", "tool_call": true } }
    }
  }
}
EOF
    ;;
esac

echo "== running $agent ($pkg) in $work"
self="$HERE/$(basename "${BASH_SOURCE[0]}")"
if [ "${SMOKE_NO_NETNS:-0}" = 1 ]; then
    bash "$self" --inner "$agent" "$work"
elif [ "$(id -u)" = 0 ]; then
    unshare -n bash "$self" --inner "$agent" "$work"
else
    unshare -n --map-current-user bash "$self" --inner "$agent" "$work"
fi

rc=$(cat "$work/agent.rc")
secs=$(cat "$work/agent.time")
echo "== agent exit code $rc, ${secs}s"
fail=0
check() { if eval "$2"; then echo "ok   $1"; else echo "FAIL $1"; fail=1; fi; }
p=$work/project
check "exit code 0" '[ "$rc" = 0 ]'
check "NEW.md has the scripted content" \
    '[ "$(cat "$p/NEW.md" 2>/dev/null; echo x)" = "$(printf "# New file\n\nWritten by the airlock mock model.\nx")" ]'
check "README.md got one appended line" \
    '[ "$(cat "$p/README.md"; echo x)" = "$(printf "# Sample project\n\nUsed by the airlock host smoke test.\nAppended by the agent.\nx")" ]'
check "old.txt deleted" '[ ! -e "$p/old.txt" ]'
check "src/hello.c untouched" \
    '[ "$(cat "$p/src/hello.c")" = "$(printf "#include <stdio.h>\nint main(void) { puts(\"hello\"); return 0; }")" ]'
extra=$(cd "$p" && find . -mindepth 1 | sort | grep -vxE '\./(README\.md|NEW\.md|src|src/hello\.c)' || true)
check "no other files in the project${extra:+ (found: $(echo $extra))}" '[ -z "$extra" ]'
"$PY" - "$work/mock.log" <<'EOF' || fail=1
import json, sys
entries = [json.loads(l) for l in open(sys.argv[1])]
agent = [e for e in entries if e.get("kind") == "agent"]
final = [e for e in agent if e["step"] >= e["steps_total"]]
viol = [v for e in entries for v in e.get("violations", [])]
print("mock: %d requests (%s)" % (len(entries), ", ".join(sorted({"%s %s" % (e["method"], e["path"].split("?")[0]) for e in entries}))))
ok = bool(final) and not viol
print(("ok  " if final else "FAIL") + " mock answered all %d steps" % (agent[0]["steps_total"] if agent else -1))
if viol:
    print("FAIL mock expectation violations: %s" % json.dumps(viol)[:600])
else:
    print("ok   no expectation violations")
sys.exit(0 if ok else 1)
EOF
if [ -f "$work/strace.log" ]; then
    "$PY" - "$work/strace.log" <<'EOF' || fail=1
import re, sys
calls = outside = 0
seen = set()
for line in open(sys.argv[1], errors="replace"):
    if not re.search(r"\b(connect|sendto|sendmsg|sendmmsg)\(", line):
        continue
    calls += 1
    for port, addr in re.findall(
            r"sin6?_port=htons\((\d+)\), .*?inet_(?:addr|pton)\((?:AF_INET6?, )?\"([^\"]+)\"", line):
        if addr.startswith("127.") or addr in ("::1", "::ffff:127.0.0.1"):
            continue
        outside += 1
        seen.add("%s:%s" % (addr, port))
print("%s strace: %d connect/send calls, %d to outside hosts%s" % (
    "FAIL" if outside else "ok  ", calls, outside,
    (": " + " ".join(sorted(seen))) if seen else ""))
sys.exit(1 if outside else 0)
EOF
fi
if [ $fail != 0 ]; then
    echo "--- agent stdout (tail)"; tail -c 2000 "$work/agent.out" || true
    echo "--- agent stderr (tail)"; tail -c 3000 "$work/agent.err" || true
    echo "--- mock stderr (tail)"; tail -n 20 "$work/mock.err" || true
    echo "RESULT $agent: FAILED (${secs}s)"
    exit 1
fi
echo "RESULT $agent: passed (${secs}s)"
