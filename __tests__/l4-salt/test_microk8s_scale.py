"""
The microk8s module's _scale: the drain every roll, reboot and replacement starts with, and
scale-down (remove-node.sh): vacate on the master, leave on the node, forget on the master, with
the voter floor that keeps an HA cluster at three voters.
"""

from __future__ import annotations

import importlib
import json

import pytest
from harness.layout import LAB
from harness.microk8s_node import FakeMicrok8s
from microk8s_support import CP_JOINER, PILLAR, Cluster, calls_of, joined_cluster, schedulable
from salt.exceptions import CommandExecutionError


def apply_objects(node, manifest: str) -> None:
    """kubectl apply -f - on a fake node, as a user would apply a workload."""
    result = node.run_all(["microk8s", "kubectl", "apply", "-f", "-"], python_shell=False, timeout=60, stdin=manifest)
    assert result["retcode"] == 0, result["stderr"]


BARE_POD = """
apiVersion: v1
kind: Pod
metadata: {name: debug, namespace: default}
spec: {nodeName: k8s-worker-1, containers: [{name: shell, image: busybox}]}
"""


def test_every_drain_deletes_a_pod_no_controller_manages(microk8s, tmp_path, monkeypatch):
    """
    A pod that no controller manages (kubectl run, a pod applied by hand) cannot move to another
    node: kubectl drain refuses it without --force. A roll, a reboot and a replacement delete it
    (--force, as Kubespray's and Cluster API's drains do) rather than stop.
    """
    cluster = joined_cluster(microk8s, tmp_path)
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    for drain in (
        lambda master: master.drain_node("10.1.0.101", "1.29/stable", 60),
        lambda master: master.drain_for_reboot("10.1.0.101", 60),
        lambda master: master.drain_for_replacement("10.1.0.101", 60),
    ):
        apply_objects(cluster.master, BARE_POD)
        master = cluster.as_master()
        assert drain(master)["node"] == "k8s-worker-1"
        objects = json.loads((cluster.master.home / "fake" / "objects.json").read_text())
        assert "Pod/default/debug" not in objects
        master.uncordon_node("10.1.0.101")


def test_a_drain_a_disruption_budget_blocks_stops_the_roll_after_its_timeout_naming_the_pod(microk8s, tmp_path):
    """
    A PodDisruptionBudget is respected: its pod is not evicted while it allows no disruption, the
    drain gives up at its timeout, and the roll stops there naming the node and the pod.
    """
    cluster = joined_cluster(microk8s, tmp_path)
    apply_objects(
        cluster.master,
        """
apiVersion: v1
kind: Pod
metadata:
  name: db-0
  namespace: default
  labels: {app: db}
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: db, uid: 1f6c, controller: true}]
spec: {nodeName: k8s-worker-1, containers: [{name: db, image: postgres}]}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db, namespace: default}
spec: {minAvailable: 1, selector: {matchLabels: {app: db}}}
""",
    )
    master = cluster.as_master()
    with pytest.raises(CommandExecutionError) as raised:
        master.drain_node("10.1.0.101", "1.29/stable", 1)
    assert 'error when evicting pods/"db-0" -n "default": global timeout reached: 1s' in str(raised.value)
    assert "k8s-worker-1" in str(raised.value)
    objects = json.loads((cluster.master.home / "fake" / "objects.json").read_text())
    assert "Pod/default/db-0" in objects


WORKLOAD_POD = """
apiVersion: v1
kind: Pod
metadata:
  name: web-0
  namespace: default
  ownerReferences: [{apiVersion: apps/v1, kind: StatefulSet, name: web, uid: 7a1e, controller: true}]
spec: {nodeName: k8s-worker-1, containers: [{name: web, image: nginx}]}
"""


