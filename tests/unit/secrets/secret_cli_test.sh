#!/usr/bin/env bash
# `airlock secret set|ls|rm` as a user runs it: without a session bus the
# values go to the file store (0600 files); with gnome-keyring on a
# dbus-run-session bus they go to the real Secret Service (checked with
# secret-tool, an independent client) and never touch the disk under
# airlock's directories. A value given as an argument is refused without
# being repeated; no value appears in ls, doctor, or airlock's state. At a
# terminal (tmux) the prompt shows nothing typed, and Ctrl-C leaves the
# terminal as it was.
set -euo pipefail
airlock=$1
for tool in dbus-run-session gnome-keyring-daemon secret-tool python3 tmux; do
  command -v "$tool" >/dev/null || { echo "SKIPPED: $tool is missing (scripts/setup installs it)"; exit 77; }
done
work=$(mktemp -d /tmp/airlock-secret-test-XXXXXX)
trap 'rm -rf "$work"' EXIT
export HOME=$work/home XDG_DATA_HOME=$work/data XDG_CONFIG_HOME=$work/config XDG_STATE_HOME=$work/state
unset DBUS_SESSION_BUS_ADDRESS XDG_RUNTIME_DIR
mkdir -p "$HOME"
fail() { echo "FAIL: $*"; exit 1; }
value="s3cret-value-$RANDOM$RANDOM"

# 1. No session bus: the file store.
printf '%s\n' "$value" | "$airlock" secret set file-token --expires 2099-01-01 2>"$work/err" ||
  fail "set: $(cat "$work/err")"
grep -q "file store $XDG_DATA_HOME/airlock/secrets" "$work/err" || fail "set did not say where: $(cat "$work/err")"
[ "$(cat "$XDG_DATA_HOME/airlock/secrets/file-token")" = "$value" ] || fail "the file store lacks the value"
[ "$(stat -c %a "$XDG_DATA_HOME/airlock/secrets/file-token")" = 600 ] || fail "the value's file is not 0600"
[ "$(stat -c %a "$XDG_DATA_HOME/airlock/secrets")" = 700 ] || fail "the store's directory is not 0700"
"$airlock" secret ls >"$work/ls"
grep -Eq '^file-token +file +stdin +in [0-9]+ days +never$' "$work/ls" || fail "ls: $(cat "$work/ls")"
"$airlock" secret ls --json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert [(s["name"], s["store"], s["source"], s["expires_at"], s["last_used_at"]) for s in d] == \
    [("file-token", "file", "stdin", "2099-01-01T00:00:00Z", None)], d'
[ "$("$airlock" secret ls -q)" = file-token ] || fail "ls -q"
# Columns stay apart however long a name is.
long=a-secret-name-that-is-longer-than-the-column-was
printf v | "$airlock" secret set "$long" --expires 2099-01-01 2>/dev/null
"$airlock" secret ls | grep -Eq "^$long  +file  +stdin  +in [0-9]+ days  +never$" || fail "ls columns: $("$airlock" secret ls)"
# Setting it again says it replaced it, and that its date is gone.
printf w | "$airlock" secret set "$long" 2>"$work/err"
grep -q "replaced $long in the file store .* (it no longer expires 2099-01-01T00:00:00Z: give --expires again" "$work/err" ||
  fail "setting again: $(cat "$work/err")"
"$airlock" secret rm "$long" >/dev/null
# A value given as an argument, in any form, is refused, and not repeated.
for args in "other $value" "other -- $value" "other --token=$value" "GITHUB_TOKEN=$value"; do
  # shellcheck disable=SC2086
  if printf v | "$airlock" secret set $args >"$work/out" 2>&1; then fail "secret set $args was accepted"; fi
  grep -q "standard input" "$work/out" || fail "the refusal does not say how: $(cat "$work/out")"
  if grep -q "$value" "$work/out"; then fail "the refusal of '$args' repeated the value"; fi
done
# The same for an agent login's token, and a token given to --from-env as if it were a name.
token="sk-ant-oat01-$value"
for args in "claude-code $token" "claude-code -- $token" "claude-code --token=$token" "claude-code --from-env $token" \
            "claude-code --from-env=${value//-/_}"; do
  # shellcheck disable=SC2086
  if "$airlock" login $args </dev/null >"$work/out" 2>&1; then fail "login $args was accepted"; fi
  grep -Eq "standard input|not a variable name|is not set here" "$work/out" || fail "the refusal does not say how: $(cat "$work/out")"
  if grep -q "$value\|${value//-/_}" "$work/out"; then fail "the refusal of 'login $args' repeated the token"; fi
