#!/usr/bin/env python3
"""
A fake ``microk8s`` CLI for the Salt loader tests: it keeps its addons in $FAKE_MICROK8S_DIR and
prints the shapes microk8s itself prints (see fixtures/microk8s/README.md).
"""

import json
import os
import sys
from pathlib import Path

STATE = Path(os.environ["FAKE_MICROK8S_DIR"]) / "state.json"


def load() -> dict:
    if STATE.exists():
        return json.loads(STATE.read_text())
    return {"running": True, "addons": {"dns": "disabled", "hostpath-storage": "disabled", "registry": "disabled"}}


def save(state: dict) -> None:
    STATE.write_text(json.dumps(state))


def main(args: list[str]) -> int:
    state = load()
    with (Path(os.environ["FAKE_MICROK8S_DIR"]) / "calls.log").open("a") as log:
        log.write(" ".join(args) + "\n")
    if args[:3] == ["status", "--format", "yaml"]:
        print("microk8s:")
        print(f"  running: {state['running']}")
        print("high-availability:")
        print("  enabled: False")
        print("addons:")
        for name, status in state["addons"].items():
            print(f"  - name: {name}\n    description: {name}\n    version: 1.28\n    status: {status}")
        return 0
    if args and args[0] in ("enable", "disable") and len(args) == 2:
        name = args[1].split(":", 1)[0]
        if name not in state["addons"]:
            print(f"Addon {name} was not found in any repository", file=sys.stderr)
            return 1
        state["addons"][name] = "enabled" if args[0] == "enable" else "disabled"
        save(state)
        print(f"{args[0].capitalize()}d {name}")
        return 0
    print(f"fake microk8s: unsupported {args}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
