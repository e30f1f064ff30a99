"""
Node labels and taints, with real Salt: a real Salt master (the project's master.conf and
reactor) runs the real orch.deploy (salt-run state.orchestrate) over real minions, the real
microk8s SLS and modules, against fake microk8s nodes whose kubectl keeps each node's labels,
annotations and taints (__tests__/doubles/microk8s_core/node_objects.py). Three
Kubernetes nodes (the master and a voter, the control plane, and a worker) and the Salt master's
own minion, whose highstate orch.deploy runs first.

The overlay in front of salt/ is the join protocol's (harness.salt_cluster.PROTOCOL_OVERLAY),
with the Salt master's SLS a no-op and a top file without `core` (it would change this machine).
"""

from __future__ import annotations

import json

import pytest
from harness.layout import LAB, fake_nodes
from harness.salt_cluster import PROTOCOL_OVERLAY, SaltCluster, from_terraform_sls

SALT_MASTER, MASTER, VOTER, WORKER = (m.fqdn for m in (LAB.salt_master, LAB.master, LAB.worker(0), LAB.worker(1)))
NODES = fake_nodes(LAB.salt_master, LAB.master, LAB.worker(0), LAB.worker(1))
KUBERNETES = (MASTER, VOTER, WORKER)
POOLS = {
    MASTER: ({"kube-on-os/pool": "default"}, []),
    VOTER: ({"kube-on-os/pool": "default"}, []),
    WORKER: ({"kube-on-os/pool": "gpu", "gpu": "a100"}, ["gpu=true:NoSchedule", "spot:PreferNoSchedule"]),
}
OVERLAY = {
    **PROTOCOL_OVERLAY,
    "salt_master/init.sls": "koo-test-salt-master:\n  test.succeed_without_changes: []\n",
    # salt/top.sls less core.
    "top.sls": (
        "base:\n"
        "  'salt.*':\n    - salt_master\n"
        "  'k8s-master.*':\n    - microk8s.master\n"
        "  'k8s-worker-*':\n    - microk8s.install\n    - microk8s.joined\n    - microk8s.tokens\n"
    ),
}


def pillar(pools: dict) -> dict:
    """The pillar as Terraform writes it, each node with its labels and taints."""
    return {
        "mine_functions": {"network.ip_addrs": [{"mine_function": "config.get"}, "fake_ip_addrs"]},
        "microk8s": {
            "master": MASTER,
            # The fake nodes' release: orch.deploy's release check holds new nodes to it.
            "channel": "1.28/stable",
            "nodes": [
                {"id": node, "address": NODES[node][0], "labels": pools[node][0], "taints": pools[node][1]}
                for node in KUBERNETES
            ],
            "control_plane": [MASTER, VOTER],
            "join": {"attempts": 8, "interval": 1, "max_interval": 2},
        },
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    salt_cluster = SaltCluster(tmp_path_factory.mktemp("salt-cluster"), NODES, pillar(POOLS), OVERLAY)
    try:
        salt_cluster.start()
        yield salt_cluster
    finally:
        salt_cluster.stop()


def deploy(cluster, pools: dict) -> None:
    """orch.deploy with the pillar Terraform writes for ``pools``; every step must succeed."""
    (cluster.pillar_root / "_from_terraform.sls").write_text(from_terraform_sls(pillar(pools)))
    result = cluster._run("salt-run", "--out=json", "state.orchestrate", "orch.deploy", timeout=600)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr + cluster.logs()


def node(cluster, name: str) -> dict:
    """A Kubernetes node's labels, annotations and taints, as the master's kubectl shows them."""
    shown = json.loads(cluster.fakes[MASTER].run("kubectl", "get", "node", name, "-o", "json").stdout)
    return {**shown["metadata"], "taints": shown["spec"].get("taints", [])}


def writes(cluster) -> list[str]:
    """The kubectl label, taint and annotate commands the master's fake microk8s ran."""
    log = (cluster.fakes[MASTER].home / "calls.log").read_text().splitlines()
    return [
        line
        for line in log
        if line.split()[:2] in (["kubectl", "label"], ["kubectl", "taint"], ["kubectl", "annotate"])
    ]


def test_orch_deploy_labels_and_taints_the_nodes_then_changes_nothing_then_applies_a_changed_pillar(cluster):
    deploy(cluster, POOLS)
    kubelet = {name: node(cluster, name)["labels"] for name in ("k8s-master", "k8s-worker-0", "k8s-worker-1")}
    assert {name: labels.get("kube-on-os/pool") for name, labels in kubelet.items()} == {
        "k8s-master": "default",
        "k8s-worker-0": "default",
        "k8s-worker-1": "gpu",
    }
    worker = node(cluster, "k8s-worker-1")
    assert worker["labels"]["gpu"] == "a100"
    assert worker["labels"]["node.kubernetes.io/microk8s-worker"] == "microk8s-worker"
    assert worker["annotations"] == {
        "kube-on-os/managed-labels": '["gpu", "kube-on-os/pool"]',
        "kube-on-os/managed-taints": '["gpu=true:NoSchedule", "spot:PreferNoSchedule"]',
    }
    assert worker["taints"] == [
        {"key": "gpu", "value": "true", "effect": "NoSchedule"},
        {"key": "spot", "effect": "PreferNoSchedule"},
    ]
    assert node(cluster, "k8s-master")["taints"] == []
    assert node(cluster, "k8s-master")["annotations"] == {"kube-on-os/managed-labels": '["kube-on-os/pool"]'}

    # Run again: every node has its labels and taints, and nothing is written.
    written = writes(cluster)
    deploy(cluster, POOLS)
    assert writes(cluster) == written
    assert node(cluster, "k8s-worker-1") == worker

    # Someone else's label and taint (a zone, a maintenance window), set by hand.
    run = cluster.fakes[MASTER].run
    assert run("kubectl", "label", "node", "k8s-worker-1", "topology.kubernetes.io/zone=nova").returncode == 0
    assert run("kubectl", "taint", "node", "k8s-worker-1", "maintenance=soon:PreferNoSchedule").returncode == 0
    unmanaged = {
        k: v for k, v in node(cluster, "k8s-worker-1")["labels"].items() if k not in ("gpu", "kube-on-os/pool")
    }
    # The pillar drops the gpu label and the spot taint, and changes the gpu taint.
    deploy(cluster, {**POOLS, WORKER: ({"kube-on-os/pool": "gpu"}, ["gpu=false:NoExecute"])})
    changed = node(cluster, "k8s-worker-1")
    assert changed["labels"] == {**unmanaged, "kube-on-os/pool": "gpu"}
    assert changed["labels"]["topology.kubernetes.io/zone"] == "nova"
    assert changed["taints"] == [
        {"key": "gpu", "value": "false", "effect": "NoExecute"},
        {"key": "maintenance", "value": "soon", "effect": "PreferNoSchedule"},
    ]
    assert changed["annotations"] == {
        "kube-on-os/managed-labels": '["kube-on-os/pool"]',
        "kube-on-os/managed-taints": '["gpu=false:NoExecute"]',
    }
    # Only the worker was touched, and only by its labels, its taints and the annotations.
    assert [line.split()[:4] for line in writes(cluster)[len(written) + 2 :]] == [
        ["kubectl", "label", "node", "k8s-worker-1"],
        ["kubectl", "taint", "node", "k8s-worker-1"],
        ["kubectl", "annotate", "node", "k8s-worker-1"],
    ]
    assert node(cluster, "k8s-master")["labels"] == kubelet["k8s-master"]
