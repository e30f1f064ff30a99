"""
remove-node.sh (scale-down) against a real Salt 3007 master and real minions on 127.0.0.1
(SaltCluster from __tests__/harness), each minion running the real microk8s module over its own
fake microk8s node: the real ``salt --static`` JSON of vacate_node, leave and forget_node, the
real salt-key, and clusters of fake nodes formed with the fake's own add-node and join.
About 2 to 3 minutes (a minion that does not answer costs salt its 30 s wait, then
master.conf's 30 s gather_job_timeout).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
import yaml
from harness.layout import LAB, fake_nodes
from harness.provisioners import PROVISIONERS
from harness.real_salt import write_wrappers
from harness.salt_cluster import SaltCluster

MASTER, VOTER, THIRD, WORKER = (m.fqdn for m in LAB.kube_nodes(4))
NODES = fake_nodes(*LAB.kube_nodes(4))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    root = tmp_path_factory.mktemp("salt-cluster")
    cluster = SaltCluster(root, NODES, {}, {})
    cluster.bin = root / "wrappers"
    cluster.calls = root / "calls.log"
    write_wrappers(cluster.bin, cluster.master_dir, cluster.calls)
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def fresh(cluster, tmp_path):
    """Every fake node new and on its own, every minion key accepted, the module synced."""
    for fake in cluster.fakes.values():
        shutil.rmtree(fake.home, ignore_errors=True)
        fake.run("status", "--format", "yaml")
    # A key an earlier test deleted comes back pending once its minion authenticates again.
    cluster._accept(list(NODES))
    returns = cluster.salt("*", "saltutil.sync_modules")
    assert set(returns) == set(NODES), f"saltutil.sync_modules: {returns}\n{cluster.logs()}"
    cluster.ledger = tmp_path / "machines"
    return cluster


def join(cluster, node: str, worker: bool = False) -> None:
    """``node`` joins the master's cluster with a token the master's fake microk8s issues."""
    issued = cluster.fakes[MASTER].run("add-node", "--format", "json")
    url = json.loads(issued.stdout)["urls"][0]
    joined = cluster.fakes[node].run("join", url, *(["--worker"] if worker else []))
    assert joined.returncode == 0, joined.stdout + joined.stderr


def remove_node(cluster, node: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", str(PROVISIONERS / "remove-node.sh"), MASTER, node, NODES[node][0], *extra],
        env={**os.environ, "PATH": f"{cluster.bin}:{os.environ['PATH']}", "KOO_MACHINE_LEDGER": str(cluster.ledger)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def calls(cluster, node: str, prefix: str = "") -> list[str]:
    log = cluster.fakes[node].home / "calls.log"
    return [line for line in log.read_text().splitlines() if line.startswith(prefix)] if log.exists() else []


def kubernetes_nodes(cluster) -> dict[str, bool]:
    """The master's Kubernetes nodes: name → schedulable."""
    listed = json.loads(cluster.fakes[MASTER].run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    return {n["metadata"]["name"]: not n["spec"].get("unschedulable", False) for n in listed}


def members(cluster) -> list[tuple[str, str]]:
    return [(m["address"], m["role"]) for m in cluster.fakes[MASTER].database()["members"]]


def key_status(cluster, minion: str) -> str:
    keys = json.loads(cluster._run("salt-key", "--list=all", "--out=json").stdout)
    return next((name for name, ids in keys.items() if minion in ids), "absent")


def test_a_started_cluster_can_serve_its_first_file_lists_to_every_minion_at_once(cluster):
    """
    The first test of this file (pytest-xdist's loadfile keeps the order): before any request.
    Salt 3007's roots fileserver (fileserver/roots.py ``_file_lists``) makes its list cache
    directory with a check, then ``os.makedirs``; a request that loses that race to another logs
    "Unable to make cachedir" and answers an empty file list, so its minion syncs no module at all
    ("'microk8s.leave' is not available" in a cold run). The harness makes the directory first.
    """
    master = yaml.safe_load((cluster.master_dir / "master").read_text())
    assert (Path(master["cachedir"]) / "file_lists" / "roots").is_dir()


def test_a_departing_worker_is_drained_leaves_and_is_removed_and_a_second_run_is_harmless(fresh):
    cluster = fresh
    join(cluster, VOTER)
    join(cluster, WORKER, worker=True)
    result = remove_node(cluster, WORKER, "60")
    assert result.returncode == 0, result.stderr + cluster.logs()
    lines = result.stdout.splitlines()
    assert re.fullmatch(rf"drained node k8s-worker-2 \(10\.1\.0\.102\) on {re.escape(MASTER)} in \d+ s", lines[0])
    assert lines[1:] == [
        f"node {WORKER} left the microk8s cluster",
        f"removed node {WORKER} (10.1.0.102) from the microk8s cluster on {MASTER}",
        f"deleted minion key: {WORKER}",
    ]
    assert calls(cluster, MASTER, "kubectl drain") == [
        "kubectl drain k8s-worker-2 --ignore-daemonsets --delete-emptydir-data --force --timeout=60s"
    ]
    assert calls(cluster, WORKER, "leave") == ["leave"]
    # It left cleanly: a plain remove-node by name.
    assert calls(cluster, MASTER, "remove-node") == ["remove-node k8s-worker-2"]
    assert kubernetes_nodes(cluster) == {"k8s-master": True, "k8s-worker-0": True}
    assert key_status(cluster, WORKER) in ("absent", "minions_pre")

    again = remove_node(cluster, WORKER, "60")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[0] == (
        f"node {WORKER} (10.1.0.102) is not in the microk8s cluster on {MASTER}; nothing to remove"
    )
    assert len(calls(cluster, MASTER, "kubectl drain")) == 1
    assert calls(cluster, WORKER, "leave") == ["leave"]


def test_a_voter_the_ha_cluster_cannot_lose_is_refused_and_nothing_is_touched(fresh):
    cluster = fresh
    join(cluster, VOTER)
    join(cluster, THIRD)
    assert [role for _, role in members(cluster)] == ["voter", "voter", "voter"]
    result = remove_node(cluster, THIRD)
    assert (result.returncode, result.stdout) == (1, "")
    assert result.stderr == (
        f"cannot remove node {THIRD} (10.1.0.101): refusing to remove k8s-worker-1 (a dqlite voter): "
        "the HA cluster would keep 2 of its 3 voters; keep num_kube_nodes >= 3\n"
    )
    assert calls(cluster, MASTER, "kubectl drain") + calls(cluster, MASTER, "remove-node") == []
    assert calls(cluster, THIRD, "leave") == []
    assert kubernetes_nodes(cluster) == {"k8s-master": True, "k8s-worker-0": True, "k8s-worker-1": True}
    assert len(members(cluster)) == 3
    assert key_status(cluster, THIRD) == "minions"


def test_the_second_member_of_a_two_node_cluster_leaves_and_is_removed(fresh):
    cluster = fresh
    join(cluster, VOTER)
    result = remove_node(cluster, VOTER, "60")
    assert result.returncode == 0, result.stderr + cluster.logs()
    assert result.stdout.splitlines()[1:3] == [
        f"node {VOTER} left the microk8s cluster",
        f"removed node {VOTER} (10.1.0.100) from the microk8s cluster on {MASTER}",
    ]
    # leave.py deleted its own dqlite entry; the master removed its Kubernetes node.
    assert members(cluster) == [("10.1.0.10:19001", "voter")]
    assert calls(cluster, MASTER, "remove-node") == ["remove-node k8s-worker-0"]
    assert kubernetes_nodes(cluster) == {"k8s-master": True}


def test_a_node_that_does_not_answer_is_removed_without_leaving(fresh):
    cluster = fresh
    join(cluster, VOTER)
    # The departing machine hangs: its minion stops answering (the third process: master, then minions in order).
    minion = cluster.processes[1 + list(NODES).index(VOTER)]
    os.killpg(minion.pid, signal.SIGSTOP)
    try:
        result = remove_node(cluster, VOTER, "60")
    finally:
        os.killpg(minion.pid, signal.SIGCONT)
    assert result.returncode == 0, result.stderr + cluster.logs()
    lines = result.stdout.splitlines()
    assert lines[1].startswith(f"node {VOTER} did not answer microk8s.leave")
    assert lines[1].endswith("; removing it without leaving")
    assert lines[2:] == [
        f"removed node {VOTER} (10.1.0.100) from the microk8s cluster on {MASTER}",
        f"deleted minion key: {VOTER}",
    ]
    assert calls(cluster, VOTER, "leave") == []
    # Still a dqlite member: removed by force.
    assert calls(cluster, MASTER, "remove-node") == ["remove-node 10.1.0.100 --force"]
    assert members(cluster) == [("10.1.0.10:19001", "voter")]
    assert kubernetes_nodes(cluster) == {"k8s-master": True}


def test_the_harness_waits_out_a_master_that_answers_late(cluster, monkeypatch):
    """
    On a loaded machine the master can miss salt's publish timeout ("Salt request timed out"):
    accepting keys retries until its own deadline instead of failing the module's first test.
    """
    group = cluster.processes[0].pid
    answering = cluster.salt

    def salt_to_a_stopped_master(*args, **kwargs):
        monkeypatch.setattr(cluster, "salt", answering)
        os.killpg(group, signal.SIGSTOP)
        try:
            return answering(*args, **kwargs)
        finally:
            os.killpg(group, signal.SIGCONT)

    monkeypatch.setattr(cluster, "salt", salt_to_a_stopped_master)
    cluster._accept(list(NODES), timeout=60)
