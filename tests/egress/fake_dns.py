#!/usr/bin/env python3
"""A fixed-zone authoritative DNS server for the fake internets of the tests.

answer(packet, zone) builds the response to one query; zone maps
(name, qtype) to a list of rdata bytes (qtype 1 = A, 28 = AAAA). A name not
in the zone gets NXDOMAIN, a known name without records of the asked type an
empty NOERROR answer. serve(address, zone) answers over UDP and TCP
(RFC 7766 length framing) on address:53 until the process ends.

Usage: fake_dns.py ADDRESS NAME=IPV4|IPV6 [...]   (e.g. api.anthropic.com=192.0.2.10)
"""
import socket
import struct
import sys
import threading


def answer(packet, zone):
    qid, _flags, _qd = struct.unpack(">HHH", packet[:6])
    pos, labels = 12, []
    while packet[pos]:
        labels.append(packet[pos + 1:pos + 1 + packet[pos]].decode().lower())
        pos += packet[pos] + 1
    qtype, _ = struct.unpack(">HH", packet[pos + 1:pos + 5])
    question = packet[12:pos + 5]
    name = ".".join(labels)
    known = any(n == name for n, _ in zone)
    records = zone.get((name, qtype), [])
    rcode = 0 if known else 3
    body = b"".join(struct.pack(">HHHIH", 0xC00C, qtype, 1, 300, len(r)) + r for r in records)
    return struct.pack(">HHHHHH", qid, 0x8180 | rcode, 1, len(records), 0, 0) + question + body


def _recv_exactly(conn, n):
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def _serve_udp(address, zone):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((address, 53))
    while True:
        packet, peer = s.recvfrom(4096)
        try:
            s.sendto(answer(packet, zone), peer)
        except Exception:
            pass


def _serve_tcp_client(conn, zone):
    conn.settimeout(10)
    with conn:
        try:
            while True:
                (length,) = struct.unpack(">H", _recv_exactly(conn, 2))
                response = answer(_recv_exactly(conn, length), zone)
                conn.sendall(struct.pack(">H", len(response)) + response)
        except Exception:
            pass


def _serve_tcp(address, zone):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((address, 53))
    s.listen(16)
    while True:
        conn, _ = s.accept()
        threading.Thread(target=_serve_tcp_client, args=(conn, zone), daemon=True).start()


def serve(address, zone):
    """Answers on address:53 over UDP and TCP from daemon threads."""
    for target in (_serve_udp, _serve_tcp):
        threading.Thread(target=target, args=(address, zone), daemon=True).start()


def zone_from_args(entries):
    zone = {}
    for entry in entries:
        name, ip = entry.split("=", 1)
        family, qtype = (socket.AF_INET6, 28) if ":" in ip else (socket.AF_INET, 1)
        zone.setdefault((name.lower(), qtype), []).append(socket.inet_pton(family, ip))
    return zone


if __name__ == "__main__":
    serve(sys.argv[1], zone_from_args(sys.argv[2:]))
    print("READY", flush=True)
    threading.Event().wait()
