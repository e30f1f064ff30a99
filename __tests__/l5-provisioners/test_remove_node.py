"""remove-node.sh MASTER_ID NODE_ID NODE_ADDRESS, against fake salt and salt-key."""

from __future__ import annotations

import pytest
from harness.provisioners import HOST

MASTER, NODE, OTHER = "k8s-master.lab.example.org", "k8s-worker-1.lab.example.org", "k8s-worker-0.lab.example.org"
ADDRESS = "10.1.0.101"
FORGET = ["--out=json", "--static", "--timeout=30", MASTER, "microk8s.forget_node", ADDRESS]


def state(forget=None, accepted=(MASTER, NODE, OTHER), **extra) -> dict:
    returns = {"microk8s.forget_node": {MASTER: forget}} if forget is not None else {}
    keys = {"minions": list(accepted), "minions_pre": [], "minions_rejected": [], "minions_denied": []}
    return {"keys": keys, "returns": returns, **extra}


def test_forgets_the_node_on_the_master_then_deletes_its_key(fakes):
    fakes.update(**state(forget=True))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"removed node {NODE} ({ADDRESS}) from the microk8s cluster on {MASTER}",
        f"deleted minion key: {NODE}",
    ]
    assert fakes.calls("salt") == [FORGET]
    assert [call for call in fakes.calls("salt-key") if call[0] == "-y"] == [["-y", f"--delete={NODE}"]]
    assert fakes.read()["keys"]["minions"] == [MASTER, OTHER]


def test_forgets_the_departed_machine_in_the_key_ledger(fakes, tmp_path):
    ledger = tmp_path / "fakes" / "machines"
    ledger.write_text(f"{OTHER} m-0\n{NODE} m-1\n")
    fakes.update(**state(forget=True))
    assert fakes.run("remove-node.sh", MASTER, NODE, ADDRESS).returncode == 0
    assert ledger.read_text() == f"{OTHER} m-0\n"


def test_a_node_already_gone_is_fine(fakes):
    fakes.update(**state(forget=False, accepted=(MASTER, OTHER)))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"node {NODE} ({ADDRESS}) is not in the microk8s cluster on {MASTER}; nothing to remove",
        f"minion key of {NODE} is already absent on {HOST}",
    ]
    assert [call for call in fakes.calls("salt-key") if call[0] == "-y"] == []


def test_a_pending_key_is_deleted_too(fakes):
    fakes.update(**state(forget=False))
    fakes.update(keys={"minions": [MASTER], "minions_pre": [NODE], "minions_rejected": [], "minions_denied": []})
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == f"deleted minion key: {NODE}"
    assert fakes.read()["keys"]["minions_pre"] == []


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
    fakes.update(**state(forget=forget))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert (result.returncode, result.stdout) == (1, "")
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
        f"cannot remove node {NODE} ({ADDRESS}): {MASTER} did not answer microk8s.forget_node "
        "(salt: ERROR: No return received)\n"
    )
    assert fakes.calls("salt-key") == []


def test_a_failing_key_deletion_is_a_failure(fakes):
    fakes.update(**state(forget=True, salt_key_error="[ERROR   ] Permission denied: '/etc/salt/pki/master/minions'"))
    result = fakes.run("remove-node.sh", MASTER, NODE, ADDRESS)
    assert result.returncode == 1
    assert result.stderr == (
        f"salt-key --list=all failed on {HOST}: [ERROR   ] Permission denied: '/etc/salt/pki/master/minions'\n"
    )


USAGE = "usage: remove-node.sh MASTER_ID NODE_ID NODE_ADDRESS\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((MASTER, NODE), "expected three arguments, got 2"),
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
