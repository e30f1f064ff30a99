"""Unit tests of salt/_states/microk8s.py: __salt__ and __opts__ patched, whole return dicts."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import load_module
from salt.exceptions import CommandExecutionError

STATE_PATH = Path(__file__).resolve().parents[2] / "salt" / "_states" / "microk8s.py"


@pytest.fixture
def states():
    module = load_module("microk8s_states", STATE_PATH)
    module.__opts__ = {"test": False}
    return module


class Node:
    """A microk8s node as the execution module reports it, recording what the states do."""

    def __init__(self, running=True, addons=None, fail=None):
        self.running = running
        self.addons = dict(addons or {})
        self.fail = fail
        self.actions = []

    def functions(self):
        def addon_status(name):
            if name not in self.addons:
                raise CommandExecutionError(f"microk8s has no addon named {name!r}")
            return self.addons[name]

        def enable(name, args=None):
            self.actions.append(("enable", name, args))
            if self.fail:
                raise CommandExecutionError(self.fail)
            self.addons[name] = "enabled"

        def disable(name):
            self.actions.append(("disable", name))
            self.addons[name] = "disabled"

        def start():
            self.actions.append(("start",))
            self.running = True

        return {
            "microk8s.status": lambda: {},
            "microk8s.is_running": lambda: self.running,
            "microk8s.start": start,
            "microk8s.wait_ready": lambda timeout: True,
            "microk8s.addon_status": addon_status,
            "microk8s.enable": enable,
            "microk8s.disable": disable,
        }


def use(states, node, test=False):
    states.__salt__ = node.functions()
    states.__opts__ = {"test": test}


def test_running_when_already_running_changes_nothing(states):
    node = Node(running=True)
    for test in (False, True):
        use(states, node, test)
        assert states.running() == {
            "name": "microk8s",
            "result": True,
            "changes": {},
            "comment": "microk8s is already running",
        }
    assert node.actions == []


def test_running_predicts_in_test_mode_and_starts_otherwise(states):
    node = Node(running=False)
    use(states, node, test=True)
    assert states.running() == {
        "name": "microk8s",
        "result": None,
        "changes": {"running": {"old": False, "new": True}},
        "comment": "microk8s would be started",
    }
    assert node.actions == []
    use(states, node)
    assert states.running() == {
        "name": "microk8s",
        "result": True,
        "changes": {"running": {"old": False, "new": True}},
        "comment": "microk8s started",
    }
    assert node.actions == [("start",)]


def test_addon_enabled_is_idempotent(states):
    node = Node(addons={"dns": "disabled"})
    use(states, node)
    first = states.addon_enabled("dns", ["1.1.1.1"])
    assert first == {
        "name": "dns",
        "result": True,
        "changes": {"dns": {"old": "disabled", "new": "enabled"}},
        "comment": "addon dns enabled",
    }
    second = states.addon_enabled("dns", ["1.1.1.1"])
    assert second == {"name": "dns", "result": True, "changes": {}, "comment": "addon dns is already enabled"}
    assert node.actions == [("enable", "dns", ["1.1.1.1"])]


def test_addon_enabled_in_test_mode_only_predicts(states):
    node = Node(addons={"dns": "disabled"})
    use(states, node, test=True)
    assert states.addon_enabled("dns") == {
        "name": "dns",
        "result": None,
        "changes": {"dns": {"old": "disabled", "new": "enabled"}},
        "comment": "addon dns would be enabled",
    }
    assert node.actions == []


def test_addon_disabled_disables_once(states):
    node = Node(addons={"registry": "enabled"})
    use(states, node)
    assert states.addon_disabled("registry")["changes"] == {"registry": {"old": "enabled", "new": "disabled"}}
    assert states.addon_disabled("registry") == {
        "name": "registry",
        "result": True,
        "changes": {},
        "comment": "addon registry is already disabled",
    }


def test_addon_failures_are_reported_not_raised(states):
    use(states, Node(addons={"dns": "disabled"}, fail="Addon dns failed to enable"))
    assert states.addon_enabled("dns") == {
        "name": "dns",
        "result": False,
        "changes": {},
        "comment": "addon dns could not be enabled: Addon dns failed to enable",
    }
    use(states, Node(addons={}))
    assert states.addon_enabled("nope") == {
        "name": "nope",
        "result": False,
        "changes": {},
        "comment": "microk8s has no addon named 'nope'",
    }


def test_virtual_needs_the_execution_module(states):
    states.__salt__ = {}
    assert states.__virtual__() == (
        False,
        "the microk8s state module needs the microk8s execution module (and its binary)",
    )
    states.__salt__ = {"microk8s.status": lambda: {}}
    assert states.__virtual__() == "microk8s"
