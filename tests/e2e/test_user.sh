# Sourced by the e2e tests that run airlock as an unprivileged user
# (login_broker_test.sh, login_broker_gemini_test.sh).
#
# test_user_up WORK AGENT: when the test runs as root, makes the account
# airlock-4242 (with subordinate ids), gives it its own copy of airlock
# under WORK/bin and of root's image of AGENT under WORK/cache (hard links
# where possible), opens /dev/net/tun to it (restored by test_user_down),
# and sets AIRLOCK, CACHE and as_test_user (the command prefix that drops
# to the account). When not run by root, it leaves AIRLOCK alone and uses
# the caller's own cache and session. Expects AIRLOCK and fail().
# test_user_own WORK: gives WORK to the account (the seeded cache files
# stay root's, shared by hard link: only directories change owner there).
test_user_up() {
  local work=$1 agent=$2 uid=4242 image sub
  CACHE=${AIRLOCK_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/airlock}
  as_test_user=()
  test_user_uid=$(id -u)
  [ "$test_user_uid" = 0 ] || return 0
  test_user_uid=$uid
  flock /tmp/airlock-test-account.lock sh -c "
    set -e
    getent group $uid >/dev/null || groupadd -g $uid airlock-$uid
    getent passwd $uid >/dev/null || useradd -u $uid -g $uid -M -N -d /nonexistent -s /usr/sbin/nologin airlock-$uid
    [ \"\$(getent passwd $uid | cut -d: -f1)\" = airlock-$uid ] || { echo 'uid $uid is not airlock-$uid'; exit 1; }
    for kind in uid gid; do
      grep -qE '^(airlock-$uid|$uid):' /etc/sub\$kind 2>/dev/null ||
        usermod --add-sub\${kind}s $((2000000000 + (uid % 1000) * 65536))-$((2000000000 + (uid % 1000) * 65536 + 65535)) airlock-$uid
    done" || fail "cannot make the test account airlock-$uid"
  image=$("$AIRLOCK" image build -q "$agent" | head -1)
  [ -f "$image" ] || fail "no $agent image: $image"
  mkdir -p "$work/bin" "$work/cache/images"
  cp "$AIRLOCK" "$(dirname "$AIRLOCK")/airlock-init" "$work/bin/"
  for sub in assets downloads; do
    [ -d "$CACHE/$sub" ] && { cp -al "$CACHE/$sub" "$work/cache/" 2>/dev/null || cp -a "$CACHE/$sub" "$work/cache/" 2>/dev/null || true; }
  done
  ln "$image" "$work/cache/images/" 2>/dev/null || cp "$image" "$work/cache/images/"
  # Root's lock files are not the account's to open: it makes its own.
  find "$work/cache" -name .lock -delete
  test_user_tun_mode=$(stat -c %a /dev/net/tun)
  chmod 0666 /dev/net/tun
  AIRLOCK=$work/bin/airlock
  CACHE=$work/cache
  as_test_user=(setpriv --reuid=$uid --regid=$uid --clear-groups)
}

test_user_own() {
  local work=$1
  [ "$(id -u)" = 0 ] || return 0
  find "$work" -path "$work/cache" -prune -o -exec chown -h "$test_user_uid:$test_user_uid" {} +
  find "$work/cache" -type d -exec chown "$test_user_uid:$test_user_uid" {} +
  chmod 0755 "$work"
}

# test_user_down: puts /dev/net/tun's mode back.
test_user_down() {
  [ -z "${test_user_tun_mode:-}" ] || chmod "$test_user_tun_mode" /dev/net/tun 2>/dev/null || true
}
