"""
upgrade.sh MASTER_ID CHANNEL against fake salt: what it does with each answer of
microk8s.upgrade_plan. The roll itself, with real Salt, the real module and orch.upgrade, is
__tests__/l4-salt/test_join_protocol.py (test_the_chain_rolls_only_the_nodes_in_the_cluster_...).
"""

from __future__ import annotations

import pytest

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
    fakes.update(**state(plan={"channel": CHANNEL, "minor": 35, "roll": [], "current": {MASTER: "v1.35.0"}}))
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
    fakes.update(**state(plan={"channel": CHANNEL, "minor": 35, "roll": [], "current": {}}))
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


def test_a_refused_plan_fails_with_the_reason_and_rolls_nothing(fakes):
    reason = (
        f"{MASTER} runs v1.33.2: microk8s_channel {CHANNEL} skips a minor release; "
        "upgrade one at a time (1.34/stable next)"
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


USAGE = "usage: upgrade.sh MASTER_ID CHANNEL\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((MASTER,), "expected two arguments, got 1"),
        (("k8s-*", CHANNEL), 'MASTER_ID "k8s-*" is not a lower-case DNS name'),
        ((MASTER, "latest/stable"), 'CHANNEL must be 1.<minor>/<stable|candidate|beta|edge>, got "latest/stable"'),
        (
            (MASTER, "1.35/stable; reboot"),
            'CHANNEL must be 1.<minor>/<stable|candidate|beta|edge>, got "1.35/stable; reboot"',
        ),
    ],
)
def test_usage_errors(fakes, args, message):
    result = fakes.run("upgrade.sh", *args)
    assert (result.returncode, result.stderr) == (2, f"upgrade.sh: {message}\n{USAGE}")
    assert fakes.calls() == []
