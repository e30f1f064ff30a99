"""
The rehearsal's microk8s (__tests__/doubles/rehearsal/fake-microk8s/microk8s.py) on its own: one node, its
state under a temporary root, its cluster agent on a free port of 127.0.0.1. Each test holds the
fake to a behaviour its docstring cites from microk8s 1.28, and the Salt module's status parser
(salt/_modules/microk8s/_status.py) reads what the fake prints. The rehearsal runs the fake
between hosts; this checks the texts, exit codes and token rules without one.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from harness.salt_minion import ROOT, load_module

FAKE = ROOT / "__tests__" / "doubles" / "rehearsal" / "fake-microk8s" / "microk8s.py"
# The module's own parser, by path: it is part of a Salt module package, not an importable one.
_status = load_module("_status", ROOT / "salt" / "_modules" / "microk8s" / "_status.py")

# The fake reads the node's addresses with iproute2's ip, as the rehearsal's Debian root has it;
# GitLab's node image may not.
pytestmark = pytest.mark.skipif(shutil.which("ip") is None, reason="the fake microk8s needs iproute2's ip")

WORKER_STATUS = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the control plane node.\n"
WORKER_LOCKED = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the master node.\n"
STOPPED = "microk8s is not running, try microk8s start\n"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class Node:
    """One fake microk8s node: `snap` and `microk8s` as the programs' names, and its agent."""

    def __init__(self, tmp_path: Path):
        self.root = tmp_path / "root"
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for program in ("snap", "microk8s"):
            (self.bin / program).symlink_to(FAKE)
        self.port = free_port()
        self.env = {**os.environ, "FAKE_MICROK8S_ROOT": str(self.root), "FAKE_MICROK8S_PORT": str(self.port)}
        snap_data = self.root / "var/snap/microk8s/current"
        (snap_data / "fake").mkdir(parents=True)
        # Started here rather than by the install, so that the test can stop it.
        self.agent = subprocess.Popen([sys.executable, str(FAKE), "agent"], env=self.env, stderr=subprocess.DEVNULL)
        for _ in range(50):
            if self.agent_answers():
                break
            time.sleep(0.1)
        self.snap_data = snap_data

    def agent_answers(self) -> bool:
        try:
            return self.post("/health")[0] == 200
        except OSError:
            return False

    def run(self, program: str, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(self.bin / program), *args], env=self.env, capture_output=True, text=True, timeout=60
        )

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}{path}", data=json.dumps(body or {}).encode(), method="POST"
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read())

    def close(self) -> None:
        self.agent.kill()
        self.agent.wait()


@pytest.fixture
def node(tmp_path):
    created = Node(tmp_path)
    yield created
    created.close()


@pytest.fixture
def installed(node):
    assert node.run("snap", "install", "microk8s", "--classic", "--channel=1.28/stable").returncode == 0
    return node


def test_microk8s_is_a_command_only_once_the_snap_is_installed(node):
    """snap list exits 1 without the snap; the install records the channel it tracks."""
    assert node.run("microk8s", "status").returncode == 127
    assert node.run("snap", "list", "microk8s").returncode == 1
    assert node.run("snap", "install", "microk8s", "--classic", "--channel=1.28/stable").returncode == 0
    listed = node.run("snap", "list", "microk8s")
    assert listed.returncode == 0
    assert "1.28/stable" in listed.stdout


def test_status_yaml_is_what_the_module_parses_ha_on_with_one_voter_and_addons(installed):
    """status.py print_yaml: running, high-availability while ha-cluster is enabled, the addons."""
    result = installed.run("microk8s", "status", "--format", "yaml")
    assert result.returncode == 0
    assert yaml.safe_load(result.stdout)["microk8s"] == {"running": True}
    parsed = _status.parse(result.stdout)
    assert parsed["running"] is True
    assert parsed["high_availability"] == {"enabled": True, "nodes": [{"address": "127.0.0.1:19001", "role": "voter"}]}
    assert parsed["addons"]["ha-cluster"]["status"] == "enabled"
    assert parsed["addons"]["dns"]["status"] == "disabled"


