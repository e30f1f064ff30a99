"""
reboot.sh ROLL NODE_ID... against fake salt: what it does with each answer of
kube_on_os.reboot_required. The roll itself, with real Salt, the real modules and orch.reboot, is
__tests__/l4-salt/test_reboot_roll.py.
"""

from __future__ import annotations

import json

import pytest
from harness.provisioners import LAYOUT

MASTER, VOTER, WORKER = (m.fqdn for m in LAYOUT.kube_nodes(3))
NODES = (MASTER, VOTER, WORKER)
NEEDED = {"required": True, "packages": ["linux-image-6.8.0-51-generic"]}
NOT_NEEDED = {"required": False, "packages": []}


def state(answers: dict) -> dict:
    keys = {"minions": list(NODES), "minions_pre": [], "minions_rejected": [], "minions_denied": []}
    returns = {"saltutil.sync_modules": {node: [] for node in NODES}, "kube_on_os.reboot_required": answers}
    return {"keys": keys, "returns": returns}


def test_with_the_roll_on_the_nodes_that_need_it_reboot_through_orch_reboot(fakes):
    fakes.update(**state({MASTER: NEEDED, VOTER: NOT_NEEDED, WORKER: NEEDED}))
    result = fakes.run("reboot.sh", "true", *NODES)
    assert result.stdout.splitlines()[0] == (
        f"reboot_for_updates: rebooting 2 of 3 Kubernetes nodes for their updates, one at a time: {MASTER}, {WORKER}"
    )
    targets = ",".join(NODES)
    assert fakes.calls("salt") == [
        ["--out=json", "--static", "--timeout=120", "--list", targets, "saltutil.sync_modules"],
        ["--out=json", "--static", "--timeout=120", "--list", targets, "kube_on_os.reboot_required"],
    ]
    (run,) = [call for call in fakes.calls("salt-run") if "state.orchestrate" in call]
    pillar = next(argument for argument in run if argument.startswith("pillar="))
    assert run[run.index("state.orchestrate") + 1] == "orch.reboot"
    assert json.loads(pillar.removeprefix("pillar=")) == {"orchestration": {"roll": [MASTER, WORKER]}}


def test_with_the_roll_off_the_nodes_are_named_and_nothing_runs(fakes):
    fakes.update(**state({MASTER: NOT_NEEDED, VOTER: NEEDED, WORKER: NOT_NEEDED}))
    result = fakes.run("reboot.sh", "false", *NODES)
    assert (result.returncode, result.stderr) == (0, "")
    assert result.stdout == (
        f"reboot_for_updates is off: 1 of 3 Kubernetes nodes need a reboot for their updates: {VOTER}; "
        "set it to true to roll them\n"
    )
    assert fakes.calls("salt-run") == []


@pytest.mark.parametrize("roll", ["true", "false"])
def test_no_node_that_needs_a_reboot_starts_nothing(fakes, roll):
    fakes.update(**state(dict.fromkeys(NODES, NOT_NEEDED)))
    result = fakes.run("reboot.sh", roll, *NODES)
    assert (result.returncode, result.stdout) == (
        0,
        "reboot_for_updates: no Kubernetes node needs a reboot for its updates\n",
    )
    assert fakes.calls("salt-run") == []


def test_a_node_that_does_not_answer_is_a_failure_naming_it(fakes):
    fakes.update(**state({MASTER: NOT_NEEDED, WORKER: NEEDED}))
    result = fakes.run("reboot.sh", "true", *NODES)
    assert result.returncode == 1
    assert result.stderr == (
        f"cannot tell whether {VOTER} needs a reboot: it did not answer kube_on_os.reboot_required\n"
    )
    assert fakes.calls("salt-run") == []


def test_a_node_whose_module_failed_is_a_failure_naming_it(fakes):
    fakes.update(**state({MASTER: "'kube_on_os.reboot_required' is not available.", VOTER: NOT_NEEDED, WORKER: NEEDED}))
    result = fakes.run("reboot.sh", "true", *NODES)
    assert (result.returncode, result.stderr) == (
        1,
        f"cannot tell whether {MASTER} needs a reboot: 'kube_on_os.reboot_required' is not available.\n",
    )
    assert fakes.calls("salt-run") == []


USAGE = "usage: reboot.sh ROLL NODE_ID... (ROLL: true or false, from reboot_for_updates)\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("true",), "expected ROLL and at least one NODE_ID, got 1 arguments"),
        (("yes", MASTER), 'ROLL must be true or false, got "yes"'),
        (("true", MASTER, "k8s-*"), 'NODE_ID "k8s-*" is not a lower-case DNS name'),
    ],
)
def test_usage_errors(fakes, args, message):
    result = fakes.run("reboot.sh", *args)
    assert (result.returncode, result.stderr) == (2, f"reboot.sh: {message}\n{USAGE}")
    assert fakes.calls() == []
