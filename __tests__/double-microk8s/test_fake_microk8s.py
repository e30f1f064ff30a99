"""
The two fake microk8s programs on their own.

The rehearsal's (__tests__/doubles/rehearsal/fake-microk8s/microk8s.py): a node's state under a
temporary root, its cluster agent on a free port of 127.0.0.1; for joins, two nodes share one
port on two loopback addresses (FAKE_MICROK8S_ADDRESS), the joiner at 127.0.0.1 named localhost
so that the agent's hostname check resolves it. Each test holds the fake to a behaviour its
docstring cites from microk8s 1.28 or 1.35, and the Salt module's status parser
(salt/_modules/microk8s/_status.py) reads what the fake prints. The rehearsal runs the fake
between hosts; this checks the texts, exit codes and token rules without one.

The L4 one (__tests__/doubles/microk8s/fake_microk8s.py), which the Salt module tests drive
through harness.microk8s_node.FakeMicrok8s: the same behaviours, nodes finding each other
through a shared directory. Its tests are the ``test_l4_`` ones.
"""

from __future__ import annotations

import calendar
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml
from harness.microk8s_node import FakeMicrok8s
from harness.ports import ephemeral_range, free_port
from harness.salt_minion import ROOT, load_module

FAKE = ROOT / "__tests__" / "doubles" / "rehearsal" / "fake-microk8s" / "microk8s.py"
# What `snap` and `microk8s` link to, as in the hosts' images (install.sh): FAKE, imported.
FAKE_PROGRAM = FAKE.with_name("run.py")
# The module's own parser, by path: it is part of a Salt module package, not an importable one.
_status = load_module("_status", ROOT / "salt" / "_modules" / "microk8s" / "_status.py")

# The fake reads the node's addresses with iproute2's ip, as the rehearsal's Debian root has it;
# GitLab's node image may not.
pytestmark = pytest.mark.skipif(shutil.which("ip") is None, reason="the fake microk8s needs iproute2's ip")

# How long an agent may take to answer: systemd's DefaultTimeoutStartSec, which bounds the start
# of snap.microk8s.daemon-cluster-agent; on a loaded machine a Python process may start slowly.
AGENT_START = 90
WORKER_STATUS = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the control plane node.\n"
WORKER_LOCKED = "This MicroK8s deployment is acting as a node in a cluster.\nPlease use the master node.\n"
STOPPED = "microk8s is not running, try microk8s start\n"
WORKER_KUBECTL = (
    "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s kubectl on the master.\n"
)
# The not-ready window after a refresh or a boot: long enough for the checks made inside it on a
# loaded machine (1.5 s was not, with the suites side by side); the tests then wait it out.
RESTARTING = 8
API_DOWN = "The connection to the server 127.0.0.1:16443 was refused - did you specify the right host or port?\n"
NOT_VERIFIED = (
    "Joining cluster failed. Could not verify the identity of {}."
    " Use '--skip-verify' to skip server certificate check.\n"
)
WORKER_USAGE = (
    "\nThe node has joined the cluster and will appear in the nodes list in a few seconds.\n\n"
    "This worker node gets automatically configured with the API server endpoints.\n"
    "If the API servers are behind a loadbalancer please set the '--refresh-interval' to '0s' in:\n"
    "    /var/snap/microk8s/current/args/apiserver-proxy\n"
    "and replace the API server endpoints with the one provided by the loadbalancer in:\n"
    "    /var/snap/microk8s/current/args/traefik/provider.yaml\n\n"
)
WAITING = "Waiting for this node to finish joining the cluster.  \n"
JOINED = "Successfully joined the cluster.\n"
LEFT = "Generating new cluster certificates.\nWaiting for node to start.  \n"
ONLY_COPY = (
    "This node currently holds the only copy of the Kubernetes database so it cannot leave the cluster.\n"
    "To remove this node you can either first remove all other nodes with 'microk8s remove-node' or\n"
    "form a highly available cluster by adding at least three nodes.\n"
)


