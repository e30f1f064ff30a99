#!/usr/bin/env python3
"""
salt-call, for ``salt-call --local --retcode-passthrough --out=json state.apply salt_master
[test=True]`` only, as Salt 3007's ``--out=json`` prints a state run
(``{"local": {<state key>: <state return>}}``).

"master_config": {"changes": N} is the Salt master's configuration N changes away from the
tree's. test=True reports them as changes it would make, with result None, and does nothing
(salt/states/file.py, managed: "The file ... is set to be changed"; salt/states/service.py,
mod_watch: "Service is set to be restarted"). A real apply makes them and restarts the master,
as the salt_master state's watch does (service.py mod_watch): "master_restarts" counts the
restarts, and a minion that does not run core.minion's options then ("minion_options", the
minions orch.minions configured) hangs and answers nothing from then on (its "ping" entry goes).
A Salt 3007 minion with the default zmq_monitor rebuilds its channels when its master restarts
(salt/minion.py, the __master_disconnected handler) and can hang for good in pyzmq's
Context.term (core/files/minion.conf). The real hang depends on timing; the fake always hangs
such a minion, the case the order of orchestrate.sh must survive.

"salt_call" (or "salt_call_test" for test=True) replaces the output with {"stdout", "exit"};
the default is the salt_master state with nothing changed, exit 0.
"""

import json
import sys

from fakestate import log_invocation, state

FILE_KEY = "file_|-salt_master-config-file-managed_|-/etc/salt/master.d/kube-on-os.conf_|-managed"
SERVICE_KEY = "service_|-salt_master-service-running_|-salt-master_|-running"
APPLY = ["--local", "--retcode-passthrough", "--out=json", "state.apply", "salt_master"]


def run(changes: int, test: bool) -> dict:
    """The salt_master state's return: the file with ``changes`` changed lines, and the service."""
    changed = {"diff": "".join(f"+option_{n}: true\n" for n in range(changes))} if changes else {}
    file_result = None if test and changes else True
    return {
        "local": {
            FILE_KEY: {
                "result": file_result,
                "changes": changed,
                "comment": (
                    "The file /etc/salt/master.d/kube-on-os.conf is set to be changed"
                    if test and changes
                    else "File /etc/salt/master.d/kube-on-os.conf updated"
                    if changes
                    else "File /etc/salt/master.d/kube-on-os.conf is in the correct state"
                ),
                "__id__": "salt_master-config-file-managed",
                "__run_num__": 0,
            },
            SERVICE_KEY: {
                "result": None if test and changes else True,
                "changes": {"salt-master": True} if changes and not test else {},
                "comment": (
                    "Service is set to be restarted"
                    if test and changes
                    else "Service restarted"
                    if changes
                    else "The service salt-master is already running"
                ),
                "__id__": "salt_master-service-running",
                "__run_num__": 1,
            },
        }
    }


log_invocation("salt-call")
arguments = sys.argv[1:]
if arguments not in (APPLY, [*APPLY, "test=True"]):
    sys.exit(f"fake salt-call: unsupported arguments {arguments}")
test = arguments[-1] == "test=True"
with state() as current:
    canned = current.get("salt_call_test" if test else "salt_call")
    config = current.setdefault("master_config", {})
    changes = config.get("changes", 0)
    if canned is None and changes and not test:
        config["changes"] = 0
        current["master_restarts"] = current.get("master_restarts", 0) + 1
        configured = set(current.get("minion_options", []))
        answering = current.get("ping", {})
        for minion in current.get("keys", {}).get("minions", []):
            if minion not in configured:
                answering.pop(minion, None)
                current.setdefault("hung", []).append(minion)
output = canned["stdout"] if canned and "stdout" in canned else run(changes, test)
print(output if isinstance(output, str) else json.dumps(output, indent=4))
sys.exit((canned or {}).get("exit", 0))
