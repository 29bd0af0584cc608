#!/usr/bin/env bash
# Builds a tiny root filesystem for VM tests in DIR from Debian's busybox-static
# (no network): /bin/busybox plus one symlink per applet at its usual place
# (/bin/sh, /usr/bin/env, ...), /etc/passwd and /etc/group with root and agent
# (uid 1000), an empty /etc/ssl/certs, /tmp (1777), /root, /home and the mount
# points /dev /proc /sys /run.
#
# Idempotent: a second run changes nothing, not even an mtime, so the rootfs
# keeps its erofs digest and airlock reuses the cached image.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: $0 DIR" >&2
  exit 64
fi
dir=$1
umask 022

busybox=""
for candidate in /bin/busybox /usr/bin/busybox; do
  if [ -x "$candidate" ]; then
    busybox=$candidate
    break
  fi
done
if [ -z "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
  echo "$0: no static busybox found; install it with 'sudo apt-get install busybox-static' (or scripts/setup)" >&2
  exit 65
fi

# put FILE CONTENT: writes FILE only when its content differs.
put() {
  if ! printf '%s' "$2" | cmp -s - "$1" 2>/dev/null; then
    printf '%s' "$2" >"$1"
  fi
}

# link PATH TARGET: makes PATH a symlink to TARGET unless it already is one.
link() {
  if [ "$(readlink "$1" 2>/dev/null)" != "$2" ]; then
    ln -sfn "$2" "$1"
  fi
}

mkdir -p "$dir"/{bin,sbin,usr/bin,usr/sbin,etc/ssl/certs,root,home,dev,proc,sys,run,tmp}
chmod 1777 "$dir/tmp"
chmod 0700 "$dir/root"
cmp -s "$busybox" "$dir/bin/busybox" || install -m 0755 "$busybox" "$dir/bin/busybox"

while read -r applet; do
  case "$applet" in
    bin/busybox | */*/*/* | "") continue ;;
    bin/*) link "$dir/$applet" busybox ;;
    */*/*) link "$dir/$applet" ../../bin/busybox ;;
    */*) link "$dir/$applet" ../bin/busybox ;;
  esac
done < <("$busybox" --list-full)
link "$dir/bin/sh" busybox

put "$dir/etc/passwd" 'root:x:0:0:root:/root:/bin/sh
agent:x:1000:1000:agent:/home/agent:/bin/sh
'
put "$dir/etc/group" 'root:x:0:
agent:x:1000:
'

# Fixed times (children before their directory): a rootfs made afresh in
# another directory has the same content digest, so airlock's rootfs cache
# keeps one image of it instead of one per test process.
find "$dir" -depth -exec touch -h -d @1700000000 {} +