done
# A token typed where a name, an agent or another flag's value goes: refused
# (64), never repeated, never stored as a name.
for line in "login claude-code --with-token=$token" "login claude-code --from-host=$token" "login $token" "$token" \
            "logout $token" "secret ls $token" "login claude-code --expires $token" "secret rm ghp_$value" \
            "secret set ghp_$value"; do
  rc=0
  # shellcheck disable=SC2086
  printf v | "$airlock" $line >"$work/out" 2>&1 || rc=$?
  [ "$rc" = 64 ] || fail "'$line' exited $rc: $(sed "s/$value/VALUE/g" "$work/out")"
  if grep -q "$value" "$work/out"; then fail "the refusal of '$line' repeated the token"; fi
done
[ ! -e "$XDG_DATA_HOME/airlock/secrets/login.claude-code" ] || fail "a refused login was stored"
# A multi-line value (a PEM key) is kept byte for byte; a one-line value loses its newline.
printf -- '-----BEGIN KEY-----\nabc\n-----END KEY-----\n' | "$airlock" secret set pem 2>/dev/null
cmp -s <(printf -- '-----BEGIN KEY-----\nabc\n-----END KEY-----\n') "$XDG_DATA_HOME/airlock/secrets/pem" ||
  fail "the multi-line value was not kept byte for byte"
"$airlock" secret rm pem >/dev/null
if printf v | "$airlock" secret set past --expires 2001-01-01 >/dev/null 2>&1; then fail "a past expiry was accepted"; fi
if printf v | "$airlock" secret set bad --expires 2026-02-31 >/dev/null 2>&1; then fail "2026-02-31 was accepted"; fi
if "$airlock" secret set 'bad/name' </dev/null >"$work/out" 2>&1; then fail "a bad name was accepted"; fi
if "$airlock" secret set empty </dev/null >"$work/out" 2>&1; then fail "an empty value was accepted"; fi
if "$airlock" secret rm nothing-here >"$work/out" 2>&1; then fail "rm of a missing secret succeeded"; fi
grep -q "no secret named nothing-here" "$work/out" || fail "rm: $(cat "$work/out")"
"$airlock" doctor >"$work/doctor" 2>&1 || true
grep -Eq "secrets +new secrets go to the file store .*no session bus.*; 1 stored" "$work/doctor" ||
  fail "doctor: $(grep secrets "$work/doctor")"
mkdir -p "$work/project"
"$airlock" info claude-code -w "$work/project" >"$work/info" 2>&1 || fail "info: $(cat "$work/info")"
grep -Eqx " +secrets +1 in the file store $XDG_DATA_HOME/airlock/secrets \(airlock secret ls\); none enters the VM" \
  "$work/info" || fail "info: $(grep -i secret "$work/info")"
if grep -q "$value" "$work/info"; then fail "info showed a value"; fi

# 2. A session bus whose Secret Service has no unlocked keyring (an SSH login
#    to a desktop): the file store, and doctor says why.
dbus-run-session -- bash -c '
  printf %s "$1" | "$2" secret set bus-token 2>"$3/err3" || exit 31
  grep -q "file store.*keyring" "$3/err3" || exit 32
  "$2" doctor 2>/dev/null | grep -Eq "secrets +new secrets go to the file store .*keyring" || exit 33
  "$2" secret rm bus-token >/dev/null || exit 34
'  _ "$value" "$airlock" "$work" >/dev/null 2>"$work/bus-err" || fail "no-keyring step failed with $?: $(cat "$work/err3" 2>/dev/null)"

# 3. gnome-keyring, unlocked, on a session bus: the real Secret Service.
mkdir -p "$HOME/.gemini"
printf '{"access_token":"ya29.a-%s","refresh_token":"1//%s","expiry_date":4102444800000}' "$value" "$value" \
  >"$HOME/.gemini/oauth_creds.json"