class Node:
    """
    One fake microk8s node: `snap` and `microk8s` as the programs' names, and its agent; at
    ``address`` (with ``hostname``) when given, else on every address with the machine's name.
    """

    def __init__(self, tmp_path: Path, port: int | None = None, address: str | None = None, hostname: str = ""):
        self.root = tmp_path / "root"
        self.bin = tmp_path / "bin"
        self.bin.mkdir(parents=True)
        for program in ("snap", "microk8s"):
            (self.bin / program).symlink_to(FAKE_PROGRAM)
        self.port = port or free_port()
        self.address = address or "127.0.0.1"
        self.env = {**os.environ, "FAKE_MICROK8S_ROOT": str(self.root), "FAKE_MICROK8S_PORT": str(self.port)}
        if address:
            self.env.update(FAKE_MICROK8S_ADDRESS=address, FAKE_MICROK8S_HOSTNAME=hostname)
        self.snap_data = self.root / "var/snap/microk8s/current"
        self.start_agent()

    def start_agent(self) -> None:
        """Started here rather than by the install, so that the test can stop it."""
        (self.snap_data / "fake").mkdir(parents=True, exist_ok=True)
        log = self.snap_data / "fake" / "harness-agent.log"
        with log.open("a") as output:
            self.agent = subprocess.Popen([sys.executable, str(FAKE), "agent"], env=self.env, stderr=output)
        deadline = time.monotonic() + AGENT_START
        while not self.agent_answers():
            if self.agent.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise AssertionError(f"the agent on {self.address}:{self.port} did not answer:\n{log.read_text()}")
            time.sleep(0.1)

    def rebuild(self) -> None:
        """The machine rebuilt at the same address: a fresh root, a fresh install."""
        self.close()
        shutil.rmtree(self.root)
        self.start_agent()

    def agent_answers(self) -> bool:
        try:
            return self.post("/health")[0] == 200
        except OSError:
            return False

    def run(self, program: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, str(self.bin / program), *args],
            env=self.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def post(self, path: str, body: dict | None = None) -> tuple[int, dict]:
        request = urllib.request.Request(
            f"http://{self.address}:{self.port}{path}", data=json.dumps(body or {}).encode(), method="POST"
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


def test_a_node_listens_on_a_port_the_kernel_never_hands_to_another_program(node):
    """
    The harness chooses a node's port before its agent, a Python process, binds it: a port from
    the kernel's ephemeral range could meanwhile be bound by any other program, and neither the
    agent nor the install's restart of it could listen.
    """
    assert node.port < ephemeral_range()[0]
    assert node.agent_answers()


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
    assert [(c["type"], c["status"]) for item in items for c in item["status"]["conditions"]] == [("Ready", "True")]
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", items[0]["status"]["conditions"][0]["lastTransitionTime"])


# --- the rehearsal's fake: releases, refresh, fingerprint, kubectl, faults, readiness --------------


def install(node: Node, channel: str) -> Node:
    result = node.run("snap", "install", "microk8s", "--classic", f"--channel={channel}")
    assert result.returncode == 0, result.stderr
    return node


def write_faults(snap_data: Path, faults: dict) -> None:
    (snap_data / "fake").mkdir(parents=True, exist_ok=True)
    (snap_data / "fake" / "faults.json").write_text(json.dumps(faults))


def status_yaml(node) -> subprocess.CompletedProcess:
    return node.run("microk8s", "status", "--format", "yaml")


def nodes_json(node) -> list[dict]:
    result = node.run("microk8s", "kubectl", "get", "nodes", "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["items"]


def readiness(items: list[dict]) -> dict[str, str]:
    return {item["status"]["addresses"][0]["address"]: item["status"]["conditions"][0]["status"] for item in items}


def check_of(pem: str) -> str:
    """utils.sh server_cert_check, computed the way join.py compares: sha256 of the DER."""
    return hashlib.sha256(ssl.PEM_cert_to_DER_cert(pem)).hexdigest()[:12]


def issue(node, *extra: str) -> dict:
    result = node.run("microk8s", "add-node", "--format", "json", *extra)
    assert result.returncode == 0, result.stdout
    return json.loads(result.stdout)


@pytest.fixture
def pair(tmp_path):
    """A master at 127.0.0.2 and a joiner at 127.0.0.1 named localhost, on one port, not installed."""
    port = free_port()
    master = Node(tmp_path / "master", port, "127.0.0.2", "master")
    joiner = Node(tmp_path / "joiner", port, "127.0.0.1", "localhost")
    yield master, joiner
    master.close()
    joiner.close()


def url_to(master: Node, issued: dict) -> str:
    return next(url for url in issued["urls"] if url.startswith(f"{master.address}:"))


@pytest.mark.parametrize(("channel", "version"), [("1.28/stable", "v1.28.15"), ("1.35/stable", "v1.35.0")])
def test_the_installed_channel_is_the_release_snap_list_and_status_show(node, channel, version):
    """snap install --channel=1.NN/<risk>: snap list's Tracking column; the addons' versions follow."""
    install(node, channel)
    listed = node.run("snap", "list", "microk8s").stdout.splitlines()
    assert listed[0].split() == ["Name", "Version", "Rev", "Tracking", "Publisher", "Notes"]
    assert listed[1].split()[:4] == ["microk8s", version, "7000", channel]
    assert _status.parse(status_yaml(node).stdout)["addons"]["dns"]["version"] == version[1:]
    items = nodes_json(node)
    assert [item["status"]["nodeInfo"]["kubeletVersion"] for item in items] == [version]
    assert (
        node.run("snap", "install", "microk8s", "--channel=2.0/stable").stdout
        == 'snap "microk8s" is already installed\n'
    )


def test_a_channel_other_than_1_nn_risk_is_refused(node):
    assert node.run("snap", "install", "microk8s", "--channel=1.35/sideways").returncode == 2
    assert node.run("snap", "list", "microk8s").returncode == 1


def test_a_refresh_changes_the_release_and_the_node_is_not_ready_while_it_restarts(installed):
    """
    snap refresh: the new release; while the services restart, status.py prints
    print_yaml(isReady=False) and exits 1, and kubectl cannot reach the API server.
    """
    write_faults(installed.snap_data, {"restart_seconds": RESTARTING})
    refreshed = installed.run("snap", "refresh", "microk8s", "--channel=1.35/stable")
    assert (refreshed.returncode, refreshed.stdout) == (0, "microk8s (1.35/stable) v1.35.0 from Canonical✓ refreshed\n")
    status = status_yaml(installed)
    assert status.returncode == 1
    assert status.stdout == (
        "microk8s:\n  running: False\nhigh-availability:\n  enabled: True\n  nodes:\n"
        "    - address: 127.0.0.1:19001\n      role: voter\n"
        "  message: microk8s is not running. Use microk8s inspect for a deeper inspection.\n"
    )
    assert _status.parse(status.stdout)["running"] is False
    kubectl = installed.run("microk8s", "kubectl", "get", "nodes", "-o", "json")
    assert (kubectl.returncode, kubectl.stderr) == (1, API_DOWN)
    assert installed.run("microk8s", "status", "--wait-ready", "--timeout", "30").returncode == 0
    assert status_yaml(installed).returncode == 0
    assert [i["status"]["nodeInfo"]["kubeletVersion"] for i in nodes_json(installed)] == ["v1.35.0"]
    assert installed.run("snap", "list", "microk8s").stdout.splitlines()[1].split()[3] == "1.35/stable"
    again = installed.run("snap", "refresh", "microk8s", "--channel=1.35/stable")
    assert again.stdout == 'snap "microk8s" has no updates available\n'


def test_a_refresh_without_waiting_prints_its_change_which_snap_watch_follows(installed):
    """
    snapd's changes (snapd.py): `--no-wait` prints the change's id only; `snap watch ID` exits 0
    once it is done, and refuses an id snapd does not know; `--last=KIND?` finds no change of a
    kind none ran, and without the "?" says so.
    """
    write_faults(installed.snap_data, {"restart_seconds": 0})
    started = installed.run("snap", "refresh", "microk8s", "--channel=1.35/stable", "--no-wait")
    assert (started.returncode, started.stdout) == (0, "1\n")
    assert installed.run("snap", "list", "microk8s").stdout.splitlines()[1].split()[3] == "1.35/stable"
    assert (
        installed.run("snap", "watch", "1").returncode,
        installed.run("snap", "watch", "--last=refresh-snap").returncode,
    ) == (0, 0)
    unknown = installed.run("snap", "watch", "2")
    assert (unknown.returncode, unknown.stderr) == (1, 'error: cannot find change with id "2"\n')
    assert installed.run("snap", "watch", "--last=auto-refresh?").returncode == 0
    none = installed.run("snap", "watch", "--last=auto-refresh")
    assert (none.returncode, none.stderr) == (1, 'error: no changes of type "auto-refresh" found\n')


def test_drain_refuses_a_pod_no_controller_manages_without_force_and_waits_out_a_disruption_budget(installed):
    """
    kubectl's drain filters and the API server's eviction check (node_objects.drain_pods): a bare
    pod fails the drain before any eviction unless --force deletes it; a pod a budget protects is
    refused every 5 s until the drain's timeout.
    """
    name = nodes_json(installed)[0]["metadata"]["name"]
    pods = f"""
apiVersion: v1
kind: Pod
metadata: {{name: debug, namespace: default}}
spec: {{nodeName: {name}, containers: [{{name: shell, image: busybox}}]}}
---
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: default
  labels: {{app: db}}
  ownerReferences: [{{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: 1f6c, controller: true}}]
spec: {{nodeName: {name}, containers: [{{name: db, image: postgres}}]}}
"""
    assert installed.run("microk8s", "kubectl", "apply", "-f", "-", stdin=pods).returncode == 0
    drain = ["microk8s", "kubectl", "drain", name, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=1s"]
    refused = installed.run(*drain)
    fatal = "cannot delete Pods declare no controller (use --force to override): default/debug"
    assert (refused.returncode, refused.stdout) == (1, f"node/{name} cordoned\n")
    assert refused.stderr == (
        f'error: unable to drain node "{name}" due to error:{fatal}, continuing command...\n'
        f"There are pending nodes to be drained:\n {name}\n{fatal}\n"
    )
    budget = "apiVersion: policy/v1\nkind: PodDisruptionBudget\nmetadata: {name: db, namespace: default}\n"
    budget += "spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}\n"
    assert installed.run("microk8s", "kubectl", "apply", "-f", "-", stdin=budget).returncode == 0
    blocked = installed.run(*drain, "--force")
    assert blocked.returncode == 1
    assert blocked.stdout == f"node/{name} already cordoned\nevicting pod default/db-0\n"
    assert "WARNING: ignoring DaemonSet-managed Pods: kube-system/calico-node-" in blocked.stderr
    assert "deleting Pods that declare no controller: default/debug" in blocked.stderr
    assert (
        'error when evicting pods/"db-0" -n "default" (will retry after 5s): Cannot evict pod as it would violate'
        " the pod's disruption budget." in blocked.stderr
    )
    assert blocked.stderr.endswith('error when evicting pods/"db-0" -n "default": global timeout reached: 1s\n')


def workload_pod(name: str, node: str) -> str:
    """A pod a StatefulSet manages, bound to ``node``."""
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  ownerReferences: [{{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: 7a1e, controller: true}}]
spec: {{nodeName: {node}, containers: [{{name: web, image: nginx}}]}}
"""


def test_a_drain_of_a_node_that_is_not_ready_waits_for_its_evicted_pods_unless_told_to_skip(pair):
    """
    kubectl's drain (pkg/drain/drain.go waitForDelete, filters.go shouldSkipPod): no kubelet
    confirms a deletion on a node that is not Ready, so the evicted pod stays, marked for deletion
    at the end of its grace period, and kubectl waits to --timeout; with
    --skip-wait-for-delete-timeout=1 it skips the pod a second after that, and a pod already past
    it is not evicted again.
    """
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    pods = workload_pod("web-0", "localhost") + "---" + workload_pod("web-1", "localhost")
    assert master.run("microk8s", "kubectl", "apply", "-f", "-", stdin=pods).returncode == 0
    assert joiner.run("microk8s", "stop").returncode == 0
    assert readiness(nodes_json(master)) == {"127.0.0.2": "True", "127.0.0.1": "Unknown"}
    drain = ["microk8s", "kubectl", "drain", "localhost", "--ignore-daemonsets", "--grace-period=0", "--timeout=2s"]
    waited = master.run(*drain)
    why = 'error when waiting for pod "web-0" in namespace "default" to terminate: context deadline exceeded'
    assert waited.returncode == 1
    assert waited.stdout == "node/localhost cordoned\nevicting pod default/web-0\nevicting pod default/web-1\n"
    assert f'error: unable to drain node "localhost" due to error:{why}, continuing command...' in waited.stderr
    stored = json.loads((master.snap_data / "fake" / "objects.json").read_text())
    assert all("deletionTimestamp" in stored[f"Pod/default/web-{i}"]["metadata"] for i in (0, 1))
    # Both deletions (a grace period of 0) are now 2 s past: kubectl's first filter leaves them out.
    assert (
        master.run("microk8s", "kubectl", "apply", "-f", "-", stdin=workload_pod("web-2", "localhost")).returncode == 0
    )
    started = int(time.time())
    skipped = master.run(*drain[:-2], "--grace-period=1", "--timeout=30s", "--skip-wait-for-delete-timeout=1")
    assert (skipped.returncode, skipped.stdout) == (
        0,
        "node/localhost already cordoned\nevicting pod default/web-2\n"
        'pod "web-2" has DeletionTimestamp older than 1 seconds, skipping\nnode/localhost drained\n',
    )
    # Marked for deletion at the end of its grace period: a second after the eviction.
    stored = json.loads((master.snap_data / "fake" / "objects.json").read_text())
    marked = calendar.timegm(
        time.strptime(stored["Pod/default/web-2"]["metadata"]["deletionTimestamp"], "%Y-%m-%dT%H:%M:%SZ")
    )
    assert marked >= started + 1


def endpoint_ips(node: Node) -> list[str]:
    result = node.run("microk8s", "kubectl", "get", "endpoints", "kubernetes", "-n", "default", "-o", "json")
    assert result.returncode == 0, result.stderr
    return [a["ip"] for subset in json.loads(result.stdout)["subsets"] for a in subset["addresses"]]


def test_the_kubernetes_endpoints_are_what_each_running_api_server_advertised_as_it_started(pair):
    """
    kube-apiserver advertises --advertise-address, else the default route's address
    (server_run_options.go DefaultAdvertiseAddress), read from args/kube-apiserver as kubelite
    starts; the lease reconciler (reconcilers/lease.go) lists every running API server's.
    """
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    assert endpoint_ips(master) == ["127.0.0.1", "127.0.0.2"]
    args = master.snap_data / "args/kube-apiserver"
    args.write_text(args.read_text() + "--advertise-address=127.0.0.9\n")
    assert endpoint_ips(joiner) == ["127.0.0.1", "127.0.0.2"]
    write_faults(master.snap_data, {"restart_seconds": 0})
    assert master.run("snap", "restart", "microk8s.daemon-kubelite").stdout == "Restarted.\n"
    assert endpoint_ips(joiner) == ["127.0.0.1", "127.0.0.9"]
    assert joiner.run("microk8s", "stop").returncode == 0
    assert endpoint_ips(master) == ["127.0.0.9"]


def test_cordon_uncordon_and_drain_print_kubectls_lines_and_set_unschedulable(installed):
    """kubectl drain.go: node/<n> cordoned, already cordoned, drained, uncordoned, already uncordoned."""
    name = nodes_json(installed)[0]["metadata"]["name"]
    assert "unschedulable" not in nodes_json(installed)[0]["spec"]
    assert installed.run("microk8s", "kubectl", "cordon", name).stdout == f"node/{name} cordoned\n"
    assert nodes_json(installed)[0]["spec"] == {"unschedulable": True}
    drain = installed.run(
        "microk8s",
        "kubectl",
        "drain",
        name,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=120s",
        "--force",
    )
    assert (drain.returncode, drain.stdout) == (0, f"node/{name} already cordoned\nnode/{name} drained\n")
    assert drain.stderr.startswith("WARNING: ignoring DaemonSet-managed Pods: kube-system/calico-node-")
    assert installed.run("microk8s", "kubectl", "uncordon", name).stdout == f"node/{name} uncordoned\n"
    assert installed.run("microk8s", "kubectl", "uncordon", name).stdout == f"node/{name} already uncordoned\n"
    assert "unschedulable" not in nodes_json(installed)[0]["spec"]


def test_drain_without_ignore_daemonsets_stops_at_calico_and_an_unknown_node_is_not_found(installed):
    name = nodes_json(installed)[0]["metadata"]["name"]
    drain = installed.run("microk8s", "kubectl", "drain", name)
    assert (drain.returncode, drain.stdout) == (1, f"node/{name} cordoned\n")
    assert drain.stderr.startswith(f'error: unable to drain node "{name}" due to error:cannot delete DaemonSet-managed')
    missing = installed.run("microk8s", "kubectl", "cordon", "no-such-node")
    assert (missing.returncode, missing.stderr) == (1, 'Error from server (NotFound): nodes "no-such-node" not found\n')


def test_kubectl_on_a_worker_is_the_wrappers_message_with_exit_0(installed):
    """microk8s-kubectl.wrapper (1.28 and 1.35): clustered.lock → a message, exit 0."""
    lock = installed.snap_data / "var/lock/clustered.lock"
    lock.parent.mkdir(parents=True)
    lock.touch()
    result = installed.run("microk8s", "kubectl", "get", "nodes", "-o", "json")
    assert (result.returncode, result.stdout) == (0, WORKER_KUBECTL)


def test_add_nodes_check_is_the_server_certificates_and_refresh_certs_changes_it(installed):
    """utils.sh server_cert_check: sha256 of server.crt's DER, 12 characters; refresh-certs renews it."""
    pem = (installed.snap_data / "certs/server.crt").read_text()
    issued = issue(installed)
    assert issued["token"].split("/")[1] == check_of(pem)
    result = installed.run("microk8s", "refresh-certs", "--cert", "server.crt")
    assert result.returncode == 0
    assert "Creating new certificates\n" in result.stdout
    renewed = (installed.snap_data / "certs/server.crt").read_text()
    assert renewed != pem
    assert issue(installed)["token"].split("/")[1] == check_of(renewed)


def test_a_join_whose_fingerprint_does_not_match_fails_before_spending_the_token(pair):
    """join.py join_request: the peer certificate is checked first; exit 4, the token stays."""
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    url = url_to(master, issue(master))
    master.run("microk8s", "refresh-certs", "--cert", "server.crt")
    result = joiner.run("microk8s", "join", url)
    assert (result.returncode, result.stdout) == (
        4,
        f"Contacting cluster at {master.address}\n" + NOT_VERIFIED.format(master.address),
    )
    tokens = (master.snap_data / "credentials/cluster-tokens.txt").read_text()
    assert tokens == f"{url.split('/')[1]}\n"
    # --skip-verify skips the check; the same token then serves.
    assert joiner.run("microk8s", "join", url, "--skip-verify").returncode == 0


@pytest.mark.parametrize(
    ("release", "reason", "connection"),
    [
        ("1.35", "Expected format: <master_IP>:<master_PORT>/<token>[/<fingerprint>]", "127.0.0.2/abc"),
        ("1.35", "Invalid master IP", "master:25000/" + "a" * 32),
        ("1.35", "Master PORT not a number", "127.0.0.2:port/" + "a" * 32),
        ("1.35", "Cluster token size should be at least 32 bytes", "127.0.0.2:25000/short"),
        ("1.35", "Fingerprint should be at least 12 bytes", "127.0.0.2:25000/" + "a" * 32 + "/abc"),
    ],
)
def test_join_on_1_35_checks_the_connection_string_first(pair, release, reason, connection):
    """1.35 join.py: get_valid_connection_parts, "Invalid connection: <reason>", exit 1."""
    _, joiner = pair
    install(joiner, f"{release}/stable")
    result = joiner.run("microk8s", "join", connection)
    assert (result.returncode, result.stdout) == (1, f"Invalid connection: {reason}\n")


def test_join_on_1_28_has_no_such_check_and_a_short_fingerprint_fails_in_join_request(pair):
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    token = issue(master)["token"].split("/")[0]
    result = joiner.run("microk8s", "join", f"{master.address}:{master.port}/{token}/abc")
    assert result.returncode == 4
    assert result.stdout.endswith(
        "Joining cluster failed. Fingerprint too short. Use '--skip-verify' to skip server certificate check.\n"
    )


@pytest.mark.parametrize(
    ("release", "worker", "printed"),
    [
        ("1.28", False, WAITING),
        ("1.28", True, WORKER_USAGE),
        ("1.35", False, WAITING + JOINED),
        ("1.35", True, WORKER_USAGE + JOINED),
    ],
)
def test_what_a_successful_join_prints_follows_the_joiners_release(pair, release, worker, printed):
    """join.py diff 1.28..1.35: "Successfully joined the cluster." at the end of join() from 1.35."""
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, f"{release}/stable")
    result = joiner.run("microk8s", "join", url_to(master, issue(master)), *(["--worker"] if worker else []))
    assert (result.returncode, result.stdout) == (0, f"Contacting cluster at {master.address}\n" + printed)


KNOWN = "the joining node (127.0.0.1) is already known to dqlite"


@pytest.mark.parametrize(
    ("release", "answer"),
    [
        ("1.28", (504, {"error": KNOWN})),
        ("1.35", (500, {"error": f"failed to retrieve dqlite cluster nodes: {KNOWN}"})),
    ],
)
def test_the_already_known_refusal_is_the_agents_of_the_masters_release(node, release, answer):
    """cluster agent 1.28: HTTP 504; the current agent wraps it in "failed to retrieve dqlite cluster nodes"."""
    install(node, f"{release}/stable")
    token = issue(node)["token"].split("/")[0]
    assert node.post("/join", {"token": token, "hostname": "localhost"}) == answer


@pytest.mark.parametrize(("release", "prefixes"), [("1.28", 1), ("1.35", 2)])
def test_a_dqlite_fault_answers_joins_with_500_after_spending_the_token(node, release, prefixes):
    """join.go: "failed to retrieve dqlite cluster nodes: <err>" (HTTP 500) comes after ConsumeClusterToken."""
    install(node, f"{release}/stable")
    write_faults(node.snap_data, {"join_dqlite_error": 1})
    token = issue(node)["token"].split("/")[0]
    text = "failed to retrieve dqlite cluster nodes: " * prefixes
    expected = (500, {"error": f"{text}timed out waiting for cluster condition: context deadline exceeded"})
    assert node.post("/join", {"token": token, "hostname": "localhost"}) == expected
    assert (node.snap_data / "credentials/cluster-tokens.txt").read_text() == ""
    assert json.loads((node.snap_data / "fake/faults.json").read_text()) == {}
    write_faults(
        node.snap_data, {"join_dqlite_error": 1, "join_dqlite_error_text": "failed to read list of dqlite nodes: x"}
    )
    again = node.post("/join", {"token": issue(node)["token"].split("/")[0], "hostname": "localhost"})
    assert again == (500, {"error": f"{text}failed to read list of dqlite nodes: x"})


def test_a_dqlite_fault_makes_status_list_no_member_n_times(installed):
    """common/utils.py get_dqlite_info: [] after its 10 failed tries; `nodes:` stays, empty."""
    write_faults(installed.snap_data, {"status_dqlite_empty": 2})
    for _ in range(2):
        parsed = _status.parse(status_yaml(installed).stdout)
        assert parsed["high_availability"]["enabled"] is True
        assert parsed["high_availability"]["nodes"] == []
    assert len(_status.parse(status_yaml(installed).stdout)["high_availability"]["nodes"]) == 1


def test_a_node_is_ready_only_while_it_belongs_to_this_cluster(pair):
    """
    A kubelet heartbeats to its own cluster's API server: the joined node is Ready in the master's
    list; rebuilt at the same address (a cluster of its own) it is Unknown there until it rejoins.
    """
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.35/stable")
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    items = nodes_json(master)
    assert readiness(items) == {"127.0.0.2": "True", "127.0.0.1": "True"}
    versions = {i["status"]["addresses"][0]["address"]: i["status"]["nodeInfo"]["kubeletVersion"] for i in items}
    assert versions == {"127.0.0.2": "v1.28.15", "127.0.0.1": "v1.35.0"}
    joiner.rebuild()
    install(joiner, "1.35/stable")
    assert readiness(nodes_json(master)) == {"127.0.0.2": "True", "127.0.0.1": "Unknown"}
    assert readiness(nodes_json(joiner)) == {"127.0.0.1": "True"}
    # The master still counts it in dqlite: it must be removed before it joins again.
    assert master.run("microk8s", "remove-node", "127.0.0.1", "--force").returncode == 0
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    assert readiness(nodes_json(master)) == {"127.0.0.2": "True", "127.0.0.1": "True"}


def test_a_node_reports_its_machines_boot_id_while_ready_and_a_rebuilt_machine_another(pair):
    """
    status.nodeInfo.bootID (the kubelet's MachineInfo setter, from /proc/sys/kernel/random/boot_id):
    the same at every reading of one boot, the last one posted while the node is not Ready (the
    API server keeps the status its kubelet last posted), another once the machine rebuilt under
    the same address (a new /run) has joined again.
    """
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0

    def boot_ids() -> dict:
        return {i["status"]["addresses"][0]["address"]: i["status"]["nodeInfo"]["bootID"] for i in nodes_json(master)}

    first = boot_ids()
    assert all(re.fullmatch(r"[0-9a-f-]{36}", boot) for boot in first.values()), first
    assert first["127.0.0.1"] != first["127.0.0.2"]
    assert boot_ids() == first
    joiner.rebuild()
    install(joiner, "1.28/stable")
    assert boot_ids() == first
    assert master.run("microk8s", "remove-node", "127.0.0.1", "--force").returncode == 0
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    again = boot_ids()
    assert again["127.0.0.2"] == first["127.0.0.2"]
    assert re.fullmatch(r"[0-9a-f-]{36}", again["127.0.0.1"]) and again["127.0.0.1"] != first["127.0.0.1"]


def test_the_ready_conditions_transition_time_moves_only_when_its_status_changes(pair):
    """
    lastTransitionTime (the kubelet's ReadyCondition setter; the node lifecycle controller's
    tryUpdateNodeHealth when it turns the condition Unknown): npm run repair counts a node's
    NotReady time from it (microk8s.node_health).
    """
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0

    def conditions() -> dict:
        return {i["status"]["addresses"][0]["address"]: i["status"]["conditions"][0] for i in nodes_json(master)}

    joined = conditions()
    assert {address: c["status"] for address, c in joined.items()} == {"127.0.0.2": "True", "127.0.0.1": "True"}
    time.sleep(1.1)
    assert conditions() == joined
    lost = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    joiner.rebuild()
    gone = conditions()
    assert gone["127.0.0.1"]["status"] == "Unknown" and gone["127.0.0.1"]["lastTransitionTime"] >= lost
    assert gone["127.0.0.2"] == joined["127.0.0.2"]
    time.sleep(1.1)
    assert conditions() == gone


def test_leave_keeps_the_kubernetes_node_not_ready_and_the_only_copy_cannot_leave(pair):
    """
    leave.py (1.35): out of dqlite, a cluster of its own; is_leader_without_successor: the one
    voter of a cluster with other members cannot leave (exit 3), a node alone can.
    """
    master, joiner = pair
    install(master, "1.35/stable")
    install(joiner, "1.35/stable")
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    members = _status.parse(status_yaml(master).stdout)["high_availability"]["nodes"]
    assert [m["address"] for m in members] == ["127.0.0.2:19001", "127.0.0.1:19001"]
    refused = master.run("microk8s", "leave")
    assert (refused.returncode, refused.stdout) == (3, ONLY_COPY)
    left = joiner.run("microk8s", "leave")
    assert (left.returncode, left.stdout) == (0, LEFT)
    members = _status.parse(status_yaml(master).stdout)["high_availability"]["nodes"]
    assert [m["address"] for m in members] == ["127.0.0.2:19001"]
    assert readiness(nodes_json(master)) == {"127.0.0.2": "True", "127.0.0.1": "Unknown"}
    alone = master.run("microk8s", "leave")
    assert (alone.returncode, alone.stdout) == (0, LEFT)


def ca_of(snap_data: Path, name: str = "ca.crt") -> str:
    return (snap_data / "certs" / name).read_text()


def test_each_install_makes_a_ca_a_control_plane_join_takes_the_clusters_and_leave_keeps_it(pair):
    """
    snap/hooks/install → produce_certs (actions/common/utils.sh): a CA of the install's own.
    join.py join_dqlite_master_node: store_cert ca.crt and ca.key from the agent's answer (join.go
    ``ca``, ``ca_key``), the old ones kept as .backup; ensure_server_ca then issues a new
    server.crt. leave.py reinit_cluster: new dqlite certificates, the CA stays.
    """
    master, joiner = pair
    install(master, "1.35/stable")
    install(joiner, "1.35/stable")
    own, server = ca_of(joiner.snap_data), ca_of(joiner.snap_data, "server.crt")
    assert own != ca_of(master.snap_data)
    ssl.PEM_cert_to_DER_cert(own)
    assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    assert ca_of(joiner.snap_data) == ca_of(master.snap_data)
    assert ca_of(joiner.snap_data, "ca.key") == ca_of(master.snap_data, "ca.key")
    assert ca_of(joiner.snap_data, "ca.crt.backup") == own
    assert check_of(ca_of(joiner.snap_data, "server.crt")) != check_of(server)
    assert joiner.run("microk8s", "leave").returncode == 0
    assert ca_of(joiner.snap_data) == ca_of(master.snap_data)
    joiner.rebuild()
    install(joiner, "1.35/stable")
    assert ca_of(joiner.snap_data) not in (own, ca_of(master.snap_data))


def test_a_worker_join_stores_the_clusters_ca_as_ca_remote_and_keeps_its_own(pair):
    """
    join.py join_dqlite_worker_node: store_remote_ca (certs/ca.remote.crt; join.go sends no
    ca_key to a worker); leave.py reset_current_dqlite_worker_installation removes it.
    """
    master, joiner = pair
    install(master, "1.28/stable")
    install(joiner, "1.28/stable")
    own = ca_of(joiner.snap_data)
    assert joiner.run("microk8s", "join", url_to(master, issue(master)), "--worker").returncode == 0
    assert (ca_of(joiner.snap_data), ca_of(joiner.snap_data, "ca.remote.crt")) == (own, ca_of(master.snap_data))
    assert not (joiner.snap_data / "certs/ca.key.backup").exists()
    assert joiner.run("microk8s", "leave").returncode == 0
    assert ca_of(joiner.snap_data) == own
    assert not (joiner.snap_data / "certs/ca.remote.crt").exists()


# --- the database replicated over the voters (dqlite) ---------------------------------------------

TIMED_OUT = (
    "Error from server (Timeout): the server was unable to return a response in the time allotted,"
    " but may still be processing the request (get nodes)\n"
)
STALLED = "Waiting for this node to finish joining the cluster. " + ".. " * 10 + " \n"
NO_CONTROL_PLANE = (
    "Connection failed. failed to retrieve list of control plane nodes: failed to list nodes: the server was"
    " unable to return a response in the time allotted, but may still be processing the request (get nodes) (500).\n"
)


def roles(node: Node) -> dict[str, str]:
    """The members status lists, address: role."""
    parsed = _status.parse(status_yaml(node).stdout)
    return {m["address"]: m["role"] for m in parsed["high_availability"]["nodes"]}


def quorum_of(node: Node) -> tuple[int, dict]:
    result = node.run("microk8s", "fake-quorum")
    return result.returncode, json.loads(result.stdout)


def lost(node: Node) -> list[str]:
    log = node.snap_data / "fake/quorum.log"
    return log.read_text().splitlines() if log.exists() else []


def index_of(node: Node) -> int:
    return json.loads((node.snap_data / "fake/cluster.json").read_text())["index"]


# Three or four nodes on one port, at 127.0.0.2 (the master), 127.0.0.1 (named localhost),
# 127.0.0.3 and 127.0.0.4, the last two named by their addresses (getaddrinfo resolves an address
# to itself), so that the agents' hostname checks pass.


def cluster_of(tmp_path: Path, size: int) -> list[Node]:
    port = free_port()
    specs = [("master", "127.0.0.2", "127.0.0.2"), ("first", "127.0.0.1", "localhost")]
    specs += [(f"n{n}", f"127.0.0.{n}", f"127.0.0.{n}") for n in range(3, size + 1)]
    nodes: list[Node] = []
    try:
        for name, address, hostname in specs:
            nodes.append(Node(tmp_path / name, port, address, hostname))
        for each in nodes:
            install(each, "1.28/stable")
    except BaseException:
        for each in nodes:
            each.close()
        raise
    return nodes


@pytest.fixture
def trio(tmp_path):
    nodes = cluster_of(tmp_path, 3)
    yield nodes
    for each in nodes:
        each.close()


@pytest.fixture
def quartet(tmp_path):
    nodes = cluster_of(tmp_path, 4)
    yield nodes
    for each in nodes:
        each.close()


def joined(nodes: list[Node]) -> list[Node]:
    master = nodes[0]
    for joiner in nodes[1:]:
        assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    return nodes


def test_roles_follow_go_dqlite_and_every_voter_holds_the_database(quartet):
    """
    go-dqlite app/roles.go: below 3 members only the leader votes (a spare joins, with no copy);
    at 3 every member votes; the fourth is a stand-by. Voters and stand-bys hold the same copy.
    """
    master, first, second, third = quartet
    assert roles(master) == {"127.0.0.1:19001": "voter"}
    assert first.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    assert roles(master) == {"127.0.0.2:19001": "voter", "127.0.0.1:19001": "spare"}
    assert not (first.snap_data / "fake/cluster.json").exists()
    assert second.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    voters = {f"127.0.0.{n}:19001": "voter" for n in (2, 1, 3)}
    assert roles(second) == voters
    assert third.run("microk8s", "join", url_to(master, issue(master))).returncode == 0
    assert roles(third) == {**voters, "127.0.0.4:19001": "standby"}
    assert len({index_of(n) for n in quartet}) == 1
    assert master.post("/quorum")[1]["quorum"] is True


def test_a_write_reaches_every_voter_and_standby(quartet):
    """Raft: a write is committed on a majority and replicated to every member that keeps a log."""
    master, *_ = joined(quartet)
    before = {n.address: index_of(n) for n in quartet}
    assert master.run("microk8s", "kubectl", "cordon", "127.0.0.3").returncode == 0
    assert {n.address: index_of(n) for n in quartet} == {a: i + 1 for a, i in before.items()}
    for each in quartet:
        copy = json.loads((each.snap_data / "fake/cluster.json").read_text())
        assert {n["name"]: n.get("unschedulable", False) for n in copy["nodes"]}["127.0.0.3"] is True


def test_writes_from_every_node_at_once_each_write_only_their_own_objects_and_none_is_lost(quartet):
    """
    The API server writes each object a command changes, nothing it only read (kubectl label and
    cordon patch one Node, remove-node deletes one), and dqlite's leader orders the writes: each
    takes the next index (Raft's log). The rehearsal's scale-down removes two nodes at once; a
    fake that wrote back every node it had read put a removed one back, cordoned, as a CI run saw.
    Here every node labels its own Node three times while the others do the same.
    """
    nodes = joined(quartet)
    names = {node.address: item["metadata"]["name"] for node in nodes for item in nodes_json(node)
             if item["status"]["addresses"][0]["address"] == node.address}  # fmt: skip
    before = index_of(nodes[0])

    def label(node: Node) -> list[subprocess.CompletedProcess]:
        return [node.run("microk8s", "kubectl", "label", "node", names[node.address], f"koo/w{i}=x") for i in range(3)]

    with concurrent.futures.ThreadPoolExecutor(len(nodes)) as pool:
        results = [result for batch in pool.map(label, nodes) for result in batch]
    assert [(r.returncode, r.stderr) for r in results] == [(0, "")] * 12
    labels = {item["metadata"]["name"]: item["metadata"]["labels"] for item in nodes_json(nodes[0])}
    assert {name: sorted(k for k in labels[name] if k.startswith("koo/")) for name in names.values()} == {
        name: ["koo/w0", "koo/w1", "koo/w2"] for name in names.values()
    }
    assert {n.address: index_of(n) for n in nodes} == {n.address: before + 12 for n in nodes}


def test_a_rebuilt_master_rejoins_through_another_voter_and_quorum_holds(trio):
    """
    Raft: one voter of three lost keeps a majority. The survivors still list the dead member and
    its Kubernetes node (Unknown); it is removed on one of them, and the rebuilt master joins
    through that node's agent and votes again, taking the cluster's CA.
    """
    master, first, second = joined(trio)
    ca = ca_of(first.snap_data)
    master.rebuild()
    install(master, "1.28/stable")
    code, found = quorum_of(second)
    assert (code, sorted(found["reachable"])) == (0, ["127.0.0.1", "127.0.0.3"])
    assert roles(second)["127.0.0.2:19001"] == "voter"
    assert readiness(nodes_json(first)) == {"127.0.0.2": "Unknown", "127.0.0.1": "True", "127.0.0.3": "True"}
    assert second.run("microk8s", "remove-node", "127.0.0.2", "--force").returncode == 0
    assert roles(first) == {"127.0.0.1:19001": "voter", "127.0.0.3:19001": "spare"}
    # Through the agent of the node that removed it (a spare now: it answers from the leader's copy).
    assert master.run("microk8s", "join", url_to(second, issue(second))).returncode == 0
    assert roles(master) == {f"127.0.0.{n}:19001": "voter" for n in (1, 3, 2)}
    assert set(readiness(nodes_json(second)).values()) == {"True"}
    assert ca_of(master.snap_data) == ca == ca_of(second.snap_data)
    assert all(lost(n) == [] for n in trio)
    # The member removed was down: no Ready voter was removed.
    assert not any((n.snap_data / "fake/voter-removals.log").exists() for n in trio)


def test_removing_a_ready_voter_is_allowed_and_recorded(trio):
    """
    remove_node.py: --force drops any dqlite member, Ready or not (it refuses nothing more), so the
    fake does not refuse it either; it records it in fake/voter-removals.log for the rehearsal.
    """
    first = joined(trio)[1]
    assert first.run("microk8s", "remove-node", "127.0.0.3", "--force").returncode == 0
    log = (first.snap_data / "fake/voter-removals.log").read_text().splitlines()
    assert len(log) == 1
    assert log[0].endswith(
        "a Ready voter removed: 127.0.0.3 (127.0.0.3:19001); on 127.0.0.1: microk8s remove-node 127.0.0.3 --force"
    )


def test_a_majority_of_voters_lost_stops_the_api_and_is_recorded(trio, tmp_path):
    """
    No majority (canonical/microk8s #3735): status lists no member and exits 1, kubectl gets the
    API server's 504, add-node still writes its token, a worker's join fails at
    ListControlPlaneNodeIPs, a control-plane joiner waits in vain; every finding is in
    fake/quorum.log, which keeps it after the quorum is back.
    """
    master, first, second = joined(trio)
    first.close()
    second.close()
    status = status_yaml(master)
    parsed = _status.parse(status.stdout)
    assert (status.returncode, parsed["running"], parsed["high_availability"]["nodes"]) == (1, False, [])
    kubectl = master.run("microk8s", "kubectl", "get", "nodes", "-o", "json")
    assert (kubectl.returncode, kubectl.stderr) == (1, TIMED_OUT)
    issued = issue(master)
    assert issued["token"].split("/")[0] in (master.snap_data / "credentials/cluster-tokens.txt").read_text()
    worker = Node(tmp_path / "worker", master.port, "127.0.0.4", "127.0.0.4")
    try:
        install(worker, "1.28/stable")
        refused = worker.run("microk8s", "join", url_to(master, issued), "--worker")
        assert (refused.returncode, refused.stdout) == (6, "Contacting cluster at 127.0.0.2\n" + NO_CONTROL_PLANE)
        stalled = worker.run("microk8s", "join", url_to(master, issue(master)))
        assert (stalled.returncode, stalled.stdout) == (0, "Contacting cluster at 127.0.0.2\n" + STALLED)
    finally:
        worker.close()
    code, found = quorum_of(master)
    assert (code, found["reachable"]) == (1, ["127.0.0.2"])
    log = lost(master)
    assert all("quorum lost: 1/3 voters reachable (127.0.0.2 127.0.0.1 127.0.0.3)" in line for line in log)
    assert "microk8s status --format yaml" in log[0] and "microk8s kubectl get nodes -o json" in log[1]
    assert any("join from 127.0.0.4 (--worker)" in line for line in log)
    assert log[-1].endswith("microk8s fake-quorum")
    first.start_agent()
    assert quorum_of(master)[0] == 0
    assert status_yaml(master).returncode == 0
    assert lost(master) == log


def test_a_stopped_voter_misses_writes_and_reads_the_freshest_copy_when_back(trio):
    """Raft: a voter that was down catches up from the leader; until then its copy is behind."""
    master, first, second = joined(trio)
    assert second.run("microk8s", "stop").returncode == 0
    assert master.run("microk8s", "kubectl", "cordon", "localhost").returncode == 0
    assert first.run("microk8s", "stop").returncode == 0
    assert quorum_of(master)[0] == 1
    assert master.post("/quorum") == (
        200,
        {
            "quorum": False,
            "cluster": json.loads((master.snap_data / "fake/node.json").read_text())["cluster_id"],
            "voters": ["127.0.0.2", "127.0.0.1", "127.0.0.3"],
            "reachable": ["127.0.0.2"],
            "index": index_of(master),
        },
    )
    assert first.run("microk8s", "start").returncode == 0
    assert second.run("microk8s", "start").returncode == 0
    assert quorum_of(second)[0] == 0
    assert index_of(second) < index_of(master)
    assert {i["metadata"]["name"]: i["spec"] for i in nodes_json(second)}["localhost"] == {"unschedulable": True}
    assert [line.split(": ", 2)[2] for line in lost(master)] == ["microk8s fake-quorum", "POST /quorum"]
    # The stopped nodes were not up to hear of it.
    assert lost(first) == lost(second) == []


def test_a_spare_holds_no_copy_and_never_reads_a_cluster_of_its_own(trio):
    """
    go-dqlite roles.go: two members, and only the leader votes. The master, down while another
    member left, is the one demoted to spare; back, the next write drops its copy (a spare keeps
    no log: client NodeRole). It reads through the voter, the freshest copy while a majority of
    the voters answers, nothing (and the loss recorded) without one. It never falls back to the
    single-voter cluster it started before anyone joined it (the earlier fake did: a stale read
    at 127.0.0.1, with itself as the only voter).
    """
    master, first, second = joined(trio)
    assert master.run("microk8s", "stop").returncode == 0
    assert second.run("microk8s", "leave").returncode == 0
    assert master.run("microk8s", "start").returncode == 0
    assert first.run("microk8s", "kubectl", "cordon", "localhost").returncode == 0
    assert roles(first) == {"127.0.0.2:19001": "spare", "127.0.0.1:19001": "voter"}
    assert not (master.snap_data / "fake/cluster.json").exists()
    assert master.post("/cluster")[0] == 404
    code, found = quorum_of(master)
    assert (code, found["voters"], found["index"]) == (0, ["127.0.0.1"], index_of(first))
    assert {i["metadata"]["name"]: i["spec"] for i in nodes_json(master)}["localhost"] == {"unschedulable": True}
    assert first.run("microk8s", "stop").returncode == 0
    code, found = quorum_of(master)
    assert (code, found["quorum"], found["voters"]) == (1, False, [])
    kubectl = master.run("microk8s", "kubectl", "get", "nodes", "-o", "json")
    assert (kubectl.returncode, kubectl.stderr) == (1, TIMED_OUT)
    assert len(lost(master)) == 2


def test_a_node_known_by_several_addresses_keeps_its_copy_when_it_writes(tmp_path, monkeypatch):
    """
    On a rehearsal host the fake has no FAKE_MICROK8S_ADDRESS: it is 127.0.0.1 to itself and its
    private (and public) address to the members list. A write it commits (here the first join
    through its agent, which adds a spare) keeps its copy, one index higher; the earlier fake
    counted 127.0.0.1 as another node, not a member, and dropped the copy it had just written.
    """
    monkeypatch.setenv("FAKE_MICROK8S_ROOT", str(tmp_path))
    monkeypatch.delenv("FAKE_MICROK8S_ADDRESS", raising=False)
    fake = load_module("fake_microk8s_rehearsal", FAKE)
    monkeypatch.setattr(fake, "addresses", lambda: ["10.1.0.10", "192.0.2.10"])
    state = {**fake.node(), "installed": True, "running": True, "cluster_id": "c1"}
    fake.write(fake.NODE, state)
    member = {"address": "10.1.0.10:19001", "role": "voter"}
    fake.write(fake.CLUSTER, {"id": "c1", "index": 2, "members": [member], "nodes": [], "addons": {}})

    def add_spare(db: dict) -> None:
        db["members"].append({"address": "10.1.0.100:19001", "role": "spare"})

    written = fake.commit(state, add_spare, "join", joining="10.1.0.100")
    assert written is not None and written["index"] == 3
    assert json.loads(fake.CLUSTER.read_text()) == written


def test_a_kubelet_registering_a_name_that_exists_takes_that_node_over(tmp_path, monkeypatch):
    """
    kubelet_node_status.go tryRegisterWithAPIServer: a Node is its name. The rebuilt dual-homed
    master joins from its private address; its old node, at its public address, is the same node.
    """
    monkeypatch.setenv("FAKE_MICROK8S_ROOT", str(tmp_path))
    fake = load_module("fake_microk8s_register", FAKE)
    db = {
        "nodes": [
            {"name": "k8s-master", "address": "192.0.2.10", "version": "1.35.0"},
            {"name": "k8s-worker-0", "address": "10.1.0.100", "version": "1.35.0"},
        ]
    }
    fake.register(db, {"name": "k8s-master", "address": "10.1.0.10", "version": "1.35.0"})
    registered = [(n["name"], n["address"]) for n in db["nodes"]]
    assert registered == [("k8s-worker-0", "10.1.0.100"), ("k8s-master", "10.1.0.10")]


# --- the L4 fake (__tests__/doubles/microk8s/fake_microk8s.py) ------------------------------------


class L4:
    """Nodes of the L4 fake in one cluster directory, each with `snap` beside `microk8s`."""

    def __init__(self, tmp_path: Path):
        self.root = tmp_path

    def node(self, name: str, address: str, hostname: str) -> FakeMicrok8s:
        # The harness puts `snap` beside `microk8s`.
        return FakeMicrok8s(self.root / name, self.root / "cluster", address, hostname)


def snap(node: FakeMicrok8s, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(node.bin / "snap"), *args], env=node.env, capture_output=True, text=True, timeout=60)


@pytest.fixture
def l4(tmp_path):
    cluster = L4(tmp_path)
    master = cluster.node("master", "10.1.0.10", "k8s-master")
    joiner = cluster.node("joiner", "10.1.0.100", "k8s-worker-0")
    return master, joiner


def l4_url(node: FakeMicrok8s, *extra: str) -> str:
    return json.loads(node.run("add-node", "--format", "json", *extra).stdout)["urls"][0]


def test_l4_a_node_is_1_28_until_snap_installs_another_release(l4):
    master, _ = l4
    assert snap(master, "list", "microk8s").stdout.splitlines()[1].split()[1:4] == ["v1.28.15", "7000", "1.28/stable"]
    installed = snap(master, "install", "microk8s", "--classic", "--channel=1.35/stable")
    assert installed.stdout == "microk8s (1.35/stable) v1.35.0 from Canonical✓ installed\n"
    assert (
        snap(master, "install", "microk8s", "--channel=1.28/stable").stdout == 'snap "microk8s" is already installed\n'
    )
    assert _status.parse(master.run("status", "--format", "yaml").stdout)["addons"]["dns"]["version"] == "1.35.0"
    node_info = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"][0]["status"]["nodeInfo"]
    assert node_info == {"kubeletVersion": "v1.35.0", "bootID": master.state()["boot_id"]}


@pytest.mark.parametrize(
    ("release", "worker", "printed"),
    [
        ("1.28", False, WAITING),
        ("1.28", True, WORKER_USAGE),
        ("1.35", False, WAITING + JOINED),
        ("1.35", True, WORKER_USAGE + JOINED),
    ],
)
def test_l4_what_a_successful_join_prints_follows_the_joiners_release(l4, release, worker, printed):
    master, joiner = l4
    snap(joiner, "install", "microk8s", f"--channel={release}/stable")
    result = joiner.run("join", l4_url(master), *(["--worker"] if worker else []))
    assert (result.returncode, result.stdout) == (0, "Contacting cluster at 10.1.0.10\n" + printed)


def test_l4_join_on_1_35_checks_the_connection_string(l4):
    _, joiner = l4
    snap(joiner, "install", "microk8s", "--channel=1.35/stable")
    result = joiner.run("join", "10.1.0.10:25000/t/c")
    assert (result.returncode, result.stdout) == (
        1,
        "Invalid connection: Cluster token size should be at least 32 bytes\n",
    )


def test_l4_the_fingerprint_is_checked_before_the_token_is_spent_and_refresh_certs_changes_it(l4):
    master, joiner = l4
    pem = (master.home / "certs/server.crt").read_text()
    url = l4_url(master)
    assert url.split("/")[2] == check_of(pem)
    assert master.run("refresh-certs", "--cert", "server.crt").returncode == 0
    assert check_of((master.home / "certs/server.crt").read_text()) != check_of(pem)
    result = joiner.run("join", url)
    assert (result.returncode, result.stdout) == (
        4,
        "Contacting cluster at 10.1.0.10\n" + NOT_VERIFIED.format("10.1.0.10"),
    )
    assert (master.home / "credentials/cluster-tokens.txt").read_text() == f"{url.split('/')[1]}\n"
    assert joiner.run("join", url, "--skip-verify").returncode == 0


@pytest.mark.parametrize(
    ("release", "printed"),
    [
        ("1.28", "Connection failed. the joining node (10.1.0.100) is already known to dqlite (504).\n"),
        (
            "1.35",
            "Connection failed. failed to retrieve dqlite cluster nodes: "
            "the joining node (10.1.0.100) is already known to dqlite (500).\n",
        ),
    ],
)
def test_l4_the_already_known_refusal_is_the_masters_agents(l4, release, printed):
    master, joiner = l4
    snap(master, "install", "microk8s", f"--channel={release}/stable")
    assert joiner.run("join", l4_url(master)).returncode == 0
    (joiner.home / "state.json").unlink()  # rebuilt: a fresh node at the same address
    result = joiner.run("join", l4_url(master))
    assert (result.returncode, result.stdout) == (6, "Contacting cluster at 10.1.0.10\n" + printed)


def test_l4_a_dqlite_fault_answers_joins_with_500_after_spending_the_token_then_status_lists_no_member(l4):
    master, joiner = l4
    write_faults(master.home, {"join_dqlite_error": 1, "status_dqlite_empty": 1})
    url = l4_url(master)
    result = joiner.run("join", url)
    assert result.returncode == 6
    assert result.stdout.endswith(
        "Connection failed. failed to retrieve dqlite cluster nodes: "
        "timed out waiting for cluster condition: context deadline exceeded (500).\n"
    )
    assert (master.home / "credentials/cluster-tokens.txt").read_text() == ""
    assert joiner.run("join", l4_url(master)).returncode == 0
    assert _status.parse(master.run("status", "--format", "yaml").stdout)["high_availability"]["nodes"] == []
    assert len(_status.parse(master.run("status", "--format", "yaml").stdout)["high_availability"]["nodes"]) == 2


def test_l4_a_refresh_restarts_the_node_and_changes_its_kubelet_version(l4):
    master, _ = l4
    write_faults(master.home, {"restart_seconds": RESTARTING})
    assert snap(master, "refresh", "microk8s", "--channel=1.35/stable").returncode == 0
    status = master.run("status", "--format", "yaml")
    assert status.returncode == 1
    assert _status.parse(status.stdout)["running"] is False
    kubectl = master.run("kubectl", "get", "nodes", "-o", "json")
    assert (kubectl.returncode, kubectl.stderr) == (1, API_DOWN)
    assert master.run("status", "--wait-ready", "--timeout", "30").returncode == 0
    items = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert [i["status"]["nodeInfo"]["kubeletVersion"] for i in items] == ["v1.35.0"]
    assert snap(master, "list", "microk8s").stdout.splitlines()[1].split()[3] == "1.35/stable"


def test_l4_a_boot_gives_a_new_boot_id_once_the_node_is_ready_again(l4):
    master, joiner = l4
    assert joiner.run("join", l4_url(master), "--worker").returncode == 0
    write_faults(joiner.home, {"restart_seconds": RESTARTING})

    def boot_ids() -> dict:
        items = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
        return {
            i["metadata"]["name"]: (i["status"]["nodeInfo"]["bootID"], i["status"]["conditions"][0]["status"])
            for i in items
        }

    before = boot_ids()
    assert before["k8s-worker-0"][1] == "True" and len(before["k8s-worker-0"][0]) == 36
    assert joiner.run("fake-boot").returncode == 0
    # Starting: not Ready, and the last boot id its kubelet posted, the API server's.
    assert boot_ids()["k8s-worker-0"] == (before["k8s-worker-0"][0], "Unknown")
    assert joiner.state()["boot_id"] != before["k8s-worker-0"][0]
    deadline = time.monotonic() + 30
    while boot_ids()["k8s-worker-0"][1] != "True" and time.monotonic() < deadline:
        time.sleep(0.2)
    after = boot_ids()
    assert after["k8s-worker-0"] == (joiner.state()["boot_id"], "True")
    assert after["k8s-worker-0"][0] != before["k8s-worker-0"][0]
    assert after["k8s-master"] == before["k8s-master"]


def test_l4_a_kubelet_that_posts_its_node_not_ready_shows_ready_false_not_unknown(l4):
    """
    fake/faults.json "not_ready": the kubelet runs and posts its node not Ready, so the condition is
    False, with the boot id it posts (setters.go ReadyCondition; Unknown is the node lifecycle
    controller's, for a kubelet that stopped posting), and changes when the fault goes.
    """
    master, joiner = l4
    assert joiner.run("join", l4_url(master), "--worker").returncode == 0

    def worker() -> dict:
        items = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
        return next(i["status"] for i in items if i["metadata"]["name"] == "k8s-worker-0")

    assert worker()["conditions"][0]["status"] == "True"
    write_faults(joiner.home, {"not_ready": True})
    posted = worker()
    assert (posted["conditions"][0]["status"], posted["nodeInfo"]["bootID"]) == ("False", joiner.state()["boot_id"])
    write_faults(joiner.home, {})
    assert worker()["conditions"][0]["status"] == "True"


def test_l4_cordon_drain_uncordon(l4):
    master, joiner = l4
    assert joiner.run("join", l4_url(master), "--worker").returncode == 0
    drain = master.run(
        "kubectl", "drain", "--timeout", "60s", "k8s-worker-0", "--ignore-daemonsets", "--delete-emptydir-data"
    )
    assert drain.stdout == "node/k8s-worker-0 cordoned\nnode/k8s-worker-0 drained\n"
    items = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert [i["spec"] for i in items] == [{}, {"unschedulable": True}]
    assert master.run("kubectl", "uncordon", "k8s-worker-0").stdout == "node/k8s-worker-0 uncordoned\n"
    assert master.run("kubectl", "uncordon", "k8s-worker-0").stdout == "node/k8s-worker-0 already uncordoned\n"
    missing = master.run("kubectl", "drain", "nope", "--ignore-daemonsets")
    assert (missing.returncode, missing.stderr) == (1, 'Error from server (NotFound): nodes "nope" not found\n')
    on_worker = joiner.run("kubectl", "get", "nodes", "-o", "json")
    assert (on_worker.returncode, on_worker.stdout) == (0, WORKER_KUBECTL)


def test_l4_a_rebuilt_node_is_not_ready_in_the_old_cluster_until_it_joins_again(l4):
    master, joiner = l4
    assert joiner.run("join", l4_url(master)).returncode == 0
    listed = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert readiness(listed) == {"10.1.0.10": "True", "10.1.0.100": "True"}
    shutil.rmtree(joiner.home)
    joiner.run("status")  # the rebuilt node starts: a cluster of its own
    listed = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert readiness(listed) == {"10.1.0.10": "True", "10.1.0.100": "Unknown"}
    assert master.run("remove-node", "10.1.0.100", "--force").returncode == 0
    assert joiner.run("join", l4_url(master)).returncode == 0
    listed = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert readiness(listed) == {"10.1.0.10": "True", "10.1.0.100": "True"}


def l4_roles(node: FakeMicrok8s) -> list[tuple[str, str]]:
    """The members status lists, in its order: (address, role)."""
    listed = _status.parse(node.run("status", "--format", "yaml").stdout)["high_availability"]["nodes"]
    return [(m["address"], m["role"]) for m in listed]


def test_l4_two_control_plane_nodes_are_a_voter_and_a_spare_and_without_the_voter_nothing_answers(l4, tmp_path):
    """
    dqlite.py, the model both fakes share (go-dqlite app/roles.go): below 3 members only the leader
    votes, so the second control-plane node is a spare, which keeps no copy. With the voter down
    no majority answers the spare: kubectl gets the API server's 504, status lists nobody and
    exits 1, a worker's join is refused, and the voter's leave is refused (leave.py
    is_leader_without_successor). A third and a fourth node make 3 voters and a stand-by.
    """
    master, joiner = l4
    assert joiner.run("join", l4_url(master)).returncode == 0
    assert l4_roles(master) == [("10.1.0.10:19001", "voter"), ("10.1.0.100:19001", "spare")]
    refused = master.run("leave")
    assert (refused.returncode, refused.stdout) == (3, ONLY_COPY)
    token = l4_url(joiner)
    assert master.run("stop").returncode == 0
    kubectl = joiner.run("kubectl", "get", "nodes", "-o", "json")
    assert (kubectl.returncode, kubectl.stderr) == (1, TIMED_OUT)
    status = joiner.run("status", "--format", "yaml")
    assert status.returncode == 1 and _status.parse(status.stdout)["high_availability"]["nodes"] == []
    worker = L4(tmp_path).node("worker", "10.1.0.110", "k8s-worker-9")
    joined = worker.run("join", token, "--worker")
    assert (joined.returncode, joined.stdout.splitlines()[-1] + "\n") == (6, NO_CONTROL_PLANE)
    assert master.run("start").returncode == 0
    cluster = L4(tmp_path)
    for n in (1, 2):
        added = cluster.node(f"cp{n}", f"10.1.0.10{n}", f"k8s-worker-{n}")
        assert added.run("join", l4_url(master)).returncode == 0
    voters = [(f"10.1.0.{n}:19001", "voter") for n in (10, 100, 101)]
    assert l4_roles(joiner) == [*voters, ("10.1.0.102:19001", "standby")]


def test_l4_every_write_replaces_its_file_whole_so_another_node_never_reads_it_half_written(l4, tmp_path):
    """
    Every node reads the others' state.json (whether their dqlite answers) and the cluster's
    database, without their locks: a write truncating the file in place let a reader see it empty
    (a JSONDecodeError, and the Salt module's call failed, under load). Each write is a new file
    renamed over the old one, so a reader holds either whole.
    """
    master, joiner = l4
    assert joiner.run("join", l4_url(master)).returncode == 0
    files = [master.home / "state.json", joiner.home / "state.json", *(tmp_path / "cluster" / ".dqlite").glob("*.json")]
    assert len(files) == 3
    # Readers that opened each file before the writes: each still reads the whole file it opened.
    readers = [path.open() for path in files]
    try:
        assert master.run("stop").returncode == 0 and master.run("start").returncode == 0
        assert joiner.run("stop").returncode == 0 and joiner.run("start").returncode == 0
        assert master.run("kubectl", "label", "node", "k8s-worker-0", "x=y").returncode == 0
        assert [os.fstat(r.fileno()).st_ino != path.stat().st_ino for r, path in zip(readers, files, strict=True)] == [
            True
        ] * 3
        assert all(json.loads(r.read()) for r in readers)
    finally:
        for reader in readers:
            reader.close()
    assert sorted(p.name for p in (tmp_path / "cluster" / ".dqlite").iterdir() if not p.name.endswith(".lock")) == [
        files[2].name
    ]


def test_l4_leave_keeps_the_kubernetes_node_and_the_only_copy_cannot_leave(l4):
    """
    leave.py: the spare leaves the voter's cluster (reinit_cluster), its Kubernetes node kept;
    is_leader_without_successor refuses the one voter of a cluster with other members (the
    only copy) and lets a node alone leave.
    """
    master, joiner = l4
    assert joiner.run("join", l4_url(master)).returncode == 0
    refused = master.run("leave")
    assert (refused.returncode, refused.stdout) == (3, ONLY_COPY)
    left = joiner.run("leave")
    assert (left.returncode, left.stdout) == (0, LEFT)
    members = _status.parse(master.run("status", "--format", "yaml").stdout)["high_availability"]["nodes"]
    assert [m["address"] for m in members] == ["10.1.0.10:19001"]
    listed = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert readiness(listed) == {"10.1.0.10": "True", "10.1.0.100": "Unknown"}
    alone = master.run("leave")
    assert (alone.returncode, alone.stdout) == (0, LEFT)


def test_l4_each_install_has_a_ca_a_control_plane_join_takes_the_clusters_and_leave_keeps_it(l4):
    """The same rules as the rehearsal's fake (produce_certs; join_dqlite_master_node; leave.py)."""
    master, joiner = l4
    own, server = joiner.ca(), (joiner.home / "certs/server.crt").read_text()
    assert own != master.ca()
    ssl.PEM_cert_to_DER_cert(own)
    assert joiner.run("join", l4_url(master)).returncode == 0
    assert joiner.ca() == master.ca()
    assert (joiner.home / "certs/ca.key").read_text() == (master.home / "certs/ca.key").read_text()
    assert (joiner.home / "certs/ca.crt.backup").read_text() == own
    assert check_of((joiner.home / "certs/server.crt").read_text()) != check_of(server)
    assert joiner.run("leave").returncode == 0
    assert joiner.ca() == master.ca()
    shutil.rmtree(joiner.home)
    joiner.run("status")  # rebuilt: a fresh install
    assert joiner.ca() not in (own, master.ca())


def test_l4_a_worker_join_stores_the_clusters_ca_as_ca_remote_and_keeps_its_own(l4):
    """join_dqlite_worker_node: store_remote_ca; the worker's leave removes ca.remote.crt."""
    master, joiner = l4
    own = joiner.ca()
    assert joiner.run("join", l4_url(master), "--worker").returncode == 0
    assert (joiner.ca(), (joiner.home / "certs/ca.remote.crt").read_text()) == (own, master.ca())
    assert joiner.run("leave").returncode == 0
    assert joiner.ca() == own
    assert not (joiner.home / "certs/ca.remote.crt").exists()


def test_l4_the_database_outlives_a_rebuilt_master_which_joins_it_again_through_a_voter(l4, tmp_path):
    """
    dqlite keeps a copy on every voter: a master rebuilt at its address (a fresh install, a CA
    of its own) is NotReady in the cluster the voters kept, and joins it through one of them
    once its stale member is removed, taking the cluster's CA.
    """
    master, voter = l4
    other = L4(tmp_path).node("other", "10.1.0.101", "k8s-worker-1")
    assert voter.run("join", l4_url(master)).returncode == 0
    assert other.run("join", l4_url(master)).returncode == 0
    cluster_ca = master.ca()
    shutil.rmtree(master.home)
    master.run("status")
    assert master.ca() != cluster_ca
    listed = json.loads(voter.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert readiness(listed) == {"10.1.0.10": "Unknown", "10.1.0.100": "True", "10.1.0.101": "True"}
    assert voter.run("remove-node", "10.1.0.10", "--force").returncode == 0
    assert master.run("join", l4_url(voter)).returncode == 0
    assert master.ca() == voter.ca() == other.ca() == cluster_ca
    members = _status.parse(other.run("status", "--format", "yaml").stdout)["high_availability"]["nodes"]
    assert [m["address"] for m in members] == ["10.1.0.100:19001", "10.1.0.101:19001", "10.1.0.10:19001"]
    listed = json.loads(master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert readiness(listed) == {"10.1.0.10": "True", "10.1.0.100": "True", "10.1.0.101": "True"}


# --- both fakes: the server certificate from csr.conf (server_cert.py, which both import) -------

server_cert = load_module("server_cert", ROOT / "__tests__" / "doubles" / "microk8s_core" / "server_cert.py")
# microk8s' csr.conf.template [ alt_names ] (microk8s-resources/certs/csr.conf.template).
TEMPLATE = (
    "[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\nIP.2 = 10.152.183.1\n#MOREIPS\n\n"
    "[ v3_ext ]\nsubjectAltName=@alt_names\n"
)
EXTRA_SANS = "IP.99 = 203.0.113.10\nIP.98 = 203.0.113.20\nIP.97 = 10.1.0.5\n"


def sans_of(pem: str) -> list[str]:
    return server_cert.subject_alt_names(pem)


def test_render_csr_conf_numbers_the_hosts_addresses_from_3_skipping_the_templates_indices():
    """utils.sh render_csr_conf: IP.3 up for get_ips, past an index the template has (grep '^IP.N', a prefix)."""
    template = TEMPLATE.replace("#MOREIPS", "IP.4 = 192.0.2.4\n" + EXTRA_SANS + "#MOREIPS")
    addresses = [f"192.0.2.{n}" for n in range(11, 18)]
    rendered = server_cert.render_csr_conf(template, addresses)
    # IP.4 is the template's; IP.9 is skipped because '^IP.9' matches the template's IP.99.
    numbered = [line for line in rendered.splitlines() if line.endswith(tuple(addresses))]
    assert numbered == [f"IP.{i} = {a}" for a, i in zip(addresses, [3, 5, 6, 7, 8, 10, 11], strict=True)]
    assert "#MOREIPS" not in rendered
    assert server_cert.render_csr_conf(TEMPLATE, ["127.0.0.1"]) == TEMPLATE.replace("#MOREIPS", "")


def test_refresh_certs_puts_every_ip_of_the_template_into_the_rehearsal_fakes_certificate(pair):
    """refresh_certs.py reproduce_server_cert: refresh_csr_conf; gen_server_cert, from the template as it is now."""
    master, _ = pair
    assert master.run("snap", "install", "microk8s", "--channel=1.28/stable").returncode == 0
    certs = master.snap_data / "certs"
    before = (certs / "server.crt").read_text()
    assert sans_of(before) == [
        "DNS:kubernetes",
        "IP Address:127.0.0.1",
        "IP Address:10.152.183.1",
        "IP Address:127.0.0.2",
    ]
    template = (certs / "csr.conf.template").read_text()
    (certs / "csr.conf.template").write_text(template.replace("#MOREIPS", EXTRA_SANS + "#MOREIPS"))
    # Salt's template change alone reissues nothing: the certificate waits for refresh-certs.
    assert issue(master)["token"].split("/")[1] == check_of(before)
    assert master.run("microk8s", "refresh-certs", "--cert", "server.crt").returncode == 0
    after = (certs / "server.crt").read_text()
    assert sans_of(after) == [
        "DNS:kubernetes",
        "IP Address:127.0.0.1",
        "IP Address:10.152.183.1",
        "IP Address:203.0.113.10",
        "IP Address:203.0.113.20",
        "IP Address:10.1.0.5",
        "IP Address:127.0.0.2",
    ]
    assert (certs / "csr.conf").read_text() == (certs / "csr.conf.rendered").read_text()
    assert check_of(after) != check_of(before)


def test_l4_refresh_certs_puts_every_ip_of_the_template_into_the_certificate(l4):
    """The L4 fake's refresh-certs, the same way: the node's address for #MOREIPS, IP.3."""
    master, _ = l4
    certs = master.home / "certs"
    assert sans_of((certs / "server.crt").read_text()) == [
        "DNS:kubernetes",
        "IP Address:127.0.0.1",
        "IP Address:10.1.0.10",
    ]
    template = (certs / "csr.conf.template").read_text()
    (certs / "csr.conf.template").write_text(template.replace("#MOREIPS", EXTRA_SANS + "#MOREIPS"))
    assert master.run("refresh-certs", "--cert", "server.crt").returncode == 0
    assert sans_of((certs / "server.crt").read_text()) == [
        "DNS:kubernetes",
        "IP Address:127.0.0.1",
        "IP Address:203.0.113.10",
        "IP Address:203.0.113.20",
        "IP Address:10.1.0.5",
        "IP Address:10.1.0.10",
    ]


def test_l4_a_join_reissues_the_certificate_from_the_csr_conf_it_keeps(l4):
    """join_dqlite_master_node → ensure_server_ca: ensure_csr_conf_conservative keeps a valid csr.conf."""
    master, joiner = l4
    certs = joiner.home / "certs"
    kept = (certs / "csr.conf").read_text()
    (certs / "csr.conf.template").write_text(
        (certs / "csr.conf.template").read_text().replace("#MOREIPS", EXTRA_SANS + "#MOREIPS")
    )
    assert joiner.run("join", l4_url(master)).returncode == 0
    assert (certs / "csr.conf").read_text() == kept
    assert "IP Address:203.0.113.10" not in sans_of((certs / "server.crt").read_text())


# --- both fakes: labels, taints and annotations (node_objects.py, which both import) -------------


KUBELET_LABELS = {
    "beta.kubernetes.io/arch": "amd64",
    "beta.kubernetes.io/os": "linux",
    "kubernetes.io/arch": "amd64",
    "kubernetes.io/os": "linux",
    "microk8s.io/cluster": "true",
}


@pytest.fixture(params=["rehearsal", "l4"])
def kubectl(request, tmp_path):
    """``kubectl(*args)`` on a control-plane node of either fake, and that node's name."""
    if request.param == "rehearsal":
        node = Node(tmp_path)
        request.addfinalizer(node.close)
        install(node, "1.28/stable")

        def run(*args: str) -> subprocess.CompletedProcess:
            return node.run("microk8s", "kubectl", *args)

    else:
        master = L4(tmp_path).node("master", "10.1.0.10", "k8s-master")

        def run(*args: str) -> subprocess.CompletedProcess:
            return master.run("kubectl", *args)

    run.name = json.loads(run("get", "nodes", "-o", "json").stdout)["items"][0]["metadata"]["name"]
    return run


def node_of(kubectl) -> dict:
    result = kubectl("get", "node", kubectl.name, "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def said(result: subprocess.CompletedProcess) -> tuple[int, str, str]:
    return result.returncode, result.stdout, result.stderr


def test_a_node_registers_with_the_kubelets_and_microk8s_labels_and_get_node_prints_one_node(kubectl):
    """kubelet_node_status.go initialNode, microk8s' default-args/kubelet --node-labels; core/v1 Node."""
    node = node_of(kubectl)
    assert (node["apiVersion"], node["kind"]) == ("v1", "Node")
    assert node["metadata"] == {
        "name": kubectl.name,
        "labels": {
            **KUBELET_LABELS,
            "kubernetes.io/hostname": kubectl.name,
            "node.kubernetes.io/microk8s-controlplane": "microk8s-controlplane",
        },
    }
    assert "taints" not in node["spec"]
    listed = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"][0]
    assert listed["metadata"] == node["metadata"]
    assert said(kubectl("get", "node", "nope", "-o", "json")) == (
        1,
        "",
        'Error from server (NotFound): nodes "nope" not found\n',
    )


def test_label_sets_overwrites_only_with_overwrite_and_removes_with_a_dash(kubectl):
    """label.go: parseLabels, validateNoOverwrites, `label "k" not found.`, updateDataChangeMsg."""
    name = kubectl.name
    assert said(kubectl("label", "node", name, "kube-on-os/pool=default")) == (0, f"node/{name} labeled\n", "")
    # The same value needs no --overwrite and changes nothing.
    assert said(kubectl("label", "node", name, "kube-on-os/pool=default")) == (0, f"node/{name} not labeled\n", "")
    assert said(kubectl("label", "node", name, "kube-on-os/pool=gpu")) == (
        1,
        "",
        "error: 'kube-on-os/pool' already has a value (default), and --overwrite is false\n",
    )
    assert node_of(kubectl)["metadata"]["labels"]["kube-on-os/pool"] == "default"
    assert said(kubectl("label", "node", name, "kube-on-os/pool=gpu", "--overwrite")) == (
        0,
        f"node/{name} labeled\n",
        "",
    )
    assert said(kubectl("label", "node", name, "kube-on-os/pool-", "x-")) == (
        0,
        f'label "x" not found.\nnode/{name} unlabeled\n',
        "",
    )
    assert said(kubectl("label", f"node/{name}", "a=1", "b=2")) == (0, f"node/{name} labeled\n", "")
    assert said(kubectl("label", "node", name, "a=3", "b-", "--overwrite")) == (0, f"node/{name} modified\n", "")
    labels = node_of(kubectl)["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k in ("a", "b", "kube-on-os/pool")} == {"a": "3"}
    assert labels["kubernetes.io/hostname"] == name


def test_label_refuses_bad_values_before_and_bad_keys_at_the_api_server(kubectl):
    """parseLabels (IsValidLabelValue) before the request; ValidateLabels (IsLabelKey) on the server."""
    name = kubectl.name
    value = kubectl("label", "node", name, "pool=has space")
    assert value.returncode == 1
    assert value.stderr == (
        'error: invalid label value: "pool=has space": a valid label must be an empty string or consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')\n"
    )
    key = kubectl("label", "node", name, "-pool=x")
    assert key.returncode == 1
    assert key.stderr == (
        f'The Node "{name}" is invalid: metadata.labels: Invalid value: "-pool": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character "
        "(e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')\n"
    )
    assert said(kubectl("label", "node", name, "a=1", "a-")) == (
        1,
        "",
        "error: can not both modify and remove a label in the same command\n",
    )
    assert said(kubectl("label", "node", name, "a=1", "other")) == (
        1,
        "",
        "error: all resources must be specified before label changes: other\n",
    )
    assert said(kubectl("label", "node", "nope", "a=1")) == (
        1,
        "",
        'Error from server (NotFound): nodes "nope" not found\n',
    )
    assert "a" not in node_of(kubectl)["metadata"]["labels"]


def test_taint_adds_replaces_with_overwrite_and_removes_by_key_and_effect(kubectl):
    """taint.go and utils.go: parseTaints, checkIfTaintsAlreadyExists, reorganizeTaints, deleteTaints."""
    name = kubectl.name
    assert said(kubectl("taint", "node", name, "dedicated=gpu:NoSchedule")) == (0, f"node/{name} tainted\n", "")
    assert said(kubectl("taint", "node", name, "dedicated=cpu:NoSchedule")) == (
        1,
        "",
        f"error: node {name} already has dedicated taint(s) with same effect(s) and --overwrite is false\n",
    )
    assert said(kubectl("taint", "node", name, "dedicated=cpu:NoSchedule", "spot:PreferNoSchedule", "--overwrite")) == (
        0,
        f"node/{name} modified\n",
        "",
    )
    assert node_of(kubectl)["spec"]["taints"] == [
        {"key": "dedicated", "value": "cpu", "effect": "NoSchedule"},
        {"key": "spot", "effect": "PreferNoSchedule"},
    ]
    assert said(kubectl("taint", "node", name, "dedicated:NoExecute-")) == (
        1,
        "",
        'error: taint "dedicated:NoExecute" not found\n',
    )
    assert said(kubectl("taint", "node", name, "dedicated:NoSchedule-")) == (0, f"node/{name} untainted\n", "")
    assert node_of(kubectl)["spec"]["taints"] == [{"key": "spot", "effect": "PreferNoSchedule"}]
    assert said(kubectl("taint", "node", name, "spot-")) == (0, f"node/{name} untainted\n", "")
    assert "taints" not in node_of(kubectl)["spec"]


def test_taint_refuses_bad_effects_keys_values_and_conflicts_as_usage_errors(kubectl):
    name = kubectl.name
    usage = "\nSee 'kubectl taint -h' for help and examples\n"
    assert said(kubectl("taint", "node", name, "a=b:Sometimes")) == (
        1,
        "",
        "error: invalid taint effect: Sometimes, unsupported taint effect" + usage,
    )
    # Without an effect "a=b" is all key (parseTaint), and "=" is no key character.
    no_effect = kubectl("taint", "node", name, "a=b")
    assert no_effect.stderr.startswith("error: invalid taint spec: a=b, name part must consist of alphanumeric")
    bad_value = kubectl("taint", "node", name, "a=b c:NoSchedule")
    assert bad_value.returncode == 1
    assert bad_value.stderr.startswith("error: invalid taint spec: a=b c:NoSchedule, a valid label must be")
    bad_key = kubectl("taint", "node", name, "a/b/c:NoSchedule")
    assert bad_key.stderr.startswith("error: invalid taint spec: a/b/c:NoSchedule, a valid label key must consist")
    assert said(kubectl("taint", "node", name, "a=1:NoSchedule", "a:NoSchedule-")) == (
        1,
        "",
        "error: can not both modify and remove the following taint(s) in the same command: a=NoSchedule\n",
    )
    assert said(kubectl("taint", "node", "nope", "a=1:NoSchedule")) == (
        1,
        "",
        'Error from server (NotFound): nodes "nope" not found\n',
    )
    assert "taints" not in node_of(kubectl)["spec"]


def test_annotate_sets_overwrites_only_with_overwrite_and_removes(kubectl):
    """annotate.go: ParsePairs (split at the first =), validateNoAnnotationOverwrites; node/<n> annotated."""
    name = kubectl.name
    taints = '["dedicated=gpu:NoSchedule"]'
    assert said(kubectl("annotate", "node", name, f"kube-on-os/managed-taints={taints}")) == (
        0,
        f"node/{name} annotated\n",
        "",
    )
    assert said(kubectl("annotate", "node", name, "kube-on-os/managed-taints=[]")) == (
        1,
        "",
        "error: --overwrite is false but found the following declared annotation(s): "
        f"'kube-on-os/managed-taints' already has a value ({taints})\n",
    )
    assert node_of(kubectl)["metadata"]["annotations"] == {"kube-on-os/managed-taints": taints}
    assert kubectl("annotate", "node", name, "kube-on-os/managed-taints=[]", "--overwrite").returncode == 0
    assert node_of(kubectl)["metadata"]["annotations"] == {"kube-on-os/managed-taints": "[]"}
    assert said(kubectl("annotate", "node", name, "kube-on-os/managed-taints-", "never-set-")) == (
        0,
        f"node/{name} annotated\n",
        "",
    )
    assert "annotations" not in node_of(kubectl)["metadata"]


def test_l4_a_worker_registers_with_microk8s_worker_label(l4):
    """join.py join_dqlite_worker_node: --node-labels microk8s.io/cluster=true,node.kubernetes.io/microk8s-worker."""
    master, joiner = l4
    assert joiner.run("join", l4_url(master), "--worker").returncode == 0
    worker = json.loads(master.run("kubectl", "get", "node", "k8s-worker-0", "-o", "json").stdout)
    assert worker["metadata"]["labels"] == {
        **KUBELET_LABELS,
        "kubernetes.io/hostname": "k8s-worker-0",
        "node.kubernetes.io/microk8s-worker": "microk8s-worker",
    }
    assert master.run("kubectl", "label", "node", "k8s-worker-0", "kube-on-os/pool=gpu").returncode == 0
    # Written to the cluster's database: what a control-plane node reads afterwards.
    stored = next(n for n in master.database()["nodes"] if n["name"] == "k8s-worker-0")
    assert stored["labels"]["kube-on-os/pool"] == "gpu"


# kubectl apply / get / annotate / patch (kube_objects.py, node_objects.py), in both fakes.

MANIFEST = """\
apiVersion: v1
kind: Secret
metadata:
  name: cloud-config
  namespace: kube-system
stringData:
  cloud.conf: |
    [Global]
    region = "RegionOne"
---
apiVersion: v1
kind: List
items:
  - apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata:
      name: system:cloud-node-controller
    rules: []
  - apiVersion: apps/v1
    kind: DaemonSet
    metadata:
      name: openstack-cloud-controller-manager
      namespace: kube-system
    spec: {}
"""
APPLIED = [
    "secret/cloud-config",
    "clusterrole.rbac.authorization.k8s.io/system:cloud-node-controller",
    "daemonset.apps/openstack-cloud-controller-manager",
]
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"


def lines(*operations: str, suffix: str = "") -> str:
    return "".join(f"{ref} {operation}{suffix}\n" for ref, operation in zip(APPLIED, operations, strict=True))


def check_objects(kubectl, record: Path, node_name: str, enable) -> None:
    """
    The same behaviours for either fake: ``kubectl(*args, stdin=None)`` runs its kubectl,
    ``record`` is its fake/objects.json, ``enable`` enables hostpath-storage.
    """
    dry = kubectl("apply", "-f", "-", "--dry-run=server", stdin=MANIFEST)
    assert (dry.returncode, dry.stdout) == (0, lines("created", "created", "created", suffix=" (server dry run)"))
    assert not record.exists()
    assert kubectl("apply", "-f", "-", stdin=MANIFEST).stdout == lines("created", "created", "created")
    assert kubectl("apply", "-f", "-", stdin=MANIFEST).stdout == lines("unchanged", "unchanged", "unchanged")
    changed = MANIFEST.replace("RegionOne", "RegionTwo")
    assert kubectl("apply", "-f", "-", stdin=changed).stdout == lines("configured", "unchanged", "unchanged")
    objects = json.loads(record.read_text())
    assert sorted(objects) == [
        "ClusterRole//system:cloud-node-controller",
        "DaemonSet/kube-system/openstack-cloud-controller-manager",
        "Secret/kube-system/cloud-config",
    ]
    # A workload's generation: 1 at creation, one more for each new spec, not for its metadata.
    daemonset = "DaemonSet/kube-system/openstack-cloud-controller-manager"
    assert objects[daemonset]["metadata"]["generation"] == 1
    templated = changed.replace(
        "    spec: {}", "    spec:\n      template:\n        metadata:\n          annotations: {a: b}"
    )
    assert kubectl("apply", "-f", "-", stdin=templated).stdout == lines("unchanged", "unchanged", "configured")
    labelled = templated.replace(
        "      namespace: kube-system\n    spec:", "      namespace: kube-system\n      labels: {c: d}\n    spec:"
    )
    assert kubectl("apply", "-f", "-", stdin=labelled).stdout == lines("unchanged", "unchanged", "configured")
    assert json.loads(record.read_text())[daemonset]["metadata"]["generation"] == 2
    assert kubectl("apply", "-f", "-", stdin=changed).stdout == lines("unchanged", "unchanged", "configured")
    assert json.loads(record.read_text())[daemonset]["metadata"]["generation"] == 3
    # The API server keeps stringData merged into data, base64-encoded.
    secret = objects["Secret/kube-system/cloud-config"]
    assert "stringData" not in secret
    assert secret["data"] == {"cloud.conf": "W0dsb2JhbF0KcmVnaW9uID0gIlJlZ2lvblR3byIK"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in secret["metadata"]["annotations"]
    # get: one object, jsonpath, a list, NotFound and --ignore-not-found.
    path = "jsonpath={.data.cloud\\.conf}"
    got = kubectl("get", "secret", "cloud-config", "-n", "kube-system", "-o", path)
    assert (got.returncode, got.stdout) == (0, secret["data"]["cloud.conf"])
    assert kubectl("get", "secret", "cloud-config", "-n", "kube-system", "-o", "jsonpath={.metadata.nope}").stdout == ""
    missing = kubectl("get", "secret", "nope", "-n", "kube-system", "-o", "json")
    assert (missing.returncode, missing.stderr) == (1, 'Error from server (NotFound): secrets "nope" not found\n')
    quiet = kubectl("get", "secret", "nope", "-n", "kube-system", "--ignore-not-found", "-o", "json")
    assert (quiet.returncode, quiet.stdout) == (0, "")
    # microk8s' hostpath-storage makes its class the default; annotate takes the default away.
    enable()
    classes = json.loads(kubectl("get", "storageclass", "-o", "json").stdout)["items"]
    assert [(c["metadata"]["name"], c["metadata"]["annotations"][DEFAULT_CLASS]) for c in classes] == [
        ("microk8s-hostpath", "true")
    ]
    undefault = kubectl("annotate", "storageclass", "microk8s-hostpath", f"{DEFAULT_CLASS}=false", "--overwrite")
    assert undefault.stdout == "storageclass.storage.k8s.io/microk8s-hostpath annotated\n"
    annotations = json.loads(record.read_text())["StorageClass//microk8s-hostpath"]["metadata"]["annotations"]
    assert annotations[DEFAULT_CLASS] == "false"
    # patch: a providerID from "" only (ValidateNodeUpdate).
    patch = ["patch", "node", node_name, "--type=merge", "-p"]
    wanted = json.dumps({"spec": {"providerID": "openstack:///3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c"}})
    assert kubectl(*patch, wanted).stdout == f"node/{node_name} patched\n"
    assert kubectl(*patch, wanted).stdout == f"node/{node_name} patched (no change)\n"
    refused = kubectl(*patch, json.dumps({"spec": {"providerID": "openstack:///other"}}))
    assert (refused.returncode, refused.stderr) == (
        1,
        f'The Node "{node_name}" is invalid: spec.providerID: Forbidden: '
        'node updates may not change providerID except from "" to valid\n',
    )
    items = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
    assert items[0]["spec"] == {"providerID": "openstack:///3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c"}


def test_kubectl_applies_gets_annotates_and_patches_objects_and_records_them(installed):
    """kubectl apply.go, cli-runtime name.go, get, annotate, patch.go; ValidateNodeUpdate (kube_objects.py)."""
    name = nodes_json(installed)[0]["metadata"]["name"]

    def kubectl(*args, stdin=None):
        return installed.run("microk8s", "kubectl", *args, stdin=stdin)

    def enable():
        assert installed.run("microk8s", "enable", "hostpath-storage").returncode == 0

    check_objects(kubectl, installed.snap_data / "fake" / "objects.json", name, enable)
    # The objects are the cluster's: kept in its database, as dqlite keeps them.
    cluster = json.loads((installed.snap_data / "fake" / "cluster.json").read_text())
    assert sorted(cluster["objects"]) == sorted(json.loads((installed.snap_data / "fake" / "objects.json").read_text()))


def test_l4_kubectl_applies_gets_annotates_and_patches_objects_and_records_them(l4):
    master, _ = l4

    def kubectl(*args, stdin=None):
        return subprocess.run(
            [str(master.bin / "microk8s"), "kubectl", *args],
            env=master.env,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
        )

    def enable():
        assert master.run("enable", "hostpath-storage").returncode == 0

    check_objects(kubectl, master.home / "fake" / "objects.json", "k8s-master", enable)
    recorded = json.loads((master.home / "fake" / "objects.json").read_text())
    assert sorted(master.database()["objects"]) == sorted(recorded)


# --- the cloud controller manager both fakes model (cloud_controller.py) --------------------------

UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}
CLOUD_CONTROLLER = """
apiVersion: v1
kind: Secret
metadata: {name: cloud-config, namespace: kube-system}
stringData:
  cloud.conf: |
    [Global]
    region = "RegionTwo"
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: openstack-cloud-controller-manager, namespace: kube-system}
spec: {}
"""


@pytest.fixture(params=["rehearsal", "l4"])
def cloud_pair(request, tmp_path):
    """
    A control-plane node whose kubelet runs with --cloud-provider=external and a node that joined
    it (both fakes): ``kubectl``, ``joiner(command)`` (start or stop), ``listing(servers)``.
    """
    if request.param == "rehearsal":
        master, joiner = cluster_of(tmp_path, 2)
        request.addfinalizer(master.close)
        request.addfinalizer(joiner.close)
        args, listing = master.snap_data / "args/kubelet", master.root / "var/lib/koo-rehearsal/nova-servers.json"
        args.write_text(args.read_text() + "--cloud-provider=external\n")
        assert joiner.run("microk8s", "join", url_to(master, issue(master))).returncode == 0

        def kubectl(*words: str, stdin: str | None = None) -> subprocess.CompletedProcess:
            return master.run("microk8s", "kubectl", *words, stdin=stdin)

        def turn(command: str) -> None:
            assert joiner.run("microk8s", command).returncode == 0

    else:
        cluster = L4(tmp_path)
        master = cluster.node("master", "10.1.0.10", "k8s-master")
        joiner = cluster.node("joiner", "10.1.0.100", "k8s-worker-0")
        args, listing = master.home / "args/kubelet", tmp_path / "cluster" / ".nova" / "servers.json"
        args.write_text(args.read_text() + "--cloud-provider=external\n")
        assert joiner.run("join", l4_url(master)).returncode == 0

        def kubectl(*words: str, stdin: str | None = None) -> subprocess.CompletedProcess:
            return subprocess.run(
                [str(master.bin / "microk8s"), "kubectl", *words],
                env=master.env,
                input=stdin,
                capture_output=True,
                text=True,
                timeout=60,
            )

        def turn(command: str) -> None:
            assert joiner.run(command).returncode == 0

    def write_listing(servers: list[dict]) -> None:
        listing.parent.mkdir(parents=True, exist_ok=True)
        listing.write_text(json.dumps(servers))

    kubectl.joiner, kubectl.listing = turn, write_listing
    return kubectl


def test_the_cloud_controller_initializes_a_tainted_node_it_finds_and_deletes_one_whose_server_is_gone(cloud_pair):
    """
    kubelet_node_status.go initialNode; cloud-provider-openstack v1.35.0 instances.go getInstance,
    getServerByName; k8s.io/cloud-provider node_controller.go syncNode, nodelifecycle MonitorNodes.
    """
    kubectl = cloud_pair

    def nodes() -> dict:
        items = json.loads(kubectl("get", "nodes", "-o", "json").stdout)["items"]
        return {item["metadata"]["name"]: item for item in items}

    # The master registered before its kubelet had the flag; the joiner took it with the join.
    (master, joiner) = sorted(nodes(), key=lambda name: "taints" in nodes()[name]["spec"])
    assert "taints" not in nodes()[master]["spec"] and nodes()[joiner]["spec"]["taints"] == [UNINITIALIZED]
    servers = [
        {
            "id": "3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c",
            "name": f"{master}.lab.example",
            "status": "ACTIVE",
            "OS-EXT-AZ:availability_zone": "az 1",
            "flavor": {"original_name": "m1.large"},
        },
        {
            "id": "8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d",
            "name": f"{joiner}.lab.example",
            "status": "ACTIVE",
            "OS-EXT-AZ:availability_zone": "az-2",
            "flavor": {"original_name": "m1.medium"},
        },
    ]
    kubectl.listing(servers)
    # No controller manager until its DaemonSet and Secret are applied.
    assert nodes()[joiner]["spec"]["taints"] == [UNINITIALIZED]
    assert kubectl("apply", "-f", "-", stdin=CLOUD_CONTROLLER).returncode == 0
    # Without a providerID it looks for a server named as the node: Nova's names are FQDNs.
    assert nodes()[joiner]["spec"] == {"taints": [UNINITIALIZED]}
    # Nor does it delete a NotReady node it cannot find by name (ErrNotFound is no InstanceNotFound).
    kubectl.joiner("stop")
    assert nodes()[joiner]["status"]["conditions"][0]["status"] != "True"
    kubectl.joiner("start")
    patch = [
        "patch",
        "node",
        joiner,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"providerID": f"openstack:///{servers[1]['id']}"}}),
    ]
    assert kubectl(*patch).returncode == 0
    initialized = nodes()[joiner]
    assert initialized["spec"] == {"providerID": f"openstack:///{servers[1]['id']}"}
    cloud_labels = {
        "node.kubernetes.io/instance-type": "m1.medium",
        "beta.kubernetes.io/instance-type": "m1.medium",
        "topology.kubernetes.io/zone": "az-2",
        "failure-domain.beta.kubernetes.io/zone": "az-2",
        "topology.kubernetes.io/region": "RegionTwo",
        "failure-domain.beta.kubernetes.io/region": "RegionTwo",
    }
    assert cloud_labels.items() <= initialized["metadata"]["labels"].items()
    # A node without the taint is never initialized, whatever it has; given the taint, it is.
    assert "topology.kubernetes.io/region" not in nodes()[master]["metadata"]["labels"]
    assert (
        kubectl("taint", "node", master, "node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule").returncode
        == 0
    )
    assert nodes()[master]["spec"] == {"taints": [UNINITIALIZED]}
    patch = [
        "patch",
        "node",
        master,
        "--type=merge",
        "-p",
        json.dumps({"spec": {"providerID": f"openstack:///{servers[0]['id']}"}}),
    ]
    assert kubectl(*patch).returncode == 0
    assert nodes()[master]["spec"] == {"providerID": f"openstack:///{servers[0]['id']}"}
    assert nodes()[master]["metadata"]["labels"]["topology.kubernetes.io/zone"] == "az-1"  # util.SanitizeLabel
    # A NotReady node whose server the cloud no longer has is deleted; a Ready one is not.
    kubectl.listing(servers[:1])
    assert joiner in nodes()
    kubectl.joiner("stop")
    assert list(nodes()) == [master]
