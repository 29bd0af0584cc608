#!/usr/bin/env bash
# Benchmark for image pulls (issue 6): `airlock image pull` of an image from a
# local registry (Debian's docker-registry on 127.0.0.1, plain HTTP) vs
# `skopeo copy` of the same image from the same registry into an OCI layout,
# measured in the same run with hyperfine. airlock does more (SHA-256 of each
# blob and of each layer's uncompressed stream, unpacking, the erofs image);
# both sides start from an empty destination every run.
# Usage: bench/pull.sh   (env: AIRLOCK=path/to/airlock LAYERS=4 LAYER_MIB=48 RUNS=5 BENCH_DIR=/var/tmp)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
AIRLOCK=${AIRLOCK:-$here/../build/airlock}
LAYERS=${LAYERS:-4}
LAYER_MIB=${LAYER_MIB:-48}
RUNS=${RUNS:-5}
BENCH_DIR=${BENCH_DIR:-/var/tmp}

for tool in hyperfine skopeo docker-registry python3 "$AIRLOCK"; do
  command -v "$tool" >/dev/null || { echo "bench: $tool not found (run scripts/setup, build airlock or set AIRLOCK=)" >&2; exit 65; }
done

work=$(mktemp -d "$BENCH_DIR/airlock-pull-bench.XXXXXX")
registry=""
cleanup() {
  if [ -n "$registry" ]; then kill "$registry" 2>/dev/null || true; wait "$registry" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$work/registry.yml" <<YML
version: 0.1
storage: {filesystem: {rootdirectory: $work/storage}}
http: {addr: 127.0.0.1:$port}
log: {level: error}
YML
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry=$!
for _ in $(seq 100); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null && break; sleep 0.1; done

# An OCI layout with LAYERS gzip layers of LAYER_MIB MiB of half-compressible files.
python3 - "$work/layout" "$LAYERS" "$LAYER_MIB" <<'PY'
import gzip, hashlib, io, json, os, random, sys, tarfile
out, layers, mib = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
os.makedirs(out + "/blobs/sha256")
def blob(data):
    d = hashlib.sha256(data).hexdigest()
    open("%s/blobs/sha256/%s" % (out, d), "wb").write(data)
    return "sha256:" + d, len(data)
rnd = random.Random(6)
descs, diff_ids = [], []
for n in range(layers):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as t:
        if n == 0:  # airlock boots only images with a /bin/sh
            sh = tarfile.TarInfo("bin/sh")
            sh.mode, sh.size = 0o755, 10
            t.addfile(sh, io.BytesIO(b"#!/bin/sh\n"))
        for f in range(mib):
            data = rnd.randbytes(512 * 1024) + bytes(512 * 1024)
            info = tarfile.TarInfo("layer%d/file%03d" % (n, f))
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
    diff_ids.append("sha256:" + hashlib.sha256(raw.getvalue()).hexdigest())
    d, size = blob(gzip.compress(raw.getvalue(), 1))
    descs.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": d, "size": size})
config = json.dumps({"architecture": "amd64", "os": "linux", "config": {"Cmd": ["/bin/sh"]},
                     "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
cd, cs = blob(config)
manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                       "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd, "size": cs},
                       "layers": descs}).encode()
md, ms = blob(manifest)
open(out + "/oci-layout", "w").write('{"imageLayoutVersion":"1.0.0"}')
json.dump({"schemaVersion": 2, "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
           "digest": md, "size": ms, "annotations": {"org.opencontainers.image.ref.name": "v1"}}]},
          open(out + "/index.json", "w"))
PY
skopeo copy -q --dest-tls-verify=false "oci:$work/layout:v1" "docker://127.0.0.1:$port/bench/img:v1"
size=$(du -sm "$work/layout/blobs" | cut -f1)
echo "bench: image of $LAYERS gzip layers, $size MiB compressed, $((LAYERS * LAYER_MIB)) MiB uncompressed"

hyperfine --runs "$RUNS" --export-json "$work/pull.json" \
  --prepare "rm -rf $work/cache $work/dest" \
  -n "airlock image pull" "AIRLOCK_CACHE_DIR=$work/cache $AIRLOCK image pull -q --verify=off 127.0.0.1:$port/bench/img:v1" \
  -n "skopeo copy" "skopeo copy -q --src-tls-verify=false docker://127.0.0.1:$port/bench/img:v1 oci:$work/dest:v1"
python3 - "$work/pull.json" "$size" <<'PY'
import json, sys
r = {x["command"]: x["median"] for x in json.load(open(sys.argv[1]))["results"]}
a, s, mib = r["airlock image pull"], r["skopeo copy"], float(sys.argv[2])
print("bench: pull median %.2f s (%.0f MiB/s) vs skopeo copy %.2f s (%.0f MiB/s): ratio %.2f"
      % (a, mib / a, s, mib / s, a / s))
PY