def test_a_drain_of_a_node_that_is_not_ready_stops_waiting_for_its_evicted_pods(microk8s, tmp_path):
    """
    A node whose kubelet is gone (a dead machine being replaced or removed) never confirms that
    its evicted pods stopped: kubectl would wait for them to its bound. The drain evicts them as
    always, with a grace period of a second, and stops waiting a second after it (Cluster API's
    drain of an unreachable node); a Ready node's drain is unchanged (the test above).
    """
    cluster = joined_cluster(microk8s, tmp_path)
    apply_objects(cluster.master, WORKLOAD_POD)
    assert cluster.worker.run("stop").returncode == 0
    master = cluster.as_master()
    assert [n["unreachable"] for n in master.nodes() if n["name"] == "k8s-worker-1"] == [True]
    vacated = master.vacate_node("10.1.0.101", 60)
    # Evicted, then waited for its grace period and a second more: far from the 60 s bound.
    assert vacated.pop("seconds") in range(0, 20)
    assert vacated == {"outcome": "drained", "node": "k8s-worker-1", "member": None, "reason": None}
    assert calls_of(cluster.master, "kubectl drain") == [
        "kubectl drain k8s-worker-1 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"
        " --grace-period=1 --skip-wait-for-delete-timeout=1"
    ]
    # The API server keeps the evicted pod, marked for deletion, until a kubelet confirms it.
    objects = json.loads((cluster.master.home / "fake" / "objects.json").read_text())
    assert "deletionTimestamp" in objects["Pod/default/web-0"]["metadata"]


def test_a_departing_worker_is_drained_leaves_and_is_removed_and_a_second_run_finds_it_absent(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    vacated = master.vacate_node("10.1.0.101", 60)
    # How long the drain took, by the clock: 0 on an idle machine, more under load.
    assert vacated.pop("seconds") in range(0, 61)
    assert vacated == {"outcome": "drained", "node": "k8s-worker-1", "member": None, "reason": None}
    assert schedulable(master, "10.1.0.101") == [False]
    assert calls_of(cluster.master, "kubectl drain") == [
        "kubectl drain k8s-worker-1 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"
    ]
    worker = microk8s
    worker.__salt__ = cluster.worker.salt_functions()
    assert "Generating new cluster certificates." in worker.leave()
    assert not (cluster.worker.home / "var" / "lock" / "clustered.lock").exists()
    master = cluster.as_master()
    assert master.forget_node("10.1.0.101") is True
    # A worker is no dqlite member: a plain remove-node by name, no --force.
    assert calls_of(cluster.master, "remove-node") == ["remove-node k8s-worker-1"]
    assert {n["address"] for n in master.nodes()} == {"10.1.0.10", "10.1.0.100"}
    # Run again (a retried destroy): nothing is there, nothing is touched.
    assert master.vacate_node("10.1.0.101", 60)["outcome"] == "absent"
    assert master.forget_node("10.1.0.101") is False
    assert len(calls_of(cluster.master, "kubectl drain")) == 1


def three_voters(microk8s, tmp_path) -> Cluster:
    """The master, its voter and a third voter at 10.1.0.102 (k8s-worker-2): an HA cluster."""
    cluster = joined_cluster(microk8s, tmp_path)
    voter = LAB.worker(2)
    cluster.third = FakeMicrok8s(tmp_path / "third", tmp_path / "cluster", voter.address, voter.name)
    third = voter.fqdn
    pillar = {
        **PILLAR,
        "nodes": [*PILLAR["nodes"], {"id": third, "address": voter.address}],
        "control_plane": [*PILLAR["control_plane"], third],
    }
    master = cluster.as_master(pillar={"microk8s": pillar})
    master.issue_join_tokens([third])
    assert cluster.third.run("join", master.join_tokens()[third]["urls"][0]).returncode == 0
    return cluster


def test_a_voter_an_ha_cluster_cannot_lose_is_refused_with_nothing_touched(microk8s, tmp_path):
    cluster = three_voters(microk8s, tmp_path)
    master = cluster.as_master()
    assert [m["role"] for m in master.members()] == ["voter", "voter", "voter"]
    assert master.vacate_node("10.1.0.100", 60) == {
        "outcome": "refused",
        "node": "k8s-worker-0",
        "member": "voter",
        "seconds": 0,
        "reason": "refusing to remove k8s-worker-0 (a dqlite voter): the HA cluster would keep 2 of its 3 voters; "
        "keep num_kube_nodes >= 3",
    }
    assert schedulable(master, "10.1.0.100") == [True]
    assert calls_of(cluster.master, "kubectl drain") + calls_of(cluster.master, "kubectl cordon") == []
    assert len(master.members()) == 3
    # A worker of the same cluster may go: it holds no vote.
    assert master.vacate_node("10.1.0.101", 60)["outcome"] == "drained"


def test_the_second_member_of_a_two_node_cluster_may_go(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER])
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0
    assert master.vacate_node("10.1.0.100", 60)["outcome"] == "drained"
    joiner = microk8s
    joiner.__salt__ = cluster.cp_joiner.salt_functions()
    joiner.leave()
    master = cluster.as_master()
    # leave.py deleted its own dqlite entry; a plain remove-node takes its Kubernetes node.
    assert [m["address"] for m in master.members()] == ["10.1.0.10:19001"]
    assert master.forget_node("10.1.0.100") is True
    assert calls_of(cluster.master, "remove-node") == ["remove-node k8s-worker-0"]
    assert [n["address"] for n in master.nodes()] == ["10.1.0.10"]


