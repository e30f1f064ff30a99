#!/usr/bin/env python3
"""
cloud-init status --wait | --long, driven by the fake state's "cloud_init":
``{"exit": 0|1|2, "sleep": seconds before --wait returns, "long": text of --long}``.
"""

import sys
import time

from fakestate import log_invocation, state

log_invocation("cloud-init")
with state() as current:
    config = current.get("cloud_init", {})
arguments = sys.argv[1:]
if arguments == ["status", "--wait"]:
    for _ in range(int(config.get("sleep", 0) * 10)):
        print(".", end="", flush=True)
        time.sleep(0.1)
    status = {0: "done", 1: "error", 2: "degraded done"}[config.get("exit", 0)]
    print(f"\nstatus: {status}")
    sys.exit(config.get("exit", 0))
if arguments == ["status", "--long"]:
    print(config.get("long", "status: done"))
    sys.exit(config.get("exit", 0))
sys.exit(f"fake cloud-init: unsupported arguments {arguments}")
