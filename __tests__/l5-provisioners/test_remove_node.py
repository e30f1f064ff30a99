"""remove-node.sh MASTER_ID NODE_ID NODE_ADDRESS [DRAIN_SECONDS], against fake salt and salt-key."""

from __future__ import annotations

import pytest
from harness.provisioners import HOST, LAYOUT

MASTER, NODE, OTHER = LAYOUT.master.fqdn, LAYOUT.worker(1).fqdn, LAYOUT.worker(0).fqdn
ADDRESS = LAYOUT.worker(1).address
VACATE = ["--out=json", "--static", "--timeout=390", MASTER, "microk8s.vacate_node", ADDRESS, "300"]
LEAVE = ["--out=json", "--static", "--timeout=30", NODE, "microk8s.leave"]
FORGET = ["--out=json", "--static", "--timeout=30", MASTER, "microk8s.forget_node", ADDRESS]
# What the module returns (salt/_modules/microk8s/_scale.py vacate) and what microk8s leave prints
# on a worker (scripts/wrappers/leave.py reset_current_dqlite_worker_installation, then apply_cni).
DRAINED = {"outcome": "drained", "node": "k8s-worker-1", "member": None, "seconds": 12, "reason": None}
ABSENT = {"outcome": "absent", "node": None, "member": None, "seconds": 0, "reason": None}
LEFT = "Configuring services.\nGenerating new cluster certificates.\nWaiting for node to start."
REFUSAL = (
    "refusing to remove k8s-worker-1 (a dqlite voter): the HA cluster would keep 2 of its 3 voters; "
    "keep num_kube_nodes >= 3"
)


def state(vacate=None, leave=None, forget=None, accepted=(MASTER, NODE, OTHER), **extra) -> dict:
    returns = {}
    for function, minion, value in (
        ("microk8s.vacate_node", MASTER, vacate),
        ("microk8s.leave", NODE, leave),
        ("microk8s.forget_node", MASTER, forget),
    ):
        if value is not None:
            returns[function] = {minion: value}
    keys = {"minions": list(accepted), "minions_pre": [], "minions_rejected": [], "minions_denied": []}
    return {"keys": keys, "returns": returns, **extra}


