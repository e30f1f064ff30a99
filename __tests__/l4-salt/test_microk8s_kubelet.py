"""
The microk8s module's _kubelet: the kubelet's --cloud-provider and the API server's advertised
address in $SNAP_DATA/args, and the kubelite restart that makes them take effect, over the fake
microk8s and through the real loader.
"""

from __future__ import annotations

import importlib
import json
import re

import pytest
from harness.microk8s_node import FakeMicrok8s
from harness.salt_minion import ROOT, LocalMinion
from microk8s_support import MASTER, NO_LOCK, ok
from salt.exceptions import CommandExecutionError

# The not-ready window after a restart, for a test that looks inside it: long enough for the next
# command to start within it on a loaded machine (1 s was not, with the suites side by side).
RESTARTING = 8


def kubelet_args(node: FakeMicrok8s) -> list[str]:
    return (node.home / "args" / "kubelet").read_text().splitlines()


def test_the_kubelet_flag_is_written_once_and_removed_keeping_the_other_arguments(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    microk8s.__salt__ = node.salt_functions()
    installed = kubelet_args(node)
    assert "--anonymous-auth=false" in installed
    assert microk8s.kubelet_cloud_provider() is None
    assert microk8s.set_kubelet_external_cloud_provider(True) == {"changed": True, "old": None, "new": "external"}
    assert kubelet_args(node) == [*installed, "--cloud-provider=external"]
    assert microk8s.kubelet_cloud_provider() == "external"
    assert microk8s.set_kubelet_external_cloud_provider(True) == {
        "changed": False,
        "old": "external",
        "new": "external",
    }
    assert microk8s.set_kubelet_external_cloud_provider(False) == {"changed": True, "old": "external", "new": None}
    assert kubelet_args(node) == installed
    assert microk8s.set_kubelet_external_cloud_provider(False) == {"changed": False, "old": None, "new": None}
    # Any other --cloud-provider (either spelling) is replaced, not kept beside ours.
    (node.home / "args" / "kubelet").write_text("--cloud-provider gce\n--fail-swap-on=false\n")
    assert microk8s.kubelet_cloud_provider() == "gce"
    assert microk8s.set_kubelet_external_cloud_provider(True)["old"] == "gce"
    assert kubelet_args(node) == ["--fail-swap-on=false", "--cloud-provider=external"]


def test_the_advertised_address_is_written_once_and_replaced_keeping_the_other_arguments(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    microk8s.__salt__ = node.salt_functions()
    path = node.home / "args" / "kube-apiserver"
    installed = path.read_text().splitlines()
    assert "--secure-port=16443" in installed
    assert microk8s.apiserver_advertise_address() is None
    assert microk8s.set_apiserver_advertise_address("10.1.0.10") == {"changed": True, "old": None, "new": "10.1.0.10"}
    assert path.read_text().splitlines() == [*installed, "--advertise-address=10.1.0.10"]
    assert microk8s.set_apiserver_advertise_address("10.1.0.10")["changed"] is False
    # Another address (either spelling) is replaced, not kept beside it.
    path.write_text("--advertise-address 192.0.2.10\n--secure-port=16443\n")
    assert microk8s.apiserver_advertise_address() == "192.0.2.10"
    assert microk8s.set_apiserver_advertise_address("10.1.0.10")["old"] == "192.0.2.10"
    assert path.read_text().splitlines() == ["--secure-port=16443", "--advertise-address=10.1.0.10"]


def test_without_the_arguments_file_the_kubelet_flag_is_an_error(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    (node.home / "args" / "kubelet").unlink()
    microk8s.__salt__ = node.salt_functions()
    with pytest.raises(CommandExecutionError, match="args/kubelet does not exist: microk8s writes it at install"):
        microk8s.kubelet_cloud_provider()


def test_a_kubelite_restart_makes_the_node_not_ready_until_status_waits_it_out(microk8s, tmp_path):
    node = FakeMicrok8s(tmp_path, tmp_path / "cluster")
    (node.home / "fake" / "faults.json").parent.mkdir(parents=True, exist_ok=True)
    (node.home / "fake" / "faults.json").write_text(json.dumps({"restart_seconds": RESTARTING}))
    microk8s.__salt__ = node.salt_functions()
    # The fake's restart, alone: status fails until the services are back.
    restarted = node.run_all(["snap", "restart", "microk8s.daemon-kubelite"], python_shell=False, timeout=60)
    assert (restarted["retcode"], restarted["stdout"]) == (0, "Restarted.\n")
    assert node.run("status", "--format", "yaml").returncode == 1
    assert microk8s.restart_kubelite(30) is True
    assert node.run("status", "--format", "yaml").returncode == 0
    calls = (node.home / "calls.log").read_text().splitlines()
    assert calls[-3:-1] == ["snap restart microk8s.daemon-kubelite", "status --wait-ready --timeout 30"]


def test_a_worker_waits_for_its_kubelite_service_after_the_restart(microk8s, monkeypatch):
    waited = []
    monkeypatch.setattr(importlib.import_module("microk8s._kubelet").time, "sleep", waited.append)
    services = iter([False, False, True])
    calls = []
    microk8s.__salt__ = {
        "cmd.run_all": lambda cmd, **kwargs: calls.append(cmd) or ok("Restarted.\n"),
        "config.get": lambda key, default=None: default,
        "file.file_exists": lambda path: path.endswith("/var/lock/clustered.lock"),
        "service.status": lambda name: next(services),
    }
    assert microk8s.restart_kubelite(60) is True
    assert calls == [["snap", "restart", "microk8s.daemon-kubelite"]]
    assert waited == [2, 2]


def test_a_failed_restart_or_a_worker_that_does_not_come_back_is_an_error(microk8s, monkeypatch):
    monkeypatch.setattr(importlib.import_module("microk8s._kubelet").time, "sleep", lambda seconds: None)
    # snapd's answer to a caller without root (client: "access denied (try with sudo)").
    failed = {"retcode": 1, "stdout": "", "stderr": "error: access denied (try with sudo)"}
    microk8s.__salt__ = {"cmd.run_all": lambda cmd, **kwargs: failed, **NO_LOCK}
    message = "snap restart microk8s.daemon-kubelite failed: error: access denied (try with sudo)"
    with pytest.raises(CommandExecutionError, match=re.escape(message)):
        microk8s.restart_kubelite(60)
    microk8s.__salt__ = {
        "cmd.run_all": lambda cmd, **kwargs: ok("Restarted.\n"),
        "config.get": lambda key, default=None: default,
        "file.file_exists": lambda path: True,
        "service.status": lambda name: False,
    }
    message = "snap.microk8s.daemon-kubelite did not run again within 0 seconds"
    with pytest.raises(CommandExecutionError, match=re.escape(message)):
        microk8s.restart_kubelite(0)


def test_the_kubelet_state_through_the_real_loader_predicts_changes_restarts_once_and_removes(tmp_path):
    """
    state.single microk8s.kubelet_external_cloud_provider against the fake microk8s, as
    microk8s/kubelet.sls runs it: test mode predicts, a change restarts kubelite and waits for
    the node, a second run changes nothing, false removes the flag (and restarts again).
    """
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    (node.home / "fake").mkdir(parents=True, exist_ok=True)
    (node.home / "fake" / "faults.json").write_text(json.dumps({"restart_seconds": 1}))
    grains = {"microk8s.snap_data": str(node.home)}
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", grains=grains, env=node.env).call
    call("saltutil.sync_all")
    installed = kubelet_args(node)

    def kubelet(external: bool, *extra: str) -> dict:
        state = "microk8s.kubelet_external_cloud_provider"
        return next(iter(call("state.single", state, "kubelet", f"external={json.dumps(external)}", *extra).values()))

    def restarts() -> int:
        return (node.home / "calls.log").read_text().splitlines().count("snap restart microk8s.daemon-kubelite")

    predicted = kubelet(True, "test=True")
    assert (predicted["result"], predicted["changes"]) == (None, {"cloud_provider": {"old": None, "new": "external"}})
    assert (kubelet_args(node), restarts()) == (installed, 0)
    applied = kubelet(True)
    assert (applied["result"], applied["changes"]) == (True, predicted["changes"])
    assert applied["comment"] == "the kubelet runs with --cloud-provider=external (kubelite restarted)"
    assert (kubelet_args(node), restarts()) == ([*installed, "--cloud-provider=external"], 1)
    # The state returned once the node was ready again.
    assert node.run("status", "--format", "yaml").returncode == 0
    again = kubelet(True)
    assert (again["result"], again["changes"], restarts()) == (True, {}, 1)
    removed = kubelet(False)
    assert removed["changes"] == {"cloud_provider": {"old": "external", "new": None}}
    assert (kubelet_args(node), restarts()) == (installed, 2)
    assert kubelet(False)["changes"] == {}
