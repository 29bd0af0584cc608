#!/usr/bin/env python3
"""The fake internet's hosts, run inside the test's namespace (no route out).

Serves HTTP on [::]:80 and [::]:8080 (dual stack; the body names the Host
header it got) and DNS on 192.0.2.53:53 (UDP) from a fixed zone:
  allowed.example.com  A 192.0.2.10  AAAA 2001:db8::10
  other.example.com    A 192.0.2.10  (the same shared IP, not allowlisted)
  rebind.example.com   A 127.0.0.1, A 10.1.2.3  (rebinding)
Usage: fake_internet.py READY_FILE
"""
import http.server
import socket
import socketserver
import struct
import sys
import threading

ZONE = {
    ("allowed.example.com", 1): [socket.inet_aton("192.0.2.10")],
    ("allowed.example.com", 28): [socket.inet_pton(socket.AF_INET6, "2001:db8::10")],
    ("other.example.com", 1): [socket.inet_aton("192.0.2.10")],
    ("rebind.example.com", 1): [socket.inet_aton("127.0.0.1"), socket.inet_aton("10.1.2.3")],
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


def dns_answer(packet):
    qid, flags, qd = struct.unpack(">HHH", packet[:6])
    pos, labels = 12, []
    while packet[pos]:
        labels.append(packet[pos + 1:pos + 1 + packet[pos]].decode().lower())
        pos += packet[pos] + 1
    qtype, _ = struct.unpack(">HH", packet[pos + 1:pos + 5])
    question = packet[12:pos + 5]
    name = ".".join(labels)
    known = any(n == name for n, _ in ZONE)
    records = ZONE.get((name, qtype), [])
    rcode = 0 if known else 3
    answer = b"".join(struct.pack(">HHHIH", 0xC00C, qtype, 1, 300, len(r)) + r for r in records)
    return struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, len(records), 0, 0) + question + answer


def serve_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("192.0.2.53", 53))
    while True:
        packet, peer = s.recvfrom(4096)
        try:
            s.sendto(dns_answer(packet), peer)
        except Exception:
            pass


def main():
    servers = [DualStackServer(("::", port), Handler) for port in (80, 8080)]
    for server in servers:
        threading.Thread(target=server.serve_forever, daemon=True).start()
    threading.Thread(target=serve_dns, daemon=True).start()
    open(sys.argv[1], "w").close()
    threading.Event().wait()


main()
