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

import pytest
from harness.provisioners import FIXTURES, HOST, lines
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
