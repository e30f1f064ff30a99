#!/usr/bin/env python3
"""
salt-call, for ``salt-call --local --out=json state.apply salt_master`` only: prints the fake
state's "salt_call" result (``{"local": {<state key>: <state return>}}``, as Salt 3007's
``--out=json`` prints a state run), by default the salt_master state with nothing changed, and
exits with its "exit" (default 0).
"""

import json
import sys

from fakestate import log_invocation, state

UNCHANGED = {
    "local": {
        "file_|-salt_master-config-file-managed_|-/etc/salt/master.d/kube-on-os.conf_|-managed": {
            "result": True,
            "changes": {},
            "comment": "File /etc/salt/master.d/kube-on-os.conf is in the correct state",
            "__id__": "salt_master-config-file-managed",
            "__run_num__": 0,
        },
        "service_|-salt_master-service-running_|-salt-master_|-running": {
            "result": True,
            "changes": {},
            "comment": "The service salt-master is already running",
            "__id__": "salt_master-service-running",
            "__run_num__": 1,
        },
    }
}

log_invocation("salt-call")
if sys.argv[1:] != ["--local", "--retcode-passthrough", "--out=json", "state.apply", "salt_master"]:
    sys.exit(f"fake salt-call: unsupported arguments {sys.argv[1:]}")
with state() as current:
    result = current.get("salt_call", {})
print(json.dumps(result.get("stdout", UNCHANGED), indent=4))
sys.exit(result.get("exit", 0))
