#!/usr/bin/env bash
# Builds one agent's local image from scratch and checks it.
#
#   tests/e2e/image_build_test.sh AIRLOCK_BINARY AGENT
#
# Uses an empty temporary cache (AIRLOCK_CACHE_DIR), so it bootstraps the
# Debian base with mmdebstrap and downloads the agent from npm (claude-code:
# ~250 MB of downloads, a few minutes). Then: the image is an erofs file under
# the cache's images/ directory holding the agent's program, /bin/sh and the
# `agent` user; a second build is answered from the cache. Needs root (or
# unprivileged user namespaces) for mmdebstrap, npm, and erofs-utils.
# AIRLOCK_E2E_KEEP_CACHE=1 keeps the temporary cache.
set -euo pipefail

AIRLOCK=$1
AGENT=$2
CACHE=$(mktemp -d "${TMPDIR:-/tmp}/airlock-image-e2e.XXXXXX")
if [ "${AIRLOCK_E2E_KEEP_CACHE:-0}" != 1 ]; then trap 'rm -rf "$CACHE"' EXIT; fi
export AIRLOCK_CACHE_DIR=$CACHE

fail() { echo "FAIL: $*" >&2; exit 1; }

start=$(date +%s)
image=$("$AIRLOCK" image build "$AGENT")
echo "built $image in $(( $(date +%s) - start )) s"

case $image in "$CACHE"/images/*.erofs) ;; *) fail "image path $image is not under $CACHE/images" ;; esac
[ -f "$image" ] || fail "$image does not exist"
magic=$(od -An -tx4 -j1024 -N4 "$image" | tr -d ' ')
[ "$magic" = e0f5e1e2 ] || fail "$image is not erofs (magic $magic)"
ls "$CACHE"/images/base-*.tar >/dev/null || fail "no cached base tarball"

install_as=$("$AIRLOCK" agents show "$AGENT" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["image"]["install_as"])')
for path in "/usr/local/bin/$install_as" /bin/sh /usr/bin/git /usr/bin/rg /etc/ssl/certs/ca-certificates.crt /home/agent; do
  dump.erofs --path="$path" "$image" >/dev/null 2>&1 || fail "$path missing from the image"
done
dump.erofs --path="/usr/local/bin/$install_as" "$image" | grep -q 'Size: *[1-9]' ||
  fail "/usr/local/bin/$install_as is empty"

again_start=$(date +%s)
again=$("$AIRLOCK" image build "$AGENT" 2>&1 >/dev/null | tail -1)
[ "$("$AIRLOCK" image build -q "$AGENT")" = "$image" ] || fail "second build gave another path"
echo "$again"
(( $(date +%s) - again_start < 10 )) || fail "cached build took too long"
echo "PASS: $AGENT image $(( $(stat -c %s "$image") >> 20 )) MiB"
