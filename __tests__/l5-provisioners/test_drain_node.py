"""drain-node.sh OPERATOR_ID NODE_ID NODE_ADDRESS [DRAIN_SECONDS], against fake salt."""

from __future__ import annotations

import pytest
from harness.provisioners import LAYOUT

MASTER, NODE = LAYOUT.master.fqdn, LAYOUT.worker(1).fqdn
ADDRESS = LAYOUT.worker(1).address
DRAIN = ["--out=json", "--static", "--timeout=390", MASTER, "microk8s.drain_for_replacement", ADDRESS, "300"]
# What the module returns (salt/_modules/microk8s/_reboot.py drain).
DRAINED = {"node": "k8s-worker-1", "boot_id": "6f1c0a9e-2b57-4d0c-9c39-5d1f2a7e8b10"}
KEYS = {"minions": [MASTER, NODE], "minions_pre": [], "minions_rejected": [], "minions_denied": []}


def answers(value, keys: dict = KEYS) -> dict:
    return {"keys": keys, "returns": {"microk8s.drain_for_replacement": {MASTER: value}}}


def test_the_operator_drains_the_node_noting_its_boot_id(fakes):
    fakes.update(**answers(DRAINED))
    result = fakes.run("drain-node.sh", MASTER, NODE, ADDRESS)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == f"drained node k8s-worker-1 ({ADDRESS}) on {MASTER} before its machine is deleted\n"
    assert fakes.calls("salt") == [DRAIN]


def test_the_drain_bound_is_an_optional_fourth_argument(fakes):
    fakes.update(**answers(DRAINED))
    assert fakes.run("drain-node.sh", MASTER, NODE, ADDRESS, "30").returncode == 0
    assert fakes.calls("salt") == [
        ["--out=json", "--static", "--timeout=120", MASTER, "microk8s.drain_for_replacement", ADDRESS, "30"]
    ]


@pytest.mark.parametrize(
    ("value", "keys", "line"),
    [
        # Salt 3007's return for a function that raised CommandExecutionError.
        (
            "ERROR: Kubernetes has no node at 10.1.0.101",
            KEYS,
            f"node {NODE} ({ADDRESS}) not drained: ERROR: Kubernetes has no node at 10.1.0.101; "
            "its machine is deleted anyway",
        ),
        # The operator took the job and went silent.
        (
            {"failed": True},
            KEYS,
            f"node {NODE} ({ADDRESS}) not drained: {MASTER} did not answer; its machine is deleted anyway",
        ),
        # No operator to ask (a cluster being destroyed, its key gone).
        (
            DRAINED,
            {**KEYS, "minions": [NODE]},
            f"node {NODE} ({ADDRESS}) not drained: {MASTER} did not answer (salt: ERROR: No return received); "
            "its machine is deleted anyway",
        ),
    ],
    ids=["failed", "no answer", "no operator"],
)
def test_a_node_that_is_not_drained_is_reported_and_its_machine_still_goes(fakes, value, keys, line):
    fakes.update(**answers(value, keys))
    result = fakes.run("drain-node.sh", MASTER, NODE, ADDRESS)
    assert (result.returncode, result.stdout, result.stderr) == (0, f"{line}\n", "")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((MASTER, NODE), "expected three or four arguments, got 2"),
        ((MASTER, "K8S", ADDRESS), 'NODE_ID "K8S" is not a lower-case DNS name'),
        ((MASTER, NODE, "10.1.0"), 'NODE_ADDRESS "10.1.0" is not an IPv4 address'),
        ((MASTER, NODE, ADDRESS, "0"), 'DRAIN_SECONDS "0" is not a whole number of seconds from 1 to 3600'),
    ],
    ids=["too few", "node id", "address", "drain seconds"],
)
def test_bad_arguments_are_refused_before_salt_is_asked(fakes, args, message):
    result = fakes.run("drain-node.sh", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert fakes.calls("salt") == []
