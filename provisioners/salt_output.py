#!/usr/bin/env python3
"""
Reads Salt 3007's JSON output for the provisioner scripts and turns it into one-line messages.

It runs on the host's system python3 (3.12 on Ubuntu 24.04; 3.8 on an older 20.04 image) with the
standard library only: the onedir Salt packages keep their own Python to themselves, and no Salt
module is needed to read JSON. It only reads: starting and watching Salt's processes is
supervise.py's job, which formats what it watches with this module. Every subcommand reads what
one Salt command printed; a bad command line exits 2.

  key-status ID...      stdin: salt-key --list=all --out=json. Prints "<status> <id>" per ID,
                        status one of denied, rejected, accepted, pending, absent; then
                        "unexpected <id>" for every pending key that is not an ID. Exits 3 when
                        stdin holds no JSON.
  answered [ID...]      stdin: salt --out=json --static [--list IDS|TARGET] test.ping. Prints the
                        IDs that answered True (with no ID given, every minion that did), one per
                        line.
  up ID...              stdin: salt-run --out=json manage.status tgt=IDS tgt_type=list. Prints
                        the IDs it lists as up, one per line.
  vacate-node MINION    stdin: salt --out=json --static MINION microk8s.vacate_node ADDRESS SECONDS.
                        Prints "drained NAME SECONDS", "gave-up NAME SECONDS REASON", "no-node",
                        "absent", "refused REASON", "no-answer" or "error <first line>".
  drained MINION        stdin: salt --out=json --static MINION microk8s.drain_for_replacement
                        ADDRESS SECONDS. Prints "drained NAME", "no-answer" or "error <first line>".
  leave MINION          stdin: salt --out=json --static MINION microk8s.leave. Prints "left",
                        "no-answer" or "error <first line>".
  forget-node MINION    stdin: salt --out=json --static MINION microk8s.forget_node ADDRESS.
                        Prints "removed", "absent", "no-answer" or "error <first line>".
  upgrade-plan MINION   stdin: salt --out=json --static MINION microk8s.upgrade_plan [CHANNEL].
                        Prints "roll <nodes in the cluster> <channel|-> <id to roll>..." and a
                        line "step <channel> <id>..." per minor the roll goes through, "absent"
                        (no microk8s module: the snap is not installed), "no-answer" or
                        "error <first line>".
  reboot-plan ID...     stdin: salt --out=json --static --list IDS kube_on_os.reboot_required.
                        Prints "needs <id>..." (the IDs whose updates need a reboot, in the
                        order given), "no-answer <id>" or "error <id> <first line>" for the first
                        ID that did not answer or failed.
  preview CLOUD REPORT ID...
                        stdin: salt --out=json --static --list IDS state.top ... test=True (a
                        preview, preview.sh). Prints, per ID, "<id>: no changes (N states)",
                        "<id>: would change N of M states" with each state and its changes (file
                        diffs included) indented below, "<id>: did not answer" or "<id>: fails:
                        <error>"; writes the same as JSON to REPORT. Every value of CLOUD (the
                        cloud pillar, "-" for none) under a key naming a secret or password is
                        written "<secret>" wherever it appears. Exits 1 when an ID did not answer
                        or failed, else 0.
  local-states          stdin: salt-call --local --out=json state.apply SLS. Prints "<states>
                        <changed states>", then each failing state on a line of its own; exits 1
                        when a state failed, 3 when stdin holds no state results.
  orchestration SLS SECONDS FILE
                        FILE: salt-run state.orchestrate SLS --out=json. Prints one summary line;
                        exits 0 on success, 1 on failure, 3 when FILE holds no result.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
from typing import Any, Callable

# Salt-key's JSON names its lists after the pki directories (salt/key.py, Key.ACC and friends).
# A denied key is a second key for an id that already has one, so it is checked first.
KEY_STATUSES = (
    ("denied", "minions_denied"),
    ("rejected", "minions_rejected"),
    ("accepted", "minions"),
    ("pending", "minions_pre"),
)

# `salt --static` pings its targets before every job (it runs as a 100% batch) and LocalClient
# polls running jobs with saltutil.find_job: neither is progress worth a line.
HOUSEKEEPING_FUNCTIONS = {"test.ping", "saltutil.find_job"}
# Checks an orchestration step retries until they hold (orch/deploy.sls, the step's retry:): one
# that does not hold yet is no failure of the run.
RETRIED_CHECKS = {"kube_on_os.minion_options"}
ERROR_PREFIX = "ERROR: "

JOB_RETURN_TAG = re.compile(r"^salt/job/[0-9]+/ret/(?P<minion>[^/]+)$")
FAILED_MINIONS = re.compile(r"failed on minions: (?P<minions>[^\s,]+(?:, [^\s,]+)*)")
REQUISITE_FAILED = "One or more requisite failed"


class NoResult(ValueError):
    """Salt printed nothing a reader can take for its answer: the command exits 3 and says what it printed."""


def json_documents(text: str) -> list[Any]:
    """Every JSON document that starts a line: Salt prints notices like "No minions matched" first."""
    decoder = json.JSONDecoder()
    documents = []
    position = 0
    while position < len(text):
        if text[position] in "{[" and (position == 0 or text[position - 1] == "\n"):
            try:
                document, end = decoder.raw_decode(text, position)
            except ValueError:
                pass
            else:
                documents.append(document)
                position = end
                continue
        newline = text.find("\n", position)
        if newline < 0:
            break
        position = newline + 1
    return documents


def last_object(text: str) -> dict | None:
    objects = [document for document in json_documents(text) if isinstance(document, dict)]
    return objects[-1] if objects else None


def one_line(value: Any, limit: int = 300) -> str:
    """The line that explains a multi-line error: a traceback's last line, otherwise the first."""
    if isinstance(value, (list, tuple)):
        value = "; ".join(one_line(item, limit) for item in value if item)
    text = value if isinstance(value, str) else json.dumps(value)
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return "(no message)"
    line = lines[-1] if "Traceback (most recent call last)" in text else lines[0]
    return line if len(line) <= limit else line[: limit - 3] + "..."


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def state_id(key: str, state: dict) -> str:
    """A state return key reads module_|-id_|-name_|-function; people know the state by its id."""
    parts = key.split("_|-")
    return str(state.get("__id__") or (parts[1] if len(parts) == 4 else key))


