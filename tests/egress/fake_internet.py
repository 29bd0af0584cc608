#!/usr/bin/env python3
"""The fake internet's hosts, run inside the test's namespace (no route out).

Serves HTTP on [::]:80 and [::]:8080 (dual stack; the body names the Host
header it got), a stand-in for TLS on [::]:443 and [::]:853 (HTTPS, DoH and
DoT ports: whatever the client sends first, typically a ClientHello, is
answered with "fake-tls port=PORT" and the connection closed; no real TLS is
needed to see whether a connection got through; the same on [::]:22, for SSH) and DNS on 192.0.2.53:53,
UDP and TCP (RFC 7766 framing; fake_dns.py), from a fixed zone:
  allowed.example.com  A 192.0.2.10  AAAA 2001:db8::10
  other.example.com    A 192.0.2.10  (the same shared IP, not allowlisted)
  rebind.example.com   A 127.0.0.1, A 10.1.2.3  (rebinding)
  dns.example.net      A 192.0.2.20  (a public DoH/DoT resolver, not allowlisted)
Usage: fake_internet.py READY_FILE
"""
import http.server
import os
import socket
import socketserver
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fake_dns  # noqa: E402

ZONE = {
    ("allowed.example.com", 1): [socket.inet_aton("192.0.2.10")],
    ("allowed.example.com", 28): [socket.inet_pton(socket.AF_INET6, "2001:db8::10")],
    ("other.example.com", 1): [socket.inet_aton("192.0.2.10")],
    ("rebind.example.com", 1): [socket.inet_aton("127.0.0.1"), socket.inet_aton("10.1.2.3")],
    ("dns.example.net", 1): [socket.inet_aton("192.0.2.20")],
}


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("fake-internet host=%s\n" % self.headers.get("Host", "")).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


class DualStackServer(socketserver.ThreadingMixIn, http.server.HTTPServer):
    address_family = socket.AF_INET6
    daemon_threads = True

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


class TlsStandIn(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.settimeout(10)
        if self.request.recv(65536):
            self.request.sendall(b"fake-tls port=%d\n" % self.server.server_address[1])


class ThreadingTcp(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


class DualStackTcp(ThreadingTcp):
    address_family = socket.AF_INET6

    def server_bind(self):
        self.socket.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        super().server_bind()


def main():
    servers = [DualStackServer(("::", port), Handler) for port in (80, 8080)]
    servers += [DualStackTcp(("::", port), TlsStandIn) for port in (22, 443, 853)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    fake_dns.serve("192.0.2.53", ZONE)
    open(sys.argv[1], "w").close()
    threading.Event().wait()


main()
