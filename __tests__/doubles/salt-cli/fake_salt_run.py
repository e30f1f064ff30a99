#!/usr/bin/env python3
"""
salt-run, three runners over the fake event bus (fakestate.bus_path), and manage.status:

- ``event.send TAG``: appends TAG to the bus.
- ``state.event pretty=False tagmatch=EXPR``: prints the bus lines that arrive after it has
  subscribed and whose tag matches EXPR the way Salt's expr_match does, as
  "<tag>\\t<json>", until killed. "state_event": {"subscribe_delay": s} delays the subscription
  (events sent before are lost, as on the real bus); {"crash": true} makes it fail at once.
  Each one records its pid in state-event.pids beside the state file.
- ``state.orchestrate SLS --out=json``: "state_orchestrate" says what happens:
  {"events_file": captured state.event lines to put on the bus first, "hold_until": a path
  that must exist before it returns, "stdout_file" or "stdout", "stderr", "exit"}, or for one
  SLS what its "per_sls" maps it to. An orch.minions that exits 0 gives every accepted minion that
  answers (none hung, fake_salt_call.py) core.minion's options, as its steps do
  (salt/orch/minions.jinja: core.minion, then kube_on_os.minion_options until each runs with
  them): "minion_options" lists them.
- ``manage.status tgt=IDS tgt_type=list timeout=N gather_job_timeout=N``: test.ping as the fake
  salt answers it ("ping": a minion answers from that call on, counted with salt's; only accepted
  keys are targeted), printed as {"up": [...], "down": [...]} (salt/runners/manage.py status).
  "salt_error" makes it fail as salt does.
- ``--out=quiet fileserver.clear_file_list_cache``: the master's cached file lists are deleted
  (salt/fileserver/__init__.py Fileserver.clear_file_list_cache), so its next listing is of the
  tree as it is then. The fake master serves no files; it records that listing, the files under
  $KOO_SALT_ROOT, as "file_list" in the state. "fileserver_clear_file_list_cache": {"error": text}
  makes it fail with that text on stderr.
"""

import fnmatch
import json
import os
import re
import sys
import time
from pathlib import Path

from fakestate import bus_path, fire_event, log_invocation, ping, state, state_path

log_invocation("salt-run")
positional = [argument for argument in sys.argv[1:] if not argument.startswith("--")]
runner, arguments = positional[0], positional[1:]
keywords = dict(argument.split("=", 1) for argument in arguments if "=" in argument)
with state() as current:
    config = current.get(runner.replace(".", "_"), {})
    if runner == "state.orchestrate":
        config = config.get("per_sls", {}).get(arguments[0], config)


def expr_match(tag: str, expression: str) -> bool:
    """salt/utils/stringutils.py expr_match: a glob first, then an anchored regular expression."""
    if fnmatch.fnmatch(tag, expression):
        return True
    try:
        return re.match(rf"\A{expression}\Z", tag) is not None
    except re.error:
        return False


if runner == "event.send":
    fire_event(arguments[0], {"_stamp": "2026-01-01T00:00:00.000000"})
    print("True")
elif runner == "state.event":
    with state_path().with_name("state-event.pids").open("a") as pids:
        pids.write(f"{os.getpid()}\n")
    if config.get("crash"):
        sys.exit("Exception occurred in runner state.event: Traceback (most recent call last):\n...")
    time.sleep(config.get("subscribe_delay", 0))
    bus = bus_path()
    offset = bus.stat().st_size if bus.exists() else 0
    pending = ""
    while True:
        if bus.exists():
            with bus.open() as stream:
                stream.seek(offset)
                pending += stream.read()
                offset = stream.tell()
            *lines, pending = pending.split("\n")
            for line in lines:
                if expr_match(line.partition("\t")[0], keywords.get("tagmatch", "*")):
                    print(line, flush=True)
        time.sleep(0.05)
elif runner == "state.orchestrate":
    if config.get("events_file"):
        for line in Path(config["events_file"]).read_text().splitlines():
            tag, _, payload = line.partition("\t")
            fire_event(tag, payload)
            time.sleep(0.02)
    if config.get("hold_until"):
        deadline = time.monotonic() + 20
        while not Path(config["hold_until"]).exists():
            if time.monotonic() > deadline:
                sys.exit(f"fake salt-run: {config['hold_until']} never appeared")
            time.sleep(0.05)
    if config.get("stdout_file"):
        sys.stdout.write(Path(config["stdout_file"]).read_text())
    elif "stdout" in config:
        sys.stdout.write(config["stdout"] if isinstance(config["stdout"], str) else json.dumps(config["stdout"]))
    sys.stderr.write(config.get("stderr", ""))
    if arguments[0] == "orch.minions" and config.get("exit", 0) == 0:
        with state() as current:
            hung = set(current.get("hung", []))
            configured = set(current.get("minion_options", []))
            configured.update(m for m in current.get("keys", {}).get("minions", []) if m not in hung)
            current["minion_options"] = sorted(configured)
    sys.exit(config.get("exit", 0))
elif runner == "manage.status":
    with state() as current:
        if current.get("salt_error"):
            sys.exit(current["salt_error"])
        accepted = current.get("keys", {}).get("minions", [])
        targeted = [minion for minion in keywords["tgt"].split(",") if minion in accepted]
        up = sorted(ping(current, targeted))
    print(json.dumps({"up": up, "down": sorted(set(targeted) - set(up))}, indent=4))
elif runner == "fileserver.clear_file_list_cache":
    if config.get("error"):
        sys.exit(config["error"])
    root = Path(os.environ.get("KOO_SALT_ROOT", "/srv/salt"))
    files = (path.relative_to(root) for path in root.rglob("*") if path.is_file())
    listing = sorted(str(path) for path in files if path.parts[0] != "lost+found")
    with state() as current:
        current["file_list"] = listing
else:
    sys.exit(f"fake salt-run: unsupported runner {runner}")
