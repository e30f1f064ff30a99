#!/usr/bin/env python3
"""
hostname [-f]: the FQDN from the fake state ("hostname"), or its first label. In an SSH session
(the provisioning test's hosts), "hostname_by_address" maps glob patterns of the address the
session connected to (SSH_CONNECTION's third field) to the FQDN: one sshd plays several hosts.
"""

import fnmatch
import os
import sys

from fakestate import log_invocation, state

log_invocation("hostname")
with state() as current:
    fqdn = current.get("hostname", "salt.lab.example.org")
    connection = os.environ.get("SSH_CONNECTION", "").split()
    if len(connection) == 4:
        for pattern, name in current.get("hostname_by_address", {}).items():
            if fnmatch.fnmatch(connection[2], pattern):
                fqdn = name
                break
print(fqdn if "-f" in sys.argv[1:] else fqdn.split(".")[0])
