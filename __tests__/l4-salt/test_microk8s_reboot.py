"""
The microk8s module's _reboot, the rolling reboot (orch.reboot): drain noting the boot id, wait
for another one, uncordon.
"""

from __future__ import annotations

import importlib
import json

import pytest
from microk8s_support import calls_of, joined_cluster, schedulable
from salt.exceptions import CommandExecutionError


def test_a_rebooted_node_counts_as_back_only_when_ready_with_a_new_boot_id(microk8s, tmp_path, monkeypatch):
    cluster = joined_cluster(microk8s, tmp_path)
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    master = cluster.as_master()
    booted = cluster.worker.state()["boot_id"]
    assert master.drain_for_reboot("10.1.0.101", 60) == {"node": "k8s-worker-1", "boot_id": booted}
    assert calls_of(cluster.master, "kubectl drain") == [
        "kubectl drain k8s-worker-1 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"
    ]
    assert schedulable(master, "10.1.0.101") == [False]
    # Not rebooted yet: Ready with the boot id it was drained with is not back.
    with pytest.raises(CommandExecutionError) as raised:
        master.wait_node_rebooted("10.1.0.101", 0, 0)
    assert str(raised.value) == (
        "the node at 10.1.0.101 is not back from its reboot after 0 s; last: k8s-worker-1 has not rebooted, Ready"
    )
    # Booted, its services still starting: no kubelet posts yet, so the API server still holds the
    # boot id the node was drained with, not Ready.
    faults = cluster.worker.home / "fake" / "faults.json"
    faults.parent.mkdir(exist_ok=True)
    faults.write_text(json.dumps({"restart_seconds": 60}))
    assert cluster.worker.run("fake-boot").returncode == 0
    with pytest.raises(CommandExecutionError, match=r"; last: k8s-worker-1 has not rebooted, not Ready$"):
        master.wait_node_rebooted("10.1.0.101", 0, 0)
    # Its kubelet posts the new boot id with the node not Ready yet (its network starting).
    faults.write_text(json.dumps({"restart_seconds": 0, "not_ready": True}))
    assert cluster.worker.run("fake-boot").returncode == 0
    with pytest.raises(CommandExecutionError, match=r"; last: k8s-worker-1 rebooted, not Ready$"):
        master.wait_node_rebooted("10.1.0.101", 0, 0)
    faults.write_text(json.dumps({"restart_seconds": 0}))
    back = master.wait_node_rebooted("10.1.0.101", 30, 0)
    assert back == {"node": "k8s-worker-1", "boot_id": cluster.worker.state()["boot_id"]}
    assert back["boot_id"] != booted
    assert master.uncordon_node("10.1.0.101") == "k8s-worker-1"
    assert schedulable(master, "10.1.0.101") == [True]


def test_waiting_for_a_reboot_nobody_drained_for_is_an_error_not_a_wait(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    with pytest.raises(CommandExecutionError) as raised:
        master.wait_node_rebooted("10.1.0.100", 30, 0)
    assert str(raised.value) == (
        "no boot id was noted for k8s-worker-0: drain it for the reboot first (microk8s.drain_for_reboot)"
    )
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.199$"):
        master.drain_for_reboot("10.1.0.199", 60)