def ordered_states(states: dict) -> list[tuple[str, dict]]:
    items = [(key, value) for key, value in states.items() if isinstance(value, dict)]
    return sorted(items, key=lambda item: item[1].get("__run_num__", 0))


def changed_count(states: dict) -> int:
    return sum(1 for _, state in ordered_states(states) if state.get("changes"))


def failing_states(states: dict) -> list[str]:
    return [
        f"{state_id(key, state)} ({one_line(state.get('comment', ''))})"
        for key, state in ordered_states(states)
        if state.get("result") is False
    ]


def local_states(text: str) -> tuple[int, int, list[str]]:
    """States, changed states and failing states of ``salt-call --local --out=json state.apply``."""
    result = last_object(text)
    states = (result or {}).get("local")
    if not isinstance(states, dict):
        raise NoResult(f"salt-call printed no state results: {one_line(text)}")
    return len(ordered_states(states)), changed_count(states), failing_states(states)


SECRET_KEY = re.compile(r"secret|password", re.IGNORECASE)
# A line of a Terraform-written pillar file (yamlencode): "key": "value" or key: value.
PILLAR_LINE = re.compile(r'^\s*"?([^":]+)"?\s*:\s*(".*"|[^\s].*?)\s*$')


def secrets_of(text: str) -> list[str]:
    """The values under a key naming a secret or password in a Terraform-written pillar file."""
    found = []
    for line in text.splitlines():
        match = PILLAR_LINE.match(line)
        if not match or not SECRET_KEY.search(match.group(1)):
            continue
        value = match.group(2)
        if value.startswith('"'):
            try:
                value = json.loads(value)
            except ValueError:
                value = value[1:-1]
        if len(value) >= 4:
            found.append(value)
    return sorted(found, key=len, reverse=True)