dbus-run-session -- bash -c '
  set -u
  value=$1 airlock=$2 work=$3
  printf unlock | gnome-keyring-daemon --unlock --components=secrets >/dev/null 2>&1 || exit 10
  printf %s "$value" | "$airlock" secret set service-token 2>"$work/err2" || exit 11
  grep -q "Secret Service" "$work/err2" || exit 12
  [ "$(secret-tool lookup airlock-secret service-token)" = "$value" ] || exit 13
  [ ! -e "$XDG_DATA_HOME/airlock/secrets/service-token" ] || exit 14
  "$airlock" secret ls | grep -Eq "^service-token +secret-service +stdin" || exit 15
  "$airlock" doctor 2>/dev/null | grep -Eq "secrets +new secrets go to the Secret Service.*; 2 stored" || exit 16
  "$airlock" info claude-code -w "$work/project" --json | python3 -c "
import json, sys
d = json.load(sys.stdin)[\"secrets\"]
assert d[\"stored\"] == {\"file\": 1, \"secret-service\": 1} and d[\"in_vm\"] == [], d" || exit 22
  # Set again where the file store held it: it moves to the Secret Service.
  printf %s "$value-2" | "$airlock" secret set file-token 2>/dev/null || exit 17
  [ "$(secret-tool lookup airlock-secret file-token)" = "$value-2" ] || exit 18
  [ ! -e "$XDG_DATA_HOME/airlock/secrets/file-token" ] || exit 19
  "$airlock" secret rm service-token file-token >/dev/null || exit 20
  [ -z "$(secret-tool lookup airlock-secret service-token)" ] || exit 21
  # An agent login goes to the Secret Service too, and out of it at logout.
  "$airlock" login gemini --from-host 2>"$work/err2" || exit 23
  grep -q "gemini login stored in the Secret Service" "$work/err2" || exit 24
  secret-tool lookup airlock-secret login.gemini | grep -q "1//$value" || exit 25
  [ ! -e "$XDG_DATA_HOME/airlock/secrets/login.gemini" ] || exit 26
  "$airlock" info gemini -w "$work/project" | grep -Eq "^ +login +login.gemini \(from host file\), brokered" || exit 27
  "$airlock" logout gemini 2>/dev/null || exit 28
  [ -z "$(secret-tool lookup airlock-secret login.gemini)" ] || exit 29
' _ "$value" "$airlock" "$work" 2>"$work/bus-err" || fail "Secret Service step failed with $?: $(cat "$work/err2" 2>/dev/null; tail -3 "$work/bus-err")"

# 3b. A custom agent's long-lived token (login format `token`): piped in,
#     kept in the store, said to enter the VM as its variable; there is no
#     host file to import.
mkdir -p "$XDG_CONFIG_HOME/airlock"
cat >"$XDG_CONFIG_HOME/airlock/config.yaml" <<'YAML'
agents:
  acme:
    description: An in-house agent
    image: registry.example.com/acme:1
    command: [acme]
    login: {format: token, delivery: vm, token_env: ACME_TOKEN, hosts: [api.acme.example]}
YAML
printf 'acme-tok-%s\n' "$value" | AIRLOCK_SECRET_STORE=file "$airlock" login acme 2>"$work/acme.err" ||
  fail "a custom agent's token login: $(cat "$work/acme.err")"
grep -q 'acme login stored in the file store .*: long-lived token; acme cannot be brokered: .* as \$ACME_TOKEN (it enters the VM)' \
  "$work/acme.err" || fail "the token login did not say how it enters the VM: $(cat "$work/acme.err")"
[ "$(cat "$XDG_DATA_HOME/airlock/secrets/login.acme")" != "" ] || fail "the token login was not stored"
AIRLOCK_SECRET_STORE=file "$airlock" info acme 2>&1 | grep -q 'login.acme (from stdin), enters the VM: acme cannot be brokered; its login goes in as \$ACME_TOKEN' ||
  fail "info does not say the token enters the VM: $(AIRLOCK_SECRET_STORE=file "$airlock" info acme 2>&1 | grep login)"
set +e
AIRLOCK_SECRET_STORE=file "$airlock" login acme --from-host 2>"$work/acme-host.err"
code=$?
set -e
[ "$code" = 64 ] && grep -q 'no file on this host' "$work/acme-host.err" ||
  fail "--from-host of a token login: exit $code: $(cat "$work/acme-host.err")"
# A token's stated end is kept, shown by secret ls, and --expires dates
# tokens only.
printf 'acme-tok-%s\n' "$value" | AIRLOCK_SECRET_STORE=file "$airlock" login acme --expires 2099-12-31 2>"$work/acme.err" ||
  fail "login --expires: $(cat "$work/acme.err")"
AIRLOCK_SECRET_STORE=file "$airlock" secret ls --json | python3 -c '
import json, sys
e = [s for s in json.load(sys.stdin) if s["name"] == "login.acme"]
assert e and e[0]["expires_at"] == "2099-12-31T00:00:00Z", e' || fail "the login's --expires was not kept"
AIRLOCK_SECRET_STORE=file "$airlock" secret ls | grep -Eq '^login.acme +file +stdin +in [0-9]+ days' ||
  fail "secret ls does not show the login's end: $(AIRLOCK_SECRET_STORE=file "$airlock" secret ls)"
# Once past its end, info and doctor say so (the date moved back in the
# index, as time would).
python3 - "$XDG_DATA_HOME/airlock/secrets.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["secrets"]["login.acme"]["expires_at"] = 1000000000
json.dump(d, open(sys.argv[1], "w"))
PY
AIRLOCK_SECRET_STORE=file "$airlock" info acme 2>&1 | grep -q 'login.acme (from stdin) EXPIRED .* days ago: `airlock run` refuses it' ||
  fail "info does not say the login expired: $(AIRLOCK_SECRET_STORE=file "$airlock" info acme 2>&1 | grep -A1 login)"
AIRLOCK_SECRET_STORE=file "$airlock" doctor 2>&1 | grep -Eq '^warn +secrets .*expired: login.acme' ||
  fail "doctor does not warn of the expired login: $(AIRLOCK_SECRET_STORE=file "$airlock" doctor 2>&1 | grep -A1 secrets)"
rc=0; AIRLOCK_SECRET_STORE=file "$airlock" login gemini --from-host --expires 2099-12-31 2>"$work/err" || rc=$?
[ "$rc" = 64 ] && grep -q 'long-lived token' "$work/err" || fail "--expires with --from-host: rc=$rc $(cat "$work/err")"
# A token already past its own end (a JWT's exp) is refused, not stored.
expired_jwt="eyJhbGciOiJub25lIn0.$(printf '{"exp":1000000000}' | base64 -w0 | tr '+/' '-_' | tr -d =).sig"
rc=0; printf %s "$expired_jwt" | AIRLOCK_SECRET_STORE=file "$airlock" login acme 2>"$work/err" || rc=$?
[ "$rc" = 64 ] && grep -q 'expired .* days ago' "$work/err" || fail "an expired JWT login: rc=$rc $(cat "$work/err")"
rc=0; echo tok | AIRLOCK_SECRET_STORE=file "$airlock" login acme --expires 2001-01-01 2>"$work/err" || rc=$?
[ "$rc" = 64 ] && grep -q 'in the past' "$work/err" || fail "a past --expires: rc=$rc $(cat "$work/err")"
# A login goes out with logout (under the login's lock), not secret rm.
rc=0; AIRLOCK_SECRET_STORE=file "$airlock" secret rm login.acme 2>"$work/err" || rc=$?
[ "$rc" = 64 ] && grep -q "airlock logout acme" "$work/err" || fail "secret rm login.acme: rc=$rc $(cat "$work/err")"
AIRLOCK_SECRET_STORE=file "$airlock" logout acme 2>/dev/null || fail "logout acme failed"
rm "$XDG_CONFIG_HOME/airlock/config.yaml"

# 4. At a terminal: nothing typed is shown; Ctrl-C stores nothing and
#    leaves echo on.
sock="airlock-secret-$$"
tmuxrun() { tmux -L "$sock" "$@"; }
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$work"' EXIT
tmuxrun new-session -d -x 150 -y 10 "env HOME=$HOME XDG_DATA_HOME=$XDG_DATA_HOME XDG_STATE_HOME=$XDG_STATE_HOME \
  sh -c '$airlock secret set typed; echo rc=\$? > $work/rc1; stty -a > $work/stty1; \
         $airlock secret set typed2; echo rc=\$? > $work/rc2; \
         $airlock secret set typed3; echo rc=\$? > $work/rc3; sleep 30'"
for _ in $(seq 300); do tmuxrun capture-pane -p | grep -q "Enter the value of typed (not shown)" && break; sleep 0.1; done
tmuxrun send-keys -l "half-typed"
tmuxrun send-keys C-c
for _ in $(seq 300); do [ -s "$work/stty1" ] && break; sleep 0.1; done
[ "$(cat "$work/rc1")" = rc=130 ] || fail "Ctrl-C at the prompt: $(cat "$work/rc1")"
grep -Eq '(^| )echo( |$)' "$work/stty1" || fail "Ctrl-C left echo off: $(grep -o -- '-*echo ' "$work/stty1" | head -1)"
for _ in $(seq 300); do tmuxrun capture-pane -p | grep -q "Enter the value of typed2 (not shown)" && break; sleep 0.1; done
tmuxrun send-keys -l "a-wrong-start"
tmuxrun send-keys C-u  # clears what was typed
tmuxrun send-keys -l "tok-typed-$value"
tmuxrun send-keys Enter
for _ in $(seq 300); do [ -s "$work/rc2" ] && break; sleep 0.1; done
[ "$(cat "$work/rc2")" = rc=0 ] || fail "typed value: $(cat "$work/rc2"; tmuxrun capture-pane -p)"
[ "$(cat "$XDG_DATA_HOME/airlock/secrets/typed2")" = "tok-typed-$value" ] || fail "the typed value was not stored as typed"
if tmuxrun capture-pane -p | grep -q "tok-typed\|half-typed"; then fail "the prompt showed what was typed"; fi
[ ! -e "$XDG_DATA_HOME/airlock/secrets/typed" ] || fail "Ctrl-C stored a value"
# An arrow key typed unseen would be stored as its escape sequence: refused.
for _ in $(seq 300); do tmuxrun capture-pane -p | grep -q "Enter the value of typed3 (not shown)" && break; sleep 0.1; done
tmuxrun send-keys -l "abc"
tmuxrun send-keys Left
tmuxrun send-keys -l "x"
tmuxrun send-keys Enter
for _ in $(seq 300); do [ -s "$work/rc3" ] && break; sleep 0.1; done
[ "$(cat "$work/rc3")" = rc=64 ] && tmuxrun capture-pane -p -J | grep -q "holds a control key" ||
  fail "an arrow key in a typed value: $(cat "$work/rc3"; tmuxrun capture-pane -p -J)"
[ ! -e "$XDG_DATA_HOME/airlock/secrets/typed3" ] || fail "a value with an arrow key was stored"
"$airlock" secret rm typed2 >/dev/null

# No value anywhere airlock writes but the stores.
if grep -rq "$value" "$XDG_DATA_HOME/airlock/secrets.json" "$XDG_STATE_HOME" "$XDG_CONFIG_HOME" 2>/dev/null; then
  fail "a value reached airlock's index, state or config"
fi
[ "$("$airlock" secret ls -q)" = "" ] || fail "secrets left after rm: $("$airlock" secret ls -q)"

# A word that is none of a verb's sub-verbs is named, with the ones it has.
for line in "secret list-all" "config show"; do
  rc=0; "$airlock" $line >"$work/out" 2>&1 || rc=$?
  [ "$rc" = 64 ] && grep -q "unknown command '${line#* }'; its commands: " "$work/out" || fail "'$line': rc=$rc $(cat "$work/out")"
done
# An agent's login is `airlock login`'s to store, not `secret set`'s.
rc=0; echo v | "$airlock" secret set login.claude-code 2>"$work/err" || rc=$?
[ "$rc" = 64 ] && grep -q "airlock login claude-code" "$work/err" || fail "secret set login.X: rc=$rc $(cat "$work/err")"
# A store choice that names no store is refused, not ignored.
rc=0; echo v | AIRLOCK_SECRET_STORE=keyring "$airlock" secret set bogus 2>"$work/err" || rc=$?
[ "$rc" = 64 ] && grep -q "AIRLOCK_SECRET_STORE=keyring names no secret store" "$work/err" ||
  fail "a bogus store choice: rc=$rc $(cat "$work/err")"
# A data directory anybody may write to: refused with the fix, exit 65.
chmod 777 "$XDG_DATA_HOME"
rc=0; echo v | "$airlock" secret set open 2>"$work/err" || rc=$?
chmod 700 "$XDG_DATA_HOME"
[ "$rc" = 65 ] && grep -q "chmod go-w $XDG_DATA_HOME" "$work/err" || fail "a world-writable store: rc=$rc $(cat "$work/err")"
echo PASS
