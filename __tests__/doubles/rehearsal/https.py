#!/usr/bin/env python3
"""
A stand-in for a service on the internet that the rehearsal's hosts download from: it serves the
files of a directory over HTTPS (GET and HEAD, as Python's http.server does), under a certificate
of the rehearsal's own CA, which every host's root trusts. Runs in the cloud's network namespace,
on an address the cloud's resolver gives the service's name (salt-repository.ts). Each request is
a line of the log, so a test can tell what the hosts fetched.

    python3 https.py ADDRESS DIRECTORY CERTIFICATE KEY LOG
"""

import functools
import http.server
import ssl
import sys

address, directory, certificate, key, log = sys.argv[1:6]


class Handler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        with open(log, "a", encoding="utf-8") as out:
            out.write(f"{self.client_address[0]} {format % args}\n")


context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(certificate, key)
server = http.server.ThreadingHTTPServer((address, 443), functools.partial(Handler, directory=directory))
server.socket = context.wrap_socket(server.socket, server_side=True)
server.serve_forever()