def test_drains_the_node_it_leaves_the_master_forgets_it_then_its_key_goes(fakes):
    fakes.update(**state(vacate=DRAINED, leave=LEFT, forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"drained node k8s-worker-1 ({ADDRESS}) on {MASTER} in 12 s",
        f"node {NODE} left the microk8s cluster",
        f"removed node {NODE} ({ADDRESS}) from the microk8s cluster on {MASTER}",
        f"deleted minion key: {NODE}",
    ]
    assert fakes.calls("salt") == [VACATE, LEAVE, FORGET]
    assert [call for call in fakes.calls("salt-key") if call[0] == "-y"] == [["-y", f"--delete={NODE}"]]
    assert fakes.read()["keys"]["minions"] == [MASTER, OTHER]


def test_the_drain_bound_is_an_optional_fourth_argument(fakes):
    fakes.update(**state(vacate={**DRAINED, "seconds": 3}, leave=LEFT, forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS, "30")
    assert result.returncode == 0, result.stderr
    assert fakes.calls("salt")[0] == [
        "--out=json", "--static", "--timeout=120", MASTER, "microk8s.vacate_node", ADDRESS, "30"
    ]  # fmt: skip


def test_a_drain_that_gives_up_is_reported_and_the_removal_goes_on(fakes):
    reason = 'error when evicting pods/"web-0" -n "default": global timeout reached: 300s'
    gave_up = {**DRAINED, "outcome": "gave-up", "seconds": 301, "reason": reason}
    fakes.update(**state(vacate=gave_up, leave=LEFT, forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [
        f"drain of node k8s-worker-1 ({ADDRESS}) gave up after 301 s ({reason}); "
        "going on: its machine is deleted anyway",
        f"node {NODE} left the microk8s cluster",
    ]
    assert fakes.calls("salt") == [VACATE, LEAVE, FORGET]


@pytest.mark.parametrize(
    ("keys", "leave", "line"),
    [
        # Its minion is gone with its machine: salt --static sends it no job.
        ((MASTER, OTHER), None, f"node {NODE} did not answer microk8s.leave (salt: ERROR: No return received)"),
        # It took the job and went silent.
        ((MASTER, NODE, OTHER), {"failed": True}, f"node {NODE} did not answer microk8s.leave"),
        (
            (MASTER, NODE, OTHER),
            "ERROR: microk8s leave failed (exit 2): Not in clustering mode.",
            f"node {NODE} did not leave (microk8s.leave failed: ERROR: microk8s leave failed (exit 2): "
            "Not in clustering mode.)",
        ),
    ],
    ids=["no minion", "no answer", "failed"],
)
def test_a_node_that_does_not_leave_is_removed_all_the_same(fakes, keys, leave, line):
    fakes.update(**state(vacate=DRAINED, leave=leave, forget=True, accepted=keys))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[1:3] == [
        f"{line}; removing it without leaving",
        f"removed node {NODE} ({ADDRESS}) from the microk8s cluster on {MASTER}",
    ]
    assert fakes.calls("salt") == [VACATE, LEAVE, FORGET]


def test_a_voter_the_ha_cluster_cannot_lose_is_refused_before_anything_is_touched(fakes):
    refused = {"outcome": "refused", "node": "k8s-worker-1", "member": "voter", "seconds": 0, "reason": REFUSAL}
    fakes.update(**state(vacate=refused, leave=LEFT, forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"cannot remove node {NODE} ({ADDRESS}): {REFUSAL}\n"
    assert fakes.calls("salt") == [VACATE]
    assert fakes.calls("salt-key") == []
    assert NODE in fakes.read()["keys"]["minions"]


def test_a_dqlite_member_without_a_kubernetes_node_is_not_drained_but_removed(fakes):
    no_node = {**ABSENT, "outcome": "no-node", "member": "voter"}
    fakes.update(**state(vacate=no_node, leave=LEFT, forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == (
        f"node {NODE} ({ADDRESS}) is a dqlite member without a Kubernetes node; nothing to drain"
    )
    assert fakes.calls("salt") == [VACATE, LEAVE, FORGET]


def test_forgets_the_departed_machine_in_the_key_ledger(fakes, tmp_path):
    ledger = tmp_path / "fakes" / "machines"
    ledger.write_text(f"{OTHER} m-0\n{NODE} m-1\n")
    fakes.update(**state(vacate=DRAINED, leave=LEFT, forget=True))
    assert fakes.run("remove-node.sh", MASTER, NODE, ADDRESS).returncode == 0
    assert ledger.read_text() == f"{OTHER} m-0\n"


def test_a_node_already_gone_is_fine(fakes):
    # The second run after a success: the cluster knows no node there, its key is gone.
    fakes.update(**state(vacate=ABSENT, accepted=(MASTER, OTHER)))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"node {NODE} ({ADDRESS}) is not in the microk8s cluster on {MASTER}; nothing to remove",
        f"minion key of {NODE} is already absent on {HOST}",
    ]
    assert fakes.calls("salt") == [VACATE]
    assert [call for call in fakes.calls("salt-key") if call[0] == "-y"] == []


def test_a_node_that_left_between_vacate_and_forget_is_fine(fakes):
    fakes.update(**state(vacate=DRAINED, leave=LEFT, forget=False))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[2] == (
        f"node {NODE} ({ADDRESS}) is not in the microk8s cluster on {MASTER} any more; nothing to remove"
    )


def test_a_pending_key_is_deleted_too(fakes):
    fakes.update(**state(vacate=ABSENT))
    fakes.update(keys={"minions": [MASTER], "minions_pre": [NODE], "minions_rejected": [], "minions_denied": []})
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"deleted minion key: {NODE}"
    assert fakes.read()["keys"]["minions_pre"] == []


def test_a_departing_minion_that_asks_again_at_once_leaves_a_pending_key(fakes):
    """
    The node's machine runs until Terraform deletes it after this script, so its minion may ask
    the master again as soon as its key is gone: pending, never accepted, and the removal is done.
    """
    fakes.update(**state(vacate=ABSENT), arrivals={"2": {"minions_pre": [NODE]}})
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"deleted minion key: {NODE}"
    assert fakes.read()["keys"]["minions_pre"] == [NODE]


def test_a_key_still_accepted_after_the_delete_is_a_failure(fakes):
    fakes.update(**state(vacate=ABSENT), arrivals={"2": {"minions": [NODE]}})
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 1
    assert result.stderr == f"salt-key --delete={NODE} left the key accepted on {HOST}\n"


@pytest.mark.parametrize(
    ("forget", "detail"),
    [
        # What Salt 3007 returns when the function raises CommandExecutionError, and when it is missing.
        (
            "ERROR: microk8s remove-node 10.1.0.101 failed: Error from server (Forbidden)",
            "ERROR: microk8s remove-node 10.1.0.101 failed: Error from server (Forbidden)",
        ),
        ("'microk8s.forget_node' is not available.", "'microk8s.forget_node' is not available."),
        (
            "The minion function caused an exception: Traceback (most recent call last):\n"
            '  File "/opt/saltstack/salt/lib/python3.10/site-packages/salt/minion.py", line 2970\n'
            "KeyError: 'nodes'\n",
            "KeyError: 'nodes'",
        ),
    ],
    ids=["raised", "not available", "exception"],
)
def test_a_failing_forget_node_fails_and_keeps_the_key(fakes, forget, detail):
    fakes.update(**state(vacate=DRAINED, leave=LEFT, forget=forget))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 1
    assert result.stdout.splitlines()[-1] == f"node {NODE} left the microk8s cluster"
    assert result.stderr == (
        f"cannot remove node {NODE} ({ADDRESS}): microk8s.forget_node on {MASTER} failed: {detail}\n"
    )
    assert fakes.calls("salt-key") == []
    assert NODE in fakes.read()["keys"]["minions"]


def test_a_master_that_does_not_answer_is_a_failure(fakes):
    fakes.update(**state(accepted=(NODE,)))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 1
    assert result.stderr == (
        f"cannot remove node {NODE} ({ADDRESS}): {MASTER} did not answer microk8s.vacate_node "
        "(salt: ERROR: No return received)\n"
    )
    assert fakes.calls("salt") == [VACATE]
    assert fakes.calls("salt-key") == []


def test_a_failing_vacate_node_fails_before_anything_else(fakes):
    error = "ERROR: microk8s status listed no dqlite members 3 times while high availability is enabled"
    fakes.update(**state(vacate=error, leave=LEFT, forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == f"cannot remove node {NODE} ({ADDRESS}): microk8s.vacate_node on {MASTER} failed: {error}\n"
    assert fakes.calls("salt") == [VACATE]
    assert fakes.calls("salt-key") == []


def test_a_failing_key_deletion_is_a_failure(fakes):
    fakes.update(
        **state(
            vacate=DRAINED,
            leave=LEFT,
            forget=True,
            salt_key_error="[ERROR   ] Permission denied: '/etc/salt/pki/master/minions'",
        )
    )
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 1
    assert result.stderr == (
        f"salt-key --list=all failed on {HOST}: [ERROR   ] Permission denied: '/etc/salt/pki/master/minions'\n"
    )


USAGE = "usage: remove-node.sh MASTER_ID NODE_ID NODE_ADDRESS [DRAIN_SECONDS]\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((MASTER, NODE), "expected three or four arguments, got 2"),
        ((MASTER, NODE, ADDRESS, "300", "x"), "expected three or four arguments, got 5"),
        ((MASTER, NODE, ADDRESS, "0"), 'DRAIN_SECONDS "0" is not a whole number of seconds from 1 to 3600'),
        ((MASTER, NODE, ADDRESS, "5m"), 'DRAIN_SECONDS "5m" is not a whole number of seconds from 1 to 3600'),
        ((MASTER, NODE, ADDRESS, "3601"), 'DRAIN_SECONDS "3601" is not a whole number of seconds from 1 to 3600'),
        (("k8s-*", NODE, ADDRESS), 'MASTER_ID "k8s-*" is not a lower-case DNS name'),
        ((MASTER, "Worker_1", ADDRESS), 'NODE_ID "Worker_1" is not a lower-case DNS name'),
        ((MASTER, NODE, "10.1.0.256"), 'NODE_ADDRESS "10.1.0.256" is not an IPv4 address'),
        ((MASTER, NODE, "10.1.0"), 'NODE_ADDRESS "10.1.0" is not an IPv4 address'),
        ((MASTER, NODE, "k8s-worker-1"), 'NODE_ADDRESS "k8s-worker-1" is not an IPv4 address'),
        ((MASTER, MASTER, ADDRESS), f"NODE_ID {MASTER} is the Kubernetes master itself"),
    ],
)
def test_usage_errors(fakes, args, message):
    result = fakes.run("remove-node.sh", *args)
    assert (result.returncode, result.stderr) == (2, f"remove-node.sh: {message}\n{USAGE}")
    assert fakes.calls() == []
