"""
upgrade.sh MASTER_ID CHANNEL against fake salt: what it does with each answer of
microk8s.upgrade_plan, and how it runs the roll's steps through orchestrate.sh (the fake salt-run
replays a real orchestration's output). The roll itself, with real Salt, the real module and
orch.upgrade, is __tests__/l4-salt/test_join_protocol.py (test_the_chain_rolls_only_the_nodes_in_
the_cluster_..., test_a_channel_several_minors_ahead_...).
"""

from __future__ import annotations

import json

import pytest
from harness.provisioners import FIXTURES

MASTER, WORKER = "k8s-master.lab.example.org", "k8s-worker-0.lab.example.org"
CHANNEL = "1.35/stable"
PLAN = ["--out=json", "--static", "--timeout=120", MASTER, "microk8s.upgrade_plan", CHANNEL]


def state(plan=None, accepted=(MASTER, WORKER)) -> dict:
    returns = {"saltutil.sync_all": {MASTER: {}}, "saltutil.refresh_pillar": {MASTER: True}}
    if plan is not None:
        returns["microk8s.upgrade_plan"] = {MASTER: plan}
    keys = {"minions": list(accepted), "minions_pre": [], "minions_rejected": [], "minions_denied": []}
    return {"keys": keys, "returns": returns}


def test_syncs_the_master_then_asks_for_the_plan(fakes):
    fakes.update(
        **state(plan={"channel": CHANNEL, "minor": 35, "roll": [], "current": {MASTER: "v1.35.0"}, "steps": []})
    )
    result = fakes.run("upgrade.sh", MASTER, CHANNEL)
    assert (result.returncode, result.stderr) == (0, "")
    assert [call[4:] for call in fakes.calls("salt")] == [
        ["saltutil.sync_all"],
        ["saltutil.refresh_pillar", "wait=True"],
        ["microk8s.upgrade_plan", CHANNEL],
    ]
    assert fakes.calls("salt")[-1] == PLAN
    assert result.stdout == f"microk8s_channel {CHANNEL}: all 1 nodes in the cluster run 1.35; nothing to roll\n"
    assert fakes.calls("salt-run") == []


def test_a_first_deployment_is_left_to_orch_deploy(fakes):
    fakes.update(**state(plan={"channel": CHANNEL, "minor": 35, "roll": [], "current": {}, "steps": []}))
    result = fakes.run("upgrade.sh", MASTER, CHANNEL)
    assert (result.returncode, result.stdout) == (
        0,
        f"microk8s_channel {CHANNEL}: no node runs microk8s yet; orch.deploy installs it\n",
    )
    assert fakes.calls("salt-run") == []


def test_a_master_without_microk8s_yet_is_left_to_orch_deploy(fakes):
    # On a real host the microk8s module loads only once the snap put /snap/bin/microk8s there
    # (its __virtual__): before the first orch.deploy, Salt 3007 answers with the module's reason.
    reason = "the microk8s execution module needs the microk8s binary on PATH"
    fakes.update(**state(plan=f"'microk8s' __virtual__ returned False: {reason}"))
    result = fakes.run("upgrade.sh", MASTER, CHANNEL)
    assert (result.returncode, result.stderr) == (0, "")
    assert (
        result.stdout
        == f"microk8s_channel {CHANNEL}: microk8s is not installed on {MASTER} yet; orch.deploy installs it\n"
    )
    assert fakes.calls("salt-run") == []


def test_an_unset_channel_keeps_the_one_the_nodes_track(fakes):
    fakes.update(
        **state(plan={"channel": "1.28/stable", "minor": 28, "roll": [], "current": {MASTER: "v1.28.15"}, "steps": []})
    )
    result = fakes.run("upgrade.sh", MASTER, "")
    assert (result.returncode, result.stderr) == (0, "")
    # No channel: the module plans with the one the master tracks.
    assert fakes.calls("salt")[-1] == PLAN[:-1]
    assert (
        result.stdout
        == "microk8s_channel unset: the cluster keeps 1.28/stable, the channel its nodes track; nothing to roll\n"
    )
    assert fakes.calls("salt-run") == []


def two_steps(fakes, outcome: str) -> None:
    plan = {
        "channel": "1.30/stable",
        "minor": 30,
        "roll": [MASTER, WORKER],
        "current": {MASTER: "v1.29.2", WORKER: "v1.28.15"},
        "steps": [{"channel": "1.29/stable", "roll": [WORKER]}, {"channel": "1.30/stable", "roll": [MASTER, WORKER]}],
    }
    fakes.update(
        **state(plan=plan),
        state_orchestrate={
            "stdout_file": str(FIXTURES / f"orchestrate-{outcome}.out"),
            "exit": 0 if outcome == "succeeded" else 1,
        },
    )


