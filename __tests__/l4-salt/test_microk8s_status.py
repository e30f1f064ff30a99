"""
The microk8s module's _status: `microk8s status` parsed (running, worker, high availability,
addons) in every shape microk8s prints it, and a worker known by its lock file.
"""

from __future__ import annotations

import pytest
import yaml
from microk8s_support import NO_LOCK, fake_cli, fixture, with_status
from salt.exceptions import CommandExecutionError


def test_status_parses_ha_nodes_roles_and_addons(microk8s):
    microk8s.__salt__ = with_status(fixture("status-ha.yaml"))
    status = microk8s.status()
    assert status["running"] is True
    assert status["worker"] is False
    assert status["high_availability"] == {
        "enabled": True,
        "nodes": [
            {"address": "10.1.0.10:19001", "role": "voter"},
            {"address": "10.1.0.100:19001", "role": "voter"},
            {"address": "10.1.0.101:19001", "role": "voter"},
            {"address": "10.1.0.102:19001", "role": "standby"},
        ],
    }
    assert status["addons"]["dns"] == {"status": "enabled", "description": "CoreDNS", "version": "1.28"}
    assert microk8s.addon_status("registry") == "disabled"
    assert len(microk8s.members()) == 4


def test_status_without_ha_has_no_nodes(microk8s):
    microk8s.__salt__ = with_status(fixture("status-single.yaml"))
    assert microk8s.status()["high_availability"] == {"enabled": False, "nodes": []}
    assert microk8s.addons()["hostpath-storage"]["status"] == "enabled"


def test_a_microk8s_that_is_not_ready_prints_valid_yaml_parsed_as_not_running(microk8s):
    text = fixture("status-not-running.yaml")
    assert yaml.safe_load(text)["high-availability"]["message"].startswith("microk8s is not running")
    microk8s.__salt__ = with_status(text)
    assert microk8s.status() == {
        "running": False,
        "worker": False,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": "microk8s is not running. Use microk8s inspect for a deeper inspection.",
    }
    assert microk8s.is_running() is False


def test_a_stopped_microk8s_prints_a_line_not_a_status_and_is_not_running(microk8s):
    microk8s.__salt__ = with_status(fixture("status-stopped.txt"))
    assert microk8s.status()["running"] is False
    assert microk8s.status()["message"] == "microk8s is not running, try microk8s start"
    assert microk8s.is_running() is False


def test_a_worker_node_has_no_status_and_is_running_by_its_service(microk8s):
    services = []
    microk8s.__salt__ = with_status(
        fixture("status-worker.txt"),
        **{"file.file_exists": lambda path: path.endswith("/var/lock/clustered.lock")},
        **{"service.status": lambda name: services.append(name) or True},
    )
    assert microk8s.status() == {
        "running": None,
        "worker": True,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": "This MicroK8s deployment is acting as a node in a cluster. Please use the control plane node.",
    }
    assert microk8s.is_worker() is True
    assert microk8s.is_running() is True
    assert services == ["snap.microk8s.daemon-kubelite"]
    assert microk8s.membership() == {"role": "worker", "members": [], "ca": None}


def test_status_before_status_py_lists_addons_as_a_map(microk8s):
    microk8s.__salt__ = with_status(fixture("status-1.16.yaml"))
    status = microk8s.status()
    assert (status["running"], status["high_availability"]) == (True, {"enabled": False, "nodes": []})
    assert {name: addon["status"] for name, addon in status["addons"].items()} == {
        "dns": "enabled",
        "rbac": "disabled",
        "storage": "enabled",
    }


@pytest.mark.parametrize(
    "text",
    [
        "- a list\n",
        "microk8s: running\n",
        "microk8s:\n  running: True\nhigh-availability:\n  enabled: True\n  nodes: [10.1.0.10]\n",
        "microk8s:\n  running: True\naddons:\n  - dns\n",
        "microk8s:\n  running: True\naddons: 3\n",
        # The worker sentence inside some other output is not the wrapper's message.
        "Error: This MicroK8s deployment is acting as a node in a cluster. Please use the control plane node. (7)\n",
    ],
)
def test_a_status_of_an_unknown_shape_is_an_error_never_a_type_error(microk8s, text):
    microk8s.__salt__ = with_status(text)
    with pytest.raises(CommandExecutionError, match="microk8s status"):
        microk8s.status()


def test_a_worker_is_known_by_its_lock_file_without_running_status(microk8s):
    cli = fake_cli({})
    microk8s.__salt__ = {
        **NO_LOCK,
        "cmd.run_all": cli,
        "file.file_exists": lambda path: path.endswith("/clustered.lock"),
    }
    assert microk8s.status()["worker"] is True
    assert cli.calls == []
