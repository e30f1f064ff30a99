#!/usr/bin/env python3
"""
salt-key, over the fake state's "keys" (the four lists of salt-key --list=all --out=json).
"arrivals" maps a --list=all poll number (1, 2, ...) to keys that appear at that poll, e.g.
``{"2": {"minions_pre": ["k8s-worker-0.lab.example.org"]}}``. "salt_key_error" makes every call
fail with that text. The output mimics Salt 3007's salt/key.py KeyCLI.run.
"""

import fnmatch
import json
import sys

from fakestate import log_invocation, state

LISTS = ("minions", "minions_pre", "minions_rejected", "minions_denied")
TITLES = {"minions": "Accepted Keys:", "minions_pre": "Unaccepted Keys:", "minions_rejected": "Rejected Keys:"}
TITLES["minions_denied"] = "Denied Keys:"

log_invocation("salt-key")
arguments = sys.argv[1:]
with state() as current:
    if current.get("salt_key_error"):
        sys.exit(current["salt_key_error"])
    keys = current.setdefault("keys", {})
    for name in LISTS:
        keys.setdefault(name, [])

    if "--list=all" in arguments:
        current["key_polls"] = current.get("key_polls", 0) + 1
        for name, minions in current.get("arrivals", {}).get(str(current["key_polls"]), {}).items():
            keys[name] = sorted(set(keys[name]) | set(minions))
        print(json.dumps({name: sorted(keys[name]) for name in LISTS}, indent=4))
        sys.exit(0)

    accept_all = "-A" in arguments or "--accept-all" in arguments
    accepts = [argument.split("=", 1)[1] for argument in arguments if argument.startswith("--accept=")]
    deletes = [argument.split("=", 1)[1] for argument in arguments if argument.startswith("--delete=")]
    if accept_all or accepts:
        glob = "*" if accept_all else accepts[0]
        matched = [minion for minion in keys["minions_pre"] if any(fnmatch.fnmatch(minion, g) for g in glob.split(","))]
        if not matched:
            print(f"The key glob '{glob}' does not match any unaccepted keys.")
            sys.exit(0)
        print("The following keys are going to be accepted:\nUnaccepted Keys:\n" + "\n".join(matched))
        for minion in matched:
            keys["minions_pre"].remove(minion)
            keys["minions"] = sorted({*keys["minions"], minion})
            print(f"Key for minion {minion} accepted.")
        sys.exit(0)
    if deletes:
        glob = deletes[0]
        matched = {name: [m for m in keys[name] if fnmatch.fnmatch(m, glob)] for name in LISTS}
        if not any(matched.values()):
            print(f"The key glob '{glob}' does not match any unaccepted keys.")
            sys.exit(0)
        print("The following keys are going to be deleted:")
        for name, minions in matched.items():
            if minions:
                print(TITLES[name] + "\n" + "\n".join(minions))
        for name, minions in matched.items():
            for minion in minions:
                keys[name].remove(minion)
                print(f"Key for minion {minion} deleted.")
        sys.exit(0)
sys.exit(f"fake salt-key: unsupported arguments {arguments}")
