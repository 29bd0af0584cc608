#!/usr/bin/env python3
"""A git host for the e2e tests: git's smart HTTP (`git http-backend`) over
TLS, pushes only with HTTP Basic auth whose password is the expected token
(any user name, as GitHub takes a token). One JSON line per request in the
log: method, path, and whether it carried the token ("ok"), another
password ("bad") or none ("none"). Prints "PORT N" when it listens.

  git_http_server.py --host H --port P --tls-cert C --tls-key K --root DIR --token T --log FILE
"""
import argparse
import base64
import json
import os
import ssl
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--tls-cert", required=True)
    ap.add_argument("--tls-key", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--token", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--redirect", action="append", default=[],
                    help="OLD=NEW: a repository moved (GitHub's rename): OLD/... answers 301 to URL/NEW/...")
    ap.add_argument("--public-url", default="", help="this host's URL in redirects (https://github.com)")
    args = ap.parse_args()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def auth(self):
            value = self.headers.get("Authorization", "")
            if not value.startswith("Basic "):
                return "none"
            try:
                user, _, password = base64.b64decode(value[6:]).decode().partition(":")
            except Exception:
                return "bad"
            return "ok" if password == args.token and user else "bad"

        def body(self):
            if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
                out = b""
                while True:
                    size = int(self.rfile.readline().strip().split(b";")[0], 16)
                    if size == 0:
                        self.rfile.readline()
                        return out
                    out += self.rfile.read(size)
                    self.rfile.readline()
            return self.rfile.read(int(self.headers.get("Content-Length", "0") or 0))

        def handle_git(self):
            url = urlsplit(self.path)
            auth = self.auth()
            with lock, open(args.log, "a") as f:
                f.write(json.dumps({"method": self.command, "path": url.path, "query": url.query,
                                    "auth": auth}) + "\n")
            data = self.body() if self.command == "POST" else b""
            for rule in args.redirect:
                old, _, new = rule.partition("=")
                if url.path.startswith(old + "/"):
                    self.send_response(301)
                    target = args.public_url + new + url.path[len(old):] + ("?" + url.query if url.query else "")
                    self.send_header("Location", target)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
            push = "git-receive-pack" in url.path or "service=git-receive-pack" in url.query
            if auth != "ok" and push:
                msg = b"authentication required\n"
                self.send_response(401)
                self.send_header("WWW-Authenticate", 'Basic realm="git"')
                self.send_header("Content-Length", str(len(msg)))
                self.end_headers()
                self.wfile.write(msg)
                return
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "GIT_PROJECT_ROOT": args.root,
                "GIT_HTTP_EXPORT_ALL": "1",
                "PATH_INFO": url.path,
                "QUERY_STRING": url.query,
                "REQUEST_METHOD": self.command,
                "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                "CONTENT_LENGTH": str(len(data)),
                "REMOTE_USER": "x-access-token" if auth == "ok" else "",
                "REMOTE_ADDR": self.client_address[0],
            }
            if self.headers.get("Content-Encoding"):
                env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
            out = subprocess.run(["git", "http-backend"], input=data, env=env, capture_output=True).stdout
            head, _, payload = out.partition(b"\r\n\r\n")
            if not _:
                head, _, payload = out.partition(b"\n\n")
            status = 200
            headers = []
            for line in head.decode("latin-1").splitlines():
                name, _, value = line.partition(":")
                if name.lower() == "status":
                    status = int(value.strip().split()[0])
                elif name:
                    headers.append((name, value.strip()))
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = handle_git
        do_POST = handle_git

    server = ThreadingHTTPServer((args.host, args.port), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(args.tls_cert, args.tls_key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("PORT %d" % server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