def orchestrations(fakes) -> list[tuple[str, dict]]:
    calls = [call for call in fakes.calls("salt-run") if call[0] == "state.orchestrate"]
    return [(call[1], json.loads(next(a for a in call if a.startswith("pillar=")).split("=", 1)[1])) for call in calls]


def test_a_channel_several_minors_ahead_rolls_one_minor_at_a_time(fakes):
    two_steps(fakes, "succeeded")
    result = fakes.run("upgrade.sh", MASTER, "1.30/stable")
    assert (result.returncode, result.stderr) == (0, "")
    assert [line for line in result.stdout.splitlines() if line.startswith("microk8s_channel")] == [
        "microk8s_channel 1.30/stable: rolling 2 of 2 nodes to 1.30 one minor at a time, in 2 steps: "
        "1.29/stable, 1.30/stable",
        f"microk8s_channel 1.30/stable: rolling 1 of 2 nodes to 1.29 (step 1 of 2), one at a time: {WORKER}",
        f"microk8s_channel 1.30/stable: rolling 2 of 2 nodes to 1.30 (step 2 of 2), one at a time: {MASTER}, {WORKER}",
    ]
    # The second step finds the nodes synced by the first.
    assert orchestrations(fakes) == [
        ("orch.upgrade", {"orchestration": {"roll": [WORKER], "channel": "1.29/stable", "synced": False}}),
        ("orch.upgrade", {"orchestration": {"roll": [MASTER, WORKER], "channel": "1.30/stable", "synced": True}}),
    ]


def test_the_first_failed_step_stops_the_roll(fakes):
    two_steps(fakes, "failed")
    result = fakes.run("upgrade.sh", MASTER, "1.30/stable")
    assert result.returncode == 1
    assert orchestrations(fakes) == [
        ("orch.upgrade", {"orchestration": {"roll": [WORKER], "channel": "1.29/stable", "synced": False}})
    ]
    assert "(step 2 of 2)" not in result.stdout


def test_a_refused_plan_fails_with_the_reason_and_rolls_nothing(fakes):
    reason = (
        f"{MASTER} runs v1.36.0: microk8s_channel {CHANNEL} would downgrade it; "
        "Kubernetes cannot go back a minor release"
    )
    fakes.update(**state(plan=f"ERROR: {reason}"))
    result = fakes.run("upgrade.sh", MASTER, CHANNEL)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"cannot upgrade to microk8s_channel {CHANNEL}: {reason}\n"
    assert fakes.calls("salt-run") == []


def test_a_master_that_does_not_answer_is_a_failure(fakes):
    fakes.update(**state(accepted=(WORKER,)))
    result = fakes.run("upgrade.sh", MASTER, CHANNEL)
    assert result.returncode == 1
    assert result.stderr == (
        f"cannot plan the upgrade to microk8s_channel {CHANNEL}: {MASTER} did not answer microk8s.upgrade_plan "
        "(salt: ERROR: No return received)\n"
    )


def test_a_master_that_took_the_job_and_went_silent_is_a_failure(fakes):
    # Salt 3007's batch output for a minion that stopped answering after it took the job.
    fakes.update(**state(plan={"failed": True}))
    result = fakes.run("upgrade.sh", MASTER, CHANNEL)
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"cannot plan the upgrade to microk8s_channel {CHANNEL}: {MASTER} did not answer microk8s.upgrade_plan"
    )


USAGE = 'usage: upgrade.sh MASTER_ID CHANNEL ("": microk8s_channel unset, keep the nodes\' channel)\n'


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((MASTER,), "expected two arguments, got 1"),
        (("k8s-*", CHANNEL), 'MASTER_ID "k8s-*" is not a lower-case DNS name'),
        (
            (MASTER, "latest/stable"),
            'CHANNEL must be 1.<minor>/<stable|candidate|beta|edge> or empty, got "latest/stable"',
        ),
        (
            (MASTER, "1.35/stable; reboot"),
            'CHANNEL must be 1.<minor>/<stable|candidate|beta|edge> or empty, got "1.35/stable; reboot"',
        ),
    ],
)
def test_usage_errors(fakes, args, message):
    result = fakes.run("upgrade.sh", *args)
    assert (result.returncode, result.stderr) == (2, f"upgrade.sh: {message}\n{USAGE}")
    assert fakes.calls() == []