def hidden(text: str, secrets: list[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "<secret>")
    return text


def hidden_data(value: Any, secrets: list[str]) -> Any:
    """``value`` with every secret of its strings (keys too) written "<secret>"."""
    if isinstance(value, str):
        return hidden(value, secrets)
    if isinstance(value, list):
        return [hidden_data(item, secrets) for item in value]
    if isinstance(value, dict):
        return {hidden(str(key), secrets): hidden_data(item, secrets) for key, item in value.items()}
    return value


def has_diff(changes: Any) -> bool:
    """Whether a file's diff is somewhere in ``changes``."""
    return isinstance(changes, dict) and any(
        (key == "diff" and isinstance(value, str)) or has_diff(value) for key, value in changes.items()
    )


def change_lines(changes: Any) -> list[str]:
    """
    A state's changes as lines: a file's diff line by line, under its key when the state manages
    several files (file_transfer.transferred), anything else as compact JSON.
    """
    if not isinstance(changes, dict):
        return [json.dumps(changes, sort_keys=True)]
    lines = []
    for key, value in changes.items():
        if key == "diff" and isinstance(value, str):
            lines.extend(value.splitlines())
        elif has_diff(value):
            lines.append(f"{key}:")
            lines.extend(f"  {line}" for line in change_lines(value))
        else:
            lines.append(f"{key}: {json.dumps(value, sort_keys=True)}")
    return lines


def preview(minions: list[str], text: str) -> tuple[int, list[str], dict]:
    """What ``state.top ... test=True`` says each minion would change: exit status, lines, report."""
    returns = last_object(text) or {}
    lines: list[str] = []
    report: dict = {}
    status = 0
    for minion in minions:
        if did_not_answer(minion, returns):
            lines.append(f"{minion}: did not answer")
            report[minion] = {"status": "no-answer"}
            status = 1
            continue
        states = returns[minion]
        if not isinstance(states, dict):
            # The candidate did not render: Salt returns its errors as a list (or a string).
            lines.append(f"{minion}: fails: {one_line(states)}")
            report[minion] = {"status": "failed", "errors": states if isinstance(states, list) else [states]}
            status = 1
            continue
        ordered = ordered_states(states)
        changing = [(key, state) for key, state in ordered if state.get("changes") or state.get("result") is False]
        failed = [key for key, state in changing if state.get("result") is False]
        if not changing:
            lines.append(f"{minion}: no changes ({plural(len(ordered), 'state')})")
            report[minion] = {"status": "no-changes", "states": len(ordered)}
            continue
        lines.append(f"{minion}: would change {len(changing) - len(failed)} of {plural(len(ordered), 'state')}")
        if failed:
            lines[-1] += f", {len(failed)} failing"
            status = 1
        entries = []
        for key, state in changing:
            parts = key.split("_|-")
            function = f"{parts[0]}.{parts[3]}" if len(parts) == 4 else key
            name = state.get("name") or (parts[2] if len(parts) == 4 else "")
            verdict = "fails" if state.get("result") is False else "would change"
            said = one_line(state.get("comment", ""))
            lines.append(f"  {state_id(key, state)} ({function} {name}): {verdict}: {said}")
            lines.extend(f"    {line}" for line in change_lines(state.get("changes") or {}))
            entries.append(
                {
                    "id": state_id(key, state),
                    "function": function,
                    "name": name,
                    "result": state.get("result"),
                    "comment": state.get("comment"),
                    "changes": state.get("changes") or {},
                }
            )
        report[minion] = {"status": "failed" if failed else "changes", "states": len(ordered), "changing": entries}
    return status, lines, report


# --- salt-key, test.ping, microk8s.vacate_node, leave, forget_node, upgrade_plan, reboot_required


def key_status(expected: list[str], text: str) -> list[str]:
    keys = last_object(text)
    if keys is None:
        raise NoResult("salt-key printed no JSON")
    lines = []
    for minion in expected:
        status = next((name for name, listed in KEY_STATUSES if minion in keys.get(listed, [])), "absent")
        lines.append(f"{status} {minion}")
    lines.extend(f"unexpected {minion}" for minion in keys.get("minions_pre", []) if minion not in expected)
    return lines


def answered(expected: list[str], text: str) -> list[str]:
    returns = last_object(text) or {}
    return [minion for minion in (expected or sorted(returns)) if returns.get(minion) is True]


def up(expected: list[str], text: str) -> list[str]:
    """The minions of ``expected`` that ``salt-run manage.status`` lists under "up", in that order."""
    status = last_object(text) or {}
    listed = status.get("up") if isinstance(status.get("up"), list) else []
    return [minion for minion in expected if minion in listed]


def did_not_answer(minion: str, returns: dict) -> bool:
    """
    No return from ``minion``: a minion that misses `salt --static`'s ping gets no job and no
    entry; one that took the job and went silent is entered as ``{"failed": True}`` (Salt 3007
    salt/cli/batch.py), and the non-batch CLI's ``Minion did not return. [...]`` reads the same.
    """
    value = returns.get(minion)
    if minion not in returns or (isinstance(value, dict) and value.get("failed") is True):
        return True
    return isinstance(value, str) and value.startswith("Minion did not return")


def minion_return(minion: str, text: str) -> tuple[bool, Any]:
    """``(answered, value)`` of ``minion`` in what ``salt --out=json --static`` printed (``did_not_answer``)."""
    returns = last_object(text) or {}
    return (False, None) if did_not_answer(minion, returns) else (True, returns[minion])


def one_minion(read: Callable[[Any], str]) -> Callable[[str, str], str]:
    """
    A reader of one minion's return, ``(minion, text)``, from ``read``, which reads the value:
    "no-answer" when the minion did not answer (``minion_return``), what ``read`` says otherwise.
    """

    @functools.wraps(read)
    def reader(minion: str, text: str) -> str:
        answered, value = minion_return(minion, text)
        return read(value) if answered else "no-answer"

    return reader


@one_minion
def vacate_node(value: Any) -> str:
    outcome = value.get("outcome") if isinstance(value, dict) else None
    if outcome in ("drained", "gave-up") and value.get("node"):
        line = f"{outcome} {value['node']} {int(value.get('seconds') or 0)}"
        return f"{line} {one_line(value.get('reason') or 'no reason given')}" if outcome == "gave-up" else line
    if outcome in ("no-node", "absent"):
        return outcome
    if outcome == "refused":
        return f"refused {one_line(value.get('reason') or 'no reason given')}"
    return f"error {one_line(value)}"


@one_minion
def drained(value: Any) -> str:
    """microk8s.drain_for_replacement's ``{"node", "boot_id"}``: "drained <node>", "no-answer" or "error <line>"."""
    if isinstance(value, dict) and value.get("node"):
        return f"drained {value['node']}"
    return f"error {one_line(value)}"


@one_minion
def leave(value: Any) -> str:
    """microk8s.leave returns what microk8s printed (a string); an error is a string too, hence the prefix test."""
    if isinstance(value, str) and not is_error(value):
        return "left"
    return f"error {one_line(value)}"


def is_error(value: str) -> bool:
    """How Salt 3007 returns a function that raised, or one the minion does not have."""
    return (
        value.startswith("ERROR")
        or value.startswith("The minion function caused an exception")
        or value.endswith("is not available.")
        or "Passed invalid arguments" in value
    )


@one_minion
def forget_node(value: Any) -> str:
    if value is True:
        return "removed"
    if value is False:
        return "absent"
    return f"error {one_line(value)}"


@one_minion
def upgrade_plan(value: Any) -> str:
    """
    The roll microk8s.upgrade_plan returned ({"channel", "roll": [ids], "current": {id: version},
    "steps": [{"channel", "roll": [ids]}]}), as "roll <nodes in the cluster> <channel, or - when
    none is installed> <id to roll>..." and then a line "step <channel> <id>..." per minor
    release the roll goes through; or "absent" when the minion's microk8s module did not load:
    its __virtual__ looks for the binary, which the snap installs, so a master before its first
    orch.deploy. Salt 3007 answers that with the module's reason (salt/loader/lazy.py,
    missing_fun_string).
    """
    if isinstance(value, str) and value.startswith("'microk8s' __virtual__ returned False"):
        return "absent"
    if not (isinstance(value, dict) and isinstance(value.get("roll"), list) and isinstance(value.get("current"), dict)):
        return f"error {one_line(value)}"
    steps = value.get("steps")
    if not (
        isinstance(steps, list)
        and all(
            isinstance(s, dict) and isinstance(s.get("channel"), str) and isinstance(s.get("roll"), list) for s in steps
        )
    ):
        return f"error {one_line(value)}"
    lines = [" ".join(["roll", str(len(value["current"])), str(value.get("channel") or "-"), *map(str, value["roll"])])]
    lines += [" ".join(["step", step["channel"], *map(str, step["roll"])]) for step in steps]
    return "\n".join(lines)


def reboot_plan(minions: list[str], text: str) -> str:
    """Which of ``minions`` kube_on_os.reboot_required says need a reboot ({"required": bool, ...})."""
    needs = []
    for minion in minions:
        answered, value = minion_return(minion, text)
        if not answered:
            return f"no-answer {minion}"
        if not (isinstance(value, dict) and isinstance(value.get("required"), bool)):
            return f"error {minion} {one_line(value)}"
        if value["required"]:
            needs.append(minion)
    return " ".join(["needs", *needs])


# --- state.event ------------------------------------------------------------------------------


def job_return_line(tag: str, data: dict) -> str | None:
    """One line for a minion's job return event, or None for housekeeping jobs."""
    match = JOB_RETURN_TAG.match(tag)
    if not match:
        return None
    minion = data.get("id") or match.group("minion")
    function = str(data.get("fun", "?"))
    if function in HOUSEKEEPING_FUNCTIONS:
        return None
    result = data.get("return")
    if function.startswith("state.") and isinstance(result, dict):
        states = ordered_states(result)
        changed = changed_count(result)
        failed = [state_id(key, state) for key, state in states if state.get("result") is False]
        line = f"[{minion}] {function}: {plural(len(states), 'state')}, {changed} changed, {len(failed)} failed"
        return f"{line}: {', '.join(failed)}" if failed else line
    if function.startswith("state.") and isinstance(result, list):
        # state.sls returns a list of errors when the SLS or the pillar fails to render.
        return f"[{minion}] {function}: failed: {one_line(result)}"
    if data.get("success") is False or data.get("retcode"):
        if function in RETRIED_CHECKS:
            reason = one_line(result)
            reason = reason[len(ERROR_PREFIX) :] if reason.startswith(ERROR_PREFIX) else reason
            return f"[{minion}] {function}: not yet, asked again: {reason}"
        return f"[{minion}] {function}: failed (retcode {data.get('retcode', '?')}): {one_line(result)}"
    return f"[{minion}] {function}: ok"


def state_event(line: str) -> tuple[str, str | None]:
    """
    A line of ``salt-run state.event pretty=False`` (a tag, a tab, the event's data as JSON): its
    tag, and the line ``job_return_line`` makes of it (None for anything else, or data that is not
    a JSON object).
    """
    tag, _, payload = line.partition("\t")
    try:
        data = json.loads(payload)
    except ValueError:
        return tag, None
    return tag, job_return_line(tag, data) if isinstance(data, dict) else None


# --- state.orchestrate ------------------------------------------------------------------------


def step_failures(step: str, key: str, result: dict) -> list[str]:
    """step: minion: failing state ids, for each minion the step failed on (salt/states/saltmod.py)."""
    function = key.split("_|-")[-1]
    returns = (result.get("changes") or {}).get("ret")
    entries = []
    if function == "state" and isinstance(returns, dict):
        for minion in sorted(returns):
            value = returns[minion]
            if isinstance(value, dict):
                failed = failing_states(value)
                if failed:
                    entries.append(f"{step}: {minion}: {', '.join(failed)}")
            elif value is False or value is None:
                entries.append(f"{step}: {minion}: no state result (the minion did not return)")
            else:
                entries.append(f"{step}: {minion}: {one_line(value)}")
    elif function == "function" and isinstance(returns, dict):
        match = FAILED_MINIONS.search(str(result.get("comment", "")))
        for minion in match.group("minions").split(", ") if match else []:
            value = returns.get(minion)
            if isinstance(value, str) or isinstance(value, list):
                detail = one_line(value)
            elif minion not in returns:
                detail = "no return"
            else:
                detail = f"returned {json.dumps(value)}"
            entries.append(f"{step}: {minion}: {detail}")
    return entries or [f"{step}: {one_line(result.get('comment', ''))}"]


def orchestration(sls: str, seconds: str, text: str) -> tuple[int, str]:
    documents = [document for document in json_documents(text) if isinstance(document, dict) and "data" in document]
    if not documents:
        return 3, f"orchestration {sls} failed: salt-run printed no result"
    document = documents[-1]
    retcode = document.get("retcode", 0)
    runs = document["data"] if isinstance(document["data"], dict) else {}
    run = next(iter(runs.values()), None) if len(runs) == 1 else None
    if not isinstance(run, dict):
        # The SLS did not render (or was not found): Salt returns its errors as a list.
        return 1, f"orchestration {sls} failed: {one_line(run if run is not None else document['data'])}"

    failures: list[str] = []
    not_run: list[str] = []
    changed_states = 0
    changed_minions: set[str] = set()
    for key, step in ordered_states(run):
        if step.get("result") is False:
            if str(step.get("comment", "")).startswith(REQUISITE_FAILED):
                not_run.append(state_id(key, step))
            else:
                failures.extend(step_failures(state_id(key, step), key, step))
        elif key.endswith("_|-state"):
            # saltmod.state lists only the minions that changed something (or failed).
            for minion, states in ((step.get("changes") or {}).get("ret") or {}).items():
                count = changed_count(states) if isinstance(states, dict) else 0
                if count:
                    changed_states += count
                    changed_minions.add(minion)

    if failures or not_run or retcode:
        message = "; ".join(failures)
        if not_run:
            message += ("; " if message else "") + "not run because a requisite failed: " + ", ".join(not_run)
        return 1, f"orchestration {sls} failed: {message or f'salt-run returned retcode {retcode}'}"
    changes = (
        f"{plural(changed_states, 'state')} changed on {plural(len(changed_minions), 'minion')}"
        if changed_states
        else "nothing changed"
    )
    return 0, f"orchestration {sls} succeeded in {seconds} s: {plural(len(run), 'step')}, {changes}"


# --- command line -----------------------------------------------------------------------------


def print_read(read: Callable[[Any, str], str | list[str]], argument: Any) -> int:
    """Prints what ``read`` makes of ``argument`` (an id, or a list of ids) and stdin: a line, or lines."""
    result = read(argument, sys.stdin.read())
    print(result if isinstance(result, str) else "\n".join(result))
    return 0


def print_preview(cloud: str, report: str, minions: list[str]) -> int:
    secrets = []
    if cloud != "-":
        with open(cloud, encoding="utf-8", errors="replace") as pillar:
            secrets = secrets_of(pillar.read())
    status, lines, hosts = preview(minions, sys.stdin.read())
    with open(report, "w", encoding="utf-8") as out:
        out.write(json.dumps({"hosts": hidden_data(hosts, secrets)}, indent=2, sort_keys=True) + "\n")
    print(hidden("\n".join(lines), secrets))
    return status


def print_local_states() -> int:
    total, changed, failed = local_states(sys.stdin.read())
    print(f"{total} {changed}")
    print("\n".join(failed))
    return 1 if failed else 0


def print_orchestration(sls: str, seconds: str, path: str) -> int:
    with open(path, encoding="utf-8", errors="replace") as output:
        code, line = orchestration(sls, seconds, output.read())
    print(line)
    return code


def parser() -> argparse.ArgumentParser:
    """
    One subcommand per reader, each with the arguments it takes and ``run``: what it does with
    them and stdin, returning the exit status. A bad command line exits 2, as argparse does.
    """
    root = argparse.ArgumentParser(
        prog="salt_output.py",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,
    )
    subcommands = root.add_subparsers(dest="command", metavar="COMMAND", required=True)

    def command(name: str, run: Callable[..., int], *arguments: tuple[str, str, Any]) -> None:
        """``arguments``: (keyword of ``run``, metavar, nargs) each."""
        sub = subcommands.add_parser(name, allow_abbrev=False)
        for dest, metavar, nargs in arguments:
            sub.add_argument(dest, metavar=metavar, nargs=nargs)
        sub.set_defaults(run=run)

    for name, read in (("key-status", key_status), ("answered", answered), ("up", up)):
        command(name, functools.partial(print_read, read), ("argument", "ID", "*"))
    for name, read in (
        ("vacate-node", vacate_node),
        ("drained", drained),
        ("leave", leave),
        ("forget-node", forget_node),
        ("upgrade-plan", upgrade_plan),
    ):
        command(name, functools.partial(print_read, read), ("argument", "MINION", None))
    command("reboot-plan", functools.partial(print_read, reboot_plan), ("argument", "ID", "+"))
    command("local-states", print_local_states)
    command("preview", print_preview, ("cloud", "CLOUD", None), ("report", "REPORT", None), ("minions", "ID", "+"))
    command(
        "orchestration", print_orchestration, ("sls", "SLS", None), ("seconds", "SECONDS", None), ("path", "FILE", None)
    )
    return root


def main(argv: list[str]) -> int:
    arguments = vars(parser().parse_args(argv))
    del arguments["command"]
    run = arguments.pop("run")
    try:
        return run(**arguments)
    except NoResult as error:
        print(error, file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
