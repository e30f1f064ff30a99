#!/usr/bin/env python3
"""
The rehearsal cloud's resolver, on UDP port 53. The hosts have no internet: it answers NXDOMAIN
for every name but those given as NAME=ADDRESS arguments, the stand-ins of the internet's
services that live in the cloud (salt-repository.ts), whose A queries get their address and other
queries an empty answer (RFC 2308's NODATA). Without an answer each lookup would wait out
resolv.conf's timeouts (5 s per server) instead, which Salt's grains do many times. Runs in the
cloud's network namespace, where the subnets' dns_nameservers are local.

    python3 dns.py [NAME=ADDRESS...]
"""

import socket
import struct
import sys

NXDOMAIN = 3
TYPE_A, CLASS_IN = 1, 1
KNOWN = {
    name.lower().rstrip("."): socket.inet_aton(address) for name, address in (arg.split("=", 1) for arg in sys.argv[1:])
}


def question(query: bytes) -> tuple[str, int, int, int]:
    """The first question's name, type, class, and where the question ends (RFC 1035 4.1.2)."""
    labels, offset = [], 12
    while offset < len(query) and query[offset]:
        length = query[offset]
        labels.append(query[offset + 1 : offset + 1 + length].decode("ascii", "replace"))
        offset += 1 + length
    qtype, qclass = struct.unpack("!HH", query[offset + 1 : offset + 5]) if offset + 5 <= len(query) else (0, 0)
    return ".".join(labels).lower(), qtype, qclass, offset + 5


def answer(query: bytes) -> bytes:
    ident, flags, qdcount = struct.unpack("!HHH", query[:6])
    name, qtype, qclass, end = question(query)
    address = KNOWN.get(name) if qdcount == 1 else None
    records = b""
    if address and qtype == TYPE_A and qclass == CLASS_IN:
        # RFC 1035 4.1.3: the name as a pointer to the question's (offset 12), A, IN, a TTL, the address.
        records = struct.pack("!HHHIH", 0xC00C, TYPE_A, CLASS_IN, 60, 4) + address
    # RFC 1035 4.1.1: QR=1, the query's opcode and RD, RA=1, RCODE; the question echoed back.
    rcode = 0 if address else NXDOMAIN
    answer_flags = 0x8000 | (flags & 0x7900) | 0x0080 | rcode
    head = struct.pack("!HHHHHH", ident, answer_flags, qdcount, 1 if records else 0, 0, 0)
    return head + (query[12:end] + records if address else query[12:])


IP_PKTINFO = 8  # linux/in.h; struct in_pktinfo is ifindex, spec_dst, addr

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
sock.bind(("0.0.0.0", 53))
while True:
    query, ancillary, _, client = sock.recvmsg(4096, socket.CMSG_SPACE(12))
    if len(query) < 12:
        continue
    # The answer must come from the address the query went to, or the resolver drops it.
    destination = next(
        (data[8:12] for level, kind, data in ancillary if level == socket.IPPROTO_IP and kind == IP_PKTINFO), None
    )
    pktinfo = [(socket.IPPROTO_IP, IP_PKTINFO, struct.pack("=i4s4s", 0, destination, bytes(4)))] if destination else []
    sock.sendmsg([answer(query)], pktinfo, 0, client)
