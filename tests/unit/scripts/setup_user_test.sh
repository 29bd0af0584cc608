#!/usr/bin/env bash
# scripts/setup, run through sudo by a user, readies that user for airlock
# without root: a range of 65536 subordinate uids and gids after every range
# already given out (what mmdebstrap --mode=unshare needs to build agent
# images), the group of /dev/kvm, and a /dev/net/tun every user may open;
# says each change; a second run changes nothing. Needs root (it creates a throwaway user); SKIPPED otherwise.
set -euo pipefail
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIPPED: needs root (creates a throwaway user)"
  exit 77
fi
root=$(cd "$(dirname "$0")/../../.." && pwd)
user=airlock-setup-t$$
tun_mode=$(stat -c %a /dev/net/tun 2>/dev/null || true)
cleanup() {
  userdel "$user" 2>/dev/null || true
  sed -i "/^$user:/d" /etc/subuid /etc/subgid 2>/dev/null || true
  [ -z "$tun_mode" ] || chmod "$tun_mode" /dev/net/tun
}
trap cleanup EXIT
useradd --no-create-home --shell /usr/sbin/nologin "$user"
# useradd may give ranges itself: start from none.
sed -i "/^$user:/d" /etc/subuid /etc/subgid 2>/dev/null || true
before=$(cat /etc/subuid /etc/subgid 2>/dev/null | awk -F: 'BEGIN { m = 100000 } $2 + $3 > m { m = $2 + $3 } END { print m }')

out=$(SUDO_USER=$user "$root/scripts/setup")
fail() { echo "FAIL: $*"; echo "$out"; exit 1; }
for f in /etc/subuid /etc/subgid; do
  line=$(grep "^$user:" "$f") || fail "no range for $user in $f"
  start=$(echo "$line" | cut -d: -f2)
  count=$(echo "$line" | cut -d: -f3)
  [ "$count" -ge 65536 ] || fail "$f gives $count ids"
  [ "$start" -ge "$before" ] || fail "$f range $start overlaps ranges given before (ending at $before)"
done
echo "$out" | grep -q "gave $user the subordinate uids" || fail "setup did not say it changed /etc/subuid"
if [ -n "$tun_mode" ]; then
  [ "$(stat -c %a /dev/net/tun)" = 666 ] || fail "/dev/net/tun is $(stat -c %a /dev/net/tun), not 0666"
  [ "$tun_mode" = 666 ] || echo "$out" | grep -q "made /dev/net/tun usable" || fail "setup did not say it changed /dev/net/tun"
fi
if [ -e /dev/kvm ] && [ "$(stat -c %G /dev/kvm)" != root ]; then
  id -nG "$user" | tr ' ' '\n' | grep -qx "$(stat -c %G /dev/kvm)" || fail "$user is not in the group of /dev/kvm"
fi

again=$(SUDO_USER=$user "$root/scripts/setup")
if echo "$again" | grep -q "gave\|added"; then
  out=$again
  fail "a second run changed something"
fi
[ "$(grep -c "^$user:" /etc/subuid)" -eq 1 ] || fail "a second range was added"
echo "PASS"