def test_a_member_that_did_not_leave_is_removed_by_force(microk8s, tmp_path):
    cluster = Cluster(microk8s, tmp_path)
    master = cluster.as_master()
    master.issue_join_tokens([CP_JOINER])
    assert cluster.cp_joiner.run("join", master.join_tokens()[CP_JOINER]["urls"][0]).returncode == 0
    assert master.vacate_node("10.1.0.100", 60)["outcome"] == "drained"
    # No leave: the machine did not answer.
    assert master.forget_node("10.1.0.100") is True
    assert calls_of(cluster.master, "remove-node") == ["remove-node 10.1.0.100 --force"]
    assert [m["address"] for m in master.members()] == ["10.1.0.10:19001"]
    assert [n["address"] for n in master.nodes()] == ["10.1.0.10"]


def test_a_drain_that_does_not_finish_in_its_bound_is_reported_not_raised(microk8s, tmp_path):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    fake_run_all = master.__salt__["cmd.run_all"]
    # kubectl pkg/drain/drain.go evictPods, and RunDrain's summary, for a pod that will not go.
    eviction = 'error when evicting pods/"web-0" -n "default": global timeout reached: 5s'
    stuck = {
        "retcode": 1,
        "stdout": "node/k8s-worker-1 cordoned\nevicting pod default/web-0",
        "stderr": f"There are pending nodes to be drained:\n k8s-worker-1\n{eviction}",
    }

    def run_all(cmd, **kwargs):
        return stuck if cmd[1:3] == ["kubectl", "drain"] else fake_run_all(cmd, **kwargs)

    master.__salt__["cmd.run_all"] = run_all
    vacated = master.vacate_node("10.1.0.101", 5)
    assert vacated.pop("seconds") in range(0, 6)
    assert vacated == {"outcome": "gave-up", "node": "k8s-worker-1", "member": None, "reason": eviction}


@pytest.mark.parametrize(
    ("roles", "kept"),
    [
        # Three voters: losing one leaves two, unless a standby is promoted in its place.
        (["voter", "voter", "voter"], 2),
        (["voter", "voter", "voter", "standby"], None),
        (["voter", "voter", "voter", "spare"], None),
        # Not HA: one voter and a spare, or two voters, may lose a member.
        (["voter", "voter"], None),
        (["spare", "voter"], None),
    ],
)
def test_the_voter_floor_keeps_an_ha_cluster_at_three_voters(microk8s, roles, kept):
    scale = importlib.import_module("microk8s._scale")
    members = [{"address": f"10.1.0.{10 + i}:19001", "role": role} for i, role in enumerate(roles)]
    refusal = scale.voter_floor(members, "10.1.0.10", "k8s-master")
    if kept is None:
        assert refusal is None
    else:
        assert refusal == (
            f"refusing to remove k8s-master (a dqlite voter): the HA cluster would keep {kept} of its "
            f"{roles.count('voter')} voters; keep num_kube_nodes >= 3"
        )
    # A standby or spare never holds a vote.
    assert scale.voter_floor(members, "10.1.0.99", "nobody") is None
