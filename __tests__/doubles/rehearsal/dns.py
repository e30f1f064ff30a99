#!/usr/bin/env python3
"""
The rehearsal cloud's resolver: it answers every query on UDP port 53 with NXDOMAIN. The hosts
have no internet, so no name outside their /etc/hosts resolves; without an answer each lookup
would wait out resolv.conf's timeouts (5 s per server) instead, which Salt's grains do many
times. Runs in the cloud's network namespace, where the subnets' dns_nameservers are local.
"""

import socket
import struct

NXDOMAIN = 3
IP_PKTINFO = 8  # linux/in.h; struct in_pktinfo is ifindex, spec_dst, addr

sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.setsockopt(socket.IPPROTO_IP, IP_PKTINFO, 1)
sock.bind(("0.0.0.0", 53))
while True:
    query, ancillary, _, client = sock.recvmsg(4096, socket.CMSG_SPACE(12))
    if len(query) < 12:
        continue
    ident, flags, qdcount = struct.unpack("!HHH", query[:6])
    # RFC 1035 4.1.1: QR=1, the query's opcode and RD, RA=1, RCODE; the question echoed back.
    answer_flags = 0x8000 | (flags & 0x7900) | 0x0080 | NXDOMAIN
    answer = struct.pack("!HHHHHH", ident, answer_flags, qdcount, 0, 0, 0) + query[12:]
    # The answer must come from the address the query went to, or the resolver drops it.
    destination = next(
        (data[8:12] for level, kind, data in ancillary if level == socket.IPPROTO_IP and kind == IP_PKTINFO), None
    )
    pktinfo = [(socket.IPPROTO_IP, IP_PKTINFO, struct.pack("=i4s4s", 0, destination, bytes(4)))] if destination else []
    sock.sendmsg([answer], pktinfo, 0, client)