def test_enable_and_disable_change_the_clusters_addons(installed):
    """enable.py/disable.py: the addon's status follows; an addon no repository has exits 1."""
    assert installed.run("microk8s", "enable", "dns").returncode == 0
    assert (
        _status.parse(installed.run("microk8s", "status", "--format", "yaml").stdout)["addons"]["dns"]["status"]
        == "enabled"
    )
    assert installed.run("microk8s", "disable", "dns").returncode == 0
    assert (
        _status.parse(installed.run("microk8s", "status", "--format", "yaml").stdout)["addons"]["dns"]["status"]
        == "disabled"
    )
    assert installed.run("microk8s", "enable", "no-such-addon").returncode == 1


def test_a_stopped_node_says_so_with_exit_0_on_status_and_refuses_the_rest(installed):
    """common/utils.py: exit_if_stopped (status, exit 0), ensure_started (others, exit 1)."""
    assert installed.run("microk8s", "stop").returncode == 0
    status = installed.run("microk8s", "status", "--format", "yaml")
    assert (status.returncode, status.stdout) == (0, STOPPED)
    enable = installed.run("microk8s", "enable", "dns")
    assert (enable.returncode, enable.stderr) == (1, STOPPED)
    assert installed.run("microk8s", "start").returncode == 0
    assert installed.run("microk8s", "status", "--format", "yaml").stdout.startswith("microk8s:\n  running: True\n")


def test_a_worker_refers_status_to_the_control_plane_with_exit_0_and_refuses_addons(installed):
    """microk8s-status.wrapper (exit 0) and is_cluster_locked (enable, disable: exit 1)."""
    lock = installed.snap_data / "var/lock/clustered.lock"
    lock.parent.mkdir(parents=True)
    lock.touch()
    status = installed.run("microk8s", "status", "--format", "yaml")
    assert (status.returncode, status.stdout) == (0, WORKER_STATUS)
    enable = installed.run("microk8s", "enable", "dns")
    assert (enable.returncode, enable.stdout) == (1, WORKER_LOCKED)


def test_add_node_issues_single_use_tokens_consumed_before_any_other_check(installed):
    """add_token.py and the agent's join.go: a single-use token is gone after one attempt, even a failed one."""
    issued = json.loads(installed.run("microk8s", "add-node", "--format", "json").stdout)
    token = issued["token"].split("/")[0]
    assert len(token) == 32
    assert all(url.endswith(f":{installed.port}/{issued['token']}") for url in issued["urls"])
    assert (installed.snap_data / "credentials/cluster-tokens.txt").read_text() == f"{token}\n"
    # This node itself, at 127.0.0.1, is the one dqlite knows: the join fails after the token check.
    first = installed.post("/join", {"token": token, "hostname": "localhost"})
    assert first == (504, {"error": "the joining node (127.0.0.1) is already known to dqlite"})
    assert installed.post("/join", {"token": token, "hostname": "localhost"}) == (500, {"error": "invalid token"})
    assert (installed.snap_data / "credentials/cluster-tokens.txt").read_text() == ""


def test_a_token_with_a_ttl_serves_every_attempt_until_it_expires(installed):
    """add_token.py --token-ttl: `<token>|<expiry>`, not removed by a join; an expired one is refused."""
    reusable = json.loads(installed.run("microk8s", "add-node", "--format", "json", "--token-ttl", "600").stdout)
    token = reusable["token"].split("/")[0]
    for _ in range(2):
        assert installed.post("/join", {"token": token, "hostname": "localhost"})[0] == 504
    expired = json.loads(installed.run("microk8s", "add-node", "--format", "json", "--token-ttl", "0").stdout)
    time.sleep(1.1)
    assert installed.post("/join", {"token": expired["token"].split("/")[0], "hostname": "localhost"}) == (
        500,
        {"error": "invalid token"},
    )


def test_remove_node_of_a_node_kubernetes_does_not_know_exits_1(installed):
    """remove_node.py: "Node ... does not exist in Kubernetes." and exit 1."""
    result = installed.run("microk8s", "remove-node", "10.1.0.250", "--force")
    assert result.returncode == 1
    assert result.stdout.startswith("Node 10.1.0.250 does not exist in Kubernetes.")


def test_kubectl_lists_this_node_ready_while_its_agent_answers(installed):
    """kubectl get nodes -o json: Ready follows the node's agent (a powered-off host is not Ready)."""
    items = json.loads(installed.run("microk8s", "kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert [item["status"]["conditions"] for item in items] == [[{"type": "Ready", "status": "True"}]]
