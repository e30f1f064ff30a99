#!/usr/bin/env python3
"""hostname [-f]: the FQDN from the fake state ("hostname"), or its first label."""

import sys

from fakestate import log_invocation, state

log_invocation("hostname")
with state() as current:
    fqdn = current.get("hostname", "salt.lab.example.org")
print(fqdn if "-f" in sys.argv[1:] else fqdn.split(".")[0])
