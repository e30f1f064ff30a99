"""
orchestrate.sh [SLS], against a fake salt-run that replays real Salt 3007 output captured from
a real master and minions (fixtures/README.md): the orchestration's JSON and the job return
events that state.event printed meanwhile.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest
from harness.layout import LAB
from harness.provisioners import FIXTURES, HOST, LAYOUT, lines
from harness.real_salt import FAILED_LINES, FAILED_MESSAGE, SUCCEEDED_LINES

TAGMATCH = re.compile(r"^tagmatch=\(salt/job/\[0-9\]\+/ret/\.\+\|kube-on-os/orchestrate/\(ready\|done\)/[0-9-]+\)$")


def replay(fakes, outcome: str, **extra) -> None:
    fakes.update(
        state_orchestrate={
            "events_file": str(FIXTURES / f"state-event-{outcome}.txt"),
            "stdout_file": str(FIXTURES / f"orchestrate-{outcome}.out"),
            "exit": 0 if outcome == "succeeded" else 1,
            **extra,
        }
    )


def without_duration(text: str) -> list[str]:
    return [re.sub(r" in \d+ s:", " in N s:", line) for line in lines(text)]


def test_streams_a_line_per_minion_job_while_the_orchestration_runs(fakes, tmp_path):
    release = tmp_path / "release"
    # The orchestration cannot end before the test has read every per-host line.
    replay(fakes, "succeeded", hold_until=str(release))
    process = fakes.popen("orchestrate.sh", "orch.koo_test_succeeded")
    seen = []
    for line in process.stdout:
        seen.append(line.rstrip("\n"))
        if set(SUCCEEDED_LINES) <= set(seen):
            release.touch()
    assert process.wait(timeout=30) == 0, process.stderr.read()
    assert without_duration("\n".join(seen)) == [
        f"orchestration orch.koo_test_succeeded started on {HOST}",
        *SUCCEEDED_LINES,
        "orchestration orch.koo_test_succeeded succeeded in N s: 2 steps, 2 states changed on 2 minions",
    ]
    assert process.stderr.read() == ""
    assert fakes.leftover_processes() == []


def test_runs_orch_deploy_by_default_through_state_event_and_the_orchestrate_runner(fakes):
    replay(fakes, "succeeded")
    result = fakes.run("orchestrate.sh")
    assert result.returncode == 0, result.stderr
    calls = fakes.calls("salt-run")
    [event] = [call for call in calls if call[0] == "state.event"]
    orchestrate = [call for call in calls if call[0] == "state.orchestrate"]
    assert event[:2] == ["state.event", "pretty=False"] and TAGMATCH.match(event[2]), event
    assert orchestrate == [["state.orchestrate", "orch.deploy", "--out=json"]]
    nonce = event[2].rsplit("/", 1)[1].rstrip(")")
    sends = [call for call in calls if call[0] == "event.send"]
    assert sends[0] == ["event.send", f"kube-on-os/orchestrate/ready/{nonce}"]
    assert sends[-1] == ["event.send", f"kube-on-os/orchestrate/done/{nonce}"]
    assert without_duration(result.stdout)[-1] == (
        "orchestration orch.deploy succeeded in N s: 2 steps, 2 states changed on 2 minions"
    )


def test_a_failure_names_every_failing_step_minion_and_state(fakes):
    replay(fakes, "failed")
    result = fakes.run("orchestrate.sh", "orch.koo_test_failed")
    assert result.returncode == 1
    assert lines(result.stdout) == [f"orchestration orch.koo_test_failed started on {HOST}", *FAILED_LINES]
    assert result.stderr == FAILED_MESSAGE + "\n"
    assert fakes.leftover_processes() == []


def test_salt_run_failing_without_a_result_shows_its_stderr(fakes):
    stderr = (
        "Traceback (most recent call last):\n"
        '  File "/usr/bin/salt-run", line 11, in <module>\n'
        "PermissionError: [Errno 13] Permission denied: '/var/cache/salt/master/jobs'\n"
    )
    fakes.update(state_orchestrate={"stderr": stderr, "exit": 1})
    result = fakes.run("orchestrate.sh")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        *(f"salt-run: {line}" for line in stderr.splitlines()),
        "orchestration orch.deploy failed: salt-run exited 1 without a result: "
        "PermissionError: [Errno 13] Permission denied: '/var/cache/salt/master/jobs'",
    ]


def test_the_sls_not_found_is_a_failure_with_salts_message(fakes):
    stdout = (
        '{\n    "data": {\n        "salt.lab.example.org_master": [\n'
        "            \"No matching sls found for 'orch.nothere' in env 'base'\"\n"
        '        ]\n    },\n    "outputter": "highstate",\n    "retcode": 1\n}\n'
    )
    fakes.update(state_orchestrate={"stdout": stdout, "exit": 1})
    result = fakes.run("orchestrate.sh", "orch.nothere")
    assert result.returncode == 1
    assert (
        result.stderr == "orchestration orch.nothere failed: No matching sls found for 'orch.nothere' in env 'base'\n"
    )


def test_repeats_the_ready_event_until_state_event_has_subscribed(fakes):
    replay(fakes, "succeeded")
    fakes.update(state_event={"subscribe_delay": 3})
    result = fakes.run("orchestrate.sh", "orch.koo_test_succeeded")
    assert result.returncode == 0, result.stderr
    ready_sends = [call for call in fakes.calls("salt-run") if call[0] == "event.send" and "/ready/" in call[1]]
    assert len(ready_sends) >= 2
    assert lines(result.stdout)[1:5] == SUCCEEDED_LINES


def test_orchestrates_without_progress_when_state_event_fails(fakes):
    replay(fakes, "succeeded")
    fakes.update(state_event={"crash": True})
    result = fakes.run("orchestrate.sh", "orch.koo_test_succeeded", env={"KOO_EVENT_READY_TIMEOUT": "2"})
    assert result.returncode == 0
    assert result.stderr == (
        f"warning: no progress stream from salt-run state.event on {HOST} after 2 s; "
        "orchestrating without per-host lines\n"
    )
    assert without_duration(result.stdout) == [
        f"orchestration orch.koo_test_succeeded started on {HOST}",
        "orchestration orch.koo_test_succeeded succeeded in N s: 2 steps, 2 states changed on 2 minions",
    ]


def wait_for_line(process, prefix: str) -> None:
    for line in process.stdout:
        if line.startswith(prefix):
            return
    raise AssertionError(f"no line starting with {prefix!r}")


def test_interrupting_the_script_stops_the_event_reader(fakes, tmp_path):
    replay(fakes, "succeeded", hold_until=str(tmp_path / "never"))
    process = fakes.popen("orchestrate.sh", session=True)
    wait_for_line(process, "orchestration orch.deploy started")
    deadline = time.monotonic() + 30  # three interpreters starting, on a loaded machine
    while len(fakes.leftover_processes(timeout=0)) < 3:  # the reader, state.event, the orchestration
        assert time.monotonic() < deadline, fakes.leftover_processes(timeout=0)
        time.sleep(0.1)
    os.killpg(process.pid, signal.SIGINT)  # what Ctrl-C does
    # The reader may take 10 s by design (salt_output.py stop: SIGTERM, 5 s, SIGKILL, 5 s); a
    # loaded machine's interpreters start and end slowly on top. What still runs is the report.
    try:
        status = process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        running = fakes.leftover_processes(timeout=0)
        os.killpg(process.pid, signal.SIGKILL)
        raise AssertionError(f"orchestrate.sh still ran 30 s after SIGINT: {running}") from None
    assert status != 0
    assert fakes.leftover_processes() == []


def test_the_event_reader_does_not_outlive_a_killed_script(fakes, tmp_path):
    release = tmp_path / "release"
    replay(fakes, "succeeded", hold_until=str(release))
    process = fakes.popen("orchestrate.sh")
    wait_for_line(process, "orchestration orch.deploy started")
    process.kill()  # no trap runs
    process.wait()
    release.touch()  # lets the orphaned fake orchestration end too
    # Without its check of its parent, the reader would wait for events forever.
    assert fakes.leftover_processes() == []


@pytest.mark.parametrize("sls", ["orch/deploy", "orch..deploy", "-x", "orch.deploy;id"])
def test_rejects_a_bad_sls_name(fakes, sls):
    result = fakes.run("orchestrate.sh", sls)
    assert result.returncode == 2
    assert result.stderr == (
        f'orchestrate.sh: SLS must be an SLS name like orch.deploy, got "{sls}"\n'
        "usage: orchestrate.sh [SLS [PILLAR_JSON]]\n"
    )
    assert fakes.calls("salt-run") == []


def test_passes_pillar_for_this_run_to_the_orchestrate_runner(fakes):
    replay(fakes, "succeeded")
    pillar = '{"orchestration": {"roll": ["k8s-master.lab.example"]}}'
    result = fakes.run("orchestrate.sh", "orch.upgrade", pillar)
    assert result.returncode == 0, result.stderr
    assert [call for call in fakes.calls("salt-run") if call[0] == "state.orchestrate"] == [
        ["state.orchestrate", "orch.upgrade", f"pillar={pillar}", "--out=json"]
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("orch.upgrade", "roll=k8s-master"), 'PILLAR_JSON must be a JSON object, got "roll=k8s-master"'),
        (("orch.upgrade", "{}", "extra"), "expected at most two arguments, got 3"),
    ],
)
def test_rejects_bad_pillar_arguments(fakes, args, message):
    result = fakes.run("orchestrate.sh", *args)
    assert (result.returncode, result.stderr) == (
        2,
        f"orchestrate.sh: {message}\nusage: orchestrate.sh [SLS [PILLAR_JSON]]\n",
    )
    assert fakes.calls("salt-run") == []


MINIONS = [m.fqdn for m in (LAB.salt_master, LAB.bastion, *LAB.kube_nodes(2))]


def installed(fakes, machines: dict[str, str], *, state: str = "base: {}\n", instance: str = "i-1") -> None:
    """The Salt tree and pillar as install-salt-tree.sh leaves them, and the key ledger."""
    salt_root, pillar_root = Path(fakes.env["KOO_SALT_ROOT"]), Path(fakes.env["KOO_PILLAR_ROOT"])
    (salt_root / "lost+found").mkdir(parents=True, exist_ok=True)
    (salt_root / "top.sls").write_text(state)
    pillar_root.mkdir(parents=True, exist_ok=True)
    (pillar_root / "top.sls").write_text("base: {'*': [_from_terraform]}\n")
    # yamlencode()'s shape: each node's Nova server id on a line of its own.
    (pillar_root / "_from_terraform.sls").write_text(
        '#!yaml\n"microk8s":\n  "nodes":\n  - "address": "10.1.0.10"\n    "id": "k8s-master.lab.example"\n'
        f'    "instance_id": "{instance}"\n'
    )
    Path(fakes.env["KOO_MACHINE_LEDGER"]).write_text("".join(f"{m} {machines[m]}\n" for m in MINIONS))


def orchestrations(fakes) -> list[list[str]]:
    return [call for call in fakes.calls("salt-run") if call[0] == "state.orchestrate"]


REPLACED_WORKER = '{"orchestration": {"replaced": ["k8s-worker-0.lab.example"]}}'
MACHINES = {minion: f"m-{i}" for i, minion in enumerate(MINIONS)}


def test_after_an_apply_that_only_replaced_machines_orch_deploy_gets_them(fakes):
    replay(fakes, "succeeded")
    installed(fakes, MACHINES)
    first = fakes.run("orchestrate.sh")
    assert first.returncode == 0, first.stderr
    # The worker's machine is replaced: a new machine in the ledger, its Nova id in the pillar.
    installed(fakes, {**MACHINES, "k8s-worker-0.lab.example": "m-new"}, instance="i-2")
    second = fakes.run("orchestrate.sh")
    assert second.returncode == 0, second.stderr
    assert lines(second.stdout)[0] == (
        "only machines replaced since the last orch.deploy, the Salt tree and the pillar as it left them: "
        "k8s-worker-0.lab.example"
    )
    # Nothing replaced since: the whole run again.
    third = fakes.run("orchestrate.sh")
    assert third.returncode == 0, third.stderr
    assert orchestrations(fakes) == [
        ["state.orchestrate", "orch.deploy", "--out=json"],
        ["state.orchestrate", "orch.deploy", f"pillar={REPLACED_WORKER}", "--out=json"],
        ["state.orchestrate", "orch.deploy", "--out=json"],
    ]


@pytest.mark.parametrize(
    "change",
    ["a Salt file", "a new minion", "no record", "another SLS"],
)
def test_a_replacement_with_anything_else_changed_runs_every_minion(fakes, change):
    replay(fakes, "succeeded")
    installed(fakes, MACHINES)
    fakes.run("orchestrate.sh", "orch.upgrade" if change == "another SLS" else "orch.deploy")
    if change == "no record":
        Path(fakes.env["KOO_MACHINE_LEDGER"]).with_name("kube-on-os-orchestrated").unlink()
    replay(fakes, "succeeded")
    replaced = {**MACHINES, "k8s-worker-0.lab.example": "m-new"}
    installed(fakes, replaced, state="base: {'*': [core]}\n" if change == "a Salt file" else "base: {}\n")
    if change == "a new minion":
        with Path(fakes.env["KOO_MACHINE_LEDGER"]).open("a") as ledger:
            ledger.write("k8s-worker-1.lab.example m-9\n")
    result = fakes.run("orchestrate.sh")
    assert result.returncode == 0, result.stderr
    assert orchestrations(fakes)[-1] == ["state.orchestrate", "orch.deploy", "--out=json"]
    assert "only machines replaced" not in result.stdout


def test_only_a_run_that_succeeded_is_on_record(fakes):
    replay(fakes, "succeeded")
    installed(fakes, MACHINES)
    assert fakes.run("orchestrate.sh").returncode == 0
    # A new tree and a replaced machine: the whole run, which fails.
    replay(fakes, "failed")
    installed(fakes, {**MACHINES, "k8s-worker-0.lab.example": "m-new"}, state="base: {'*': [core]}\n")
    assert fakes.run("orchestrate.sh").returncode == 1
    # Tried again, it is still the whole run: no minion has run the new tree yet.
    replay(fakes, "succeeded")
    assert fakes.run("orchestrate.sh").returncode == 0
    assert orchestrations(fakes) == [["state.orchestrate", "orch.deploy", "--out=json"]] * 3


# --- a change to the Salt master's own configuration ----------------------------------------------

CLUSTER = [HOST, *(m.fqdn for m in LAYOUT.kube_nodes(2))]


def before_a_master_change(fakes, *, minions_outcome: str = "succeeded", **timeouts) -> subprocess.CompletedProcess:
    """
    orchestrate.sh where the tree's salt_master state changes the master's configuration (and so
    restarts it), on minions an earlier version configured: none runs core.minion's options yet.
    """
    replay(fakes, "succeeded")
    config = fakes.read()["state_orchestrate"]
    minions = {
        "stdout_file": str(FIXTURES / f"orchestrate-{minions_outcome}.out"),
        "exit": 0 if minions_outcome == "succeeded" else 1,
    }
    fakes.update(
        keys={"minions": CLUSTER},
        ping=dict.fromkeys(CLUSTER, 1),
        master_config={"changes": 2},
        state_orchestrate={**config, "per_sls": {"orch.minions": minions}},
    )
    return fakes.run("orchestrate.sh", env={key: str(value) for key, value in timeouts.items()})


def test_a_master_change_gives_every_minion_its_options_before_the_master_restarts(fakes):
    result = before_a_master_change(fakes)
    assert result.returncode == 0, result.stderr
    state = fakes.read()
    # No minion went through the restart without the options: each still answers.
    assert (state["master_restarts"], state["minion_options"], state.get("hung", [])) == (1, sorted(CLUSTER), [])
    # The master's configuration is checked, then applied once: after orch.minions, before orch.deploy.
    assert [
        call[-1] if call[0] == "salt-call" else call[2]
        for call in fakes.calls()
        if call[0] == "salt-call" or call[1:2] == ["state.orchestrate"]
    ] == ["test=True", "orch.minions", "salt_master", "orch.deploy"]
    assert without_duration(result.stdout)[:2] == [
        f"the Salt master's configuration changes on {HOST}: every minion takes its options before the master restarts",
        f"orchestration orch.minions started on {HOST}",
    ]
    assert f"Salt master configured on {HOST}: 2 states changed; 3 minions answer it again" in lines(result.stdout)
    assert lines(result.stdout)[-1].startswith("orchestration orch.deploy succeeded in ")


def test_a_failed_orch_minions_leaves_the_master_as_it_was(fakes):
    result = before_a_master_change(fakes, minions_outcome="failed")
    assert result.returncode == 1
    assert lines(result.stderr)[-1] == FAILED_MESSAGE.replace("orch.koo_test_failed", "orch.minions")
    state = fakes.read()
    assert (state.get("master_restarts", 0), state["master_config"]) == (0, {"changes": 2})
    assert [call[1] for call in fakes.calls("salt-run") if call[0] == "state.orchestrate"] == ["orch.minions"]


def test_a_minion_that_does_not_answer_the_restarted_master_is_named(fakes):
    # One that answered before the restart and not after it: here the one minion the fake's
    # orch.minions skipped, which then hangs when the master restarts.
    fakes.update(hung=["k8s-worker-0.lab.example.org"])
    result = before_a_master_change(fakes, KOO_MASTER_RESTART_TIMEOUT=3)
    assert result.returncode == 1
    assert lines(result.stderr)[-1] == (
        f"the Salt master on {HOST} restarted with its new configuration, and k8s-worker-0.lab.example.org "
        "did not answer it for 3 s"
    )


def test_no_master_change_no_orch_minions(fakes):
    replay(fakes, "succeeded")
    result = fakes.run("orchestrate.sh")
    assert result.returncode == 0, result.stderr
    assert [call[-1] for call in fakes.calls("salt-call")] == ["test=True", "salt_master"]
    assert [call[1] for call in fakes.calls("salt-run") if call[0] == "state.orchestrate"] == ["orch.deploy"]
    assert "Salt master configured" not in result.stdout
