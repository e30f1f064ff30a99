#!/usr/bin/env python3
"""
salt [--out=json] [--static] [--timeout=N] [--list] TARGET FUNCTION ARGS..., over the fake state.
Only minions whose keys are accepted ("keys"."minions") are targeted, as with the real CLI, which
prints "No minions matched the target" and "{}" when there are none. test.ping: "ping" maps a
minion to the test.ping call (1, 2, ...) from which on it answers. Any other function:
"returns" maps "FUNCTION ARGS..." (the call's function and arguments joined by spaces), else
FUNCTION, to {minion: return value}; a minion missing there does not answer.
"salt_error" makes every call fail with that text on stderr, as when the master is down.
"""

import fnmatch
import json
import sys

from fakestate import log_invocation, ping, state

log_invocation("salt")
options = [argument for argument in sys.argv[1:] if argument.startswith("--")]
positional = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
target, function, arguments = positional[0], positional[1], positional[2:]
with state() as current:
    if current.get("salt_error"):
        sys.exit(current["salt_error"])
    accepted = current.get("keys", {}).get("minions", [])
    if "--list" in options:
        matched = [minion for minion in target.split(",") if minion in accepted]
    else:
        matched = [minion for minion in accepted if fnmatch.fnmatch(minion, target)]
    if not matched:
        print("No minions matched the target. No command was sent, no jid was assigned.\n{}")
        sys.exit("ERROR: No return received")
    if function == "test.ping":
        returns = dict.fromkeys(ping(current, matched), True)
    else:
        canned = current.get("returns", {})
        configured = canned.get(" ".join([function, *arguments]), canned.get(function, {}))
        returns = {m: configured[m] for m in matched if m in configured}
print(json.dumps(returns, indent=4))
sys.exit(0 if set(returns) == set(matched) else 1)
