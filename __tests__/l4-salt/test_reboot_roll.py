"""
The rolling reboot for package updates, with real Salt: the chain's provisioners/reboot.sh on a
real Salt master (the project's master.conf) runs the real orch.reboot through the real
orchestrate.sh, the real modules and real minions, against fake microk8s nodes. A node's
``systemctl reboot`` is the harness's (__tests__/harness/fake_systemctl.py): its minion goes
down with the machine and starts again, its /run/reboot-required is gone, its kubelet reports a
new boot id. Three nodes: the Kubernetes master and a voter (the control plane) and a worker.

The overlay in front of salt/ is the join protocol's (harness.salt_cluster.PROTOCOL_OVERLAY),
with the Salt master's own SLS a no-op (orchestrate.sh applies it masterless first).
"""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from harness.layout import LAB, fake_nodes
from harness.provisioners import PROVISIONERS
from harness.real_salt import write_wrappers
from harness.salt_cluster import PROTOCOL_OVERLAY, SaltCluster

MASTER, VOTER, WORKER = (m.fqdn for m in LAB.kube_nodes(3))
NODES = fake_nodes(*LAB.kube_nodes(3))
PILLAR = {
    "mine_functions": {"network.ip_addrs": [{"mine_function": "config.get"}, "fake_ip_addrs"]},
    "microk8s": {
        "master": MASTER,
        "nodes": [{"id": node, "address": address} for node, (address, _) in NODES.items()],
        "control_plane": [MASTER, VOTER],
        "join": {"attempts": 8, "interval": 1, "max_interval": 2},
    },
    # A node that does not come back stops the roll within the test's patience.
    "orchestration": {"drain_timeout": 30, "ready_timeout": 30},
}
OVERLAY = {**PROTOCOL_OVERLAY, "salt_master/init.sls": "koo-test-salt-master:\n  test.succeed_without_changes: []\n"}
JOINED = "microk8s-joined-microk8s-cluster-joined"
TOKENS = "microk8s-tokens-microk8s-join-tokens-published"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    salt_cluster = SaltCluster(tmp_path_factory.mktemp("salt-cluster"), NODES, PILLAR, OVERLAY)
    try:
        salt_cluster.start()
        for function in ("saltutil.sync_all", "saltutil.refresh_pillar", "mine.update"):
            assert set(salt_cluster.salt("*", function)) == set(NODES), salt_cluster.logs()
        published = salt_cluster.state(MASTER, "microk8s.master")[MASTER][TOKENS]
        assert published["result"] is True, published
        joined = salt_cluster.state(f"{VOTER},{WORKER}", "microk8s.joined", tgt_type="list")
        assert all(joined[node][JOINED]["result"] is True for node in (VOTER, WORKER)), joined
        yield salt_cluster
    finally:
        salt_cluster.stop()


def kubelets(cluster) -> dict:
    """name → (boot id, Ready, unschedulable), as the master's kubectl shows them."""
    items = json.loads(cluster.fakes[MASTER].run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    return {
        item["metadata"]["name"]: (
            item["status"]["nodeInfo"]["bootID"],
            item["status"]["conditions"][0]["status"] == "True",
            item["spec"].get("unschedulable", False),
        )
        for item in items
    }


def drains(cluster, operator: str) -> list[str]:
    """The nodes ``operator``'s kubectl drained, from its fake microk8s' call log."""
    log = (cluster.fakes[operator].home / "calls.log").read_text().splitlines()
    return [line.split()[2] for line in log if line.startswith("kubectl drain ")]


def needs_reboot(cluster, minion: str, *packages: str) -> None:
    required = cluster.reboot_required(minion)
    required.write_text("*** System restart required ***\n")
    required.with_name("reboot-required.pkgs").write_text("".join(f"{p}\n" for p in packages))


def reboot_sh(cluster, roll: str) -> subprocess.CompletedProcess:
    """provisioners/reboot.sh as the chain runs it, with salt, salt-run and salt-call pointed at this cluster."""
    return provisioner(cluster, "reboot.sh", roll, MASTER, VOTER, WORKER)


def provisioner(cluster, script: str, *args: str) -> subprocess.CompletedProcess:
    """A script of provisioners/ as the chain runs it, with salt, salt-run and salt-call pointed at this cluster."""
    wrappers = cluster.root / "wrappers"
    write_wrappers(
        wrappers, cluster.master_dir, cluster.root / "calls.log", cluster.root / MASTER / "etc", cluster.overlay
    )
    return subprocess.run(
        ["bash", str(PROVISIONERS / script), *args],
        env={**os.environ, "PATH": f"{wrappers}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def test_with_the_roll_off_the_nodes_that_need_a_reboot_are_named_and_none_reboots(cluster):
    before = kubelets(cluster)
    needs_reboot(cluster, WORKER, "linux-image-6.8.0-51-generic")
    assert cluster.salt(WORKER, "kube_on_os.reboot_required") == {
        WORKER: {"required": True, "packages": ["linux-image-6.8.0-51-generic"]}
    }
    result = reboot_sh(cluster, "false")
    assert (result.returncode, result.stdout) == (
        0,
        f"reboot_for_updates is off: 1 of 3 Kubernetes nodes need a reboot for their updates: {WORKER}; "
        "set it to true to roll them\n",
    ), result.stderr
    assert kubelets(cluster) == before
    assert cluster.reboot_required(WORKER).exists()


def test_the_nodes_that_need_a_reboot_reboot_one_at_a_time_and_come_back_ready(cluster):
    before = kubelets(cluster)
    assert all(ready and not cordoned for _, ready, cordoned in before.values())
    needs_reboot(cluster, MASTER, "linux-image-6.8.0-51-generic", "libc6")
    needs_reboot(cluster, WORKER, "linux-image-6.8.0-51-generic")
    result = reboot_sh(cluster, "true")
    assert result.returncode == 0, result.stdout + result.stderr + cluster.logs()
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"reboot_for_updates: rebooting 2 of 3 Kubernetes nodes for their updates, one at a time: {MASTER}, {WORKER}"
    )
    assert lines[-1].startswith("orchestration orch.reboot succeeded in ")
    after = kubelets(cluster)
    # Both came back (a new boot id), Ready and schedulable; the voter was never rebooted.
    for name in ("k8s-master", "k8s-worker-1"):
        assert after[name][0] != before[name][0]
        assert after[name][1:] == (True, False)
    assert after["k8s-worker-0"] == before["k8s-worker-0"]
    # The master's minion is down while it reboots: the voter drained it; the master drained the worker.
    assert (drains(cluster, VOTER), drains(cluster, MASTER)) == (["k8s-master"], ["k8s-worker-1"])
    assert not cluster.reboot_required(MASTER).exists() and not cluster.reboot_required(WORKER).exists()
    assert cluster.salt("*", "test.ping") == {node: True for node in NODES}
    # Nothing left to reboot: the next run starts no orchestration.
    again = reboot_sh(cluster, "true")
    assert (again.returncode, again.stdout) == (
        0,
        "reboot_for_updates: no Kubernetes node needs a reboot for its updates\n",
    ), again.stderr


def test_a_node_drained_before_its_machine_is_replaced_is_uncordoned_once_ready_on_the_new_one(cluster):
    """
    The drain record's destroy-time hook (drain-node.sh) and orch.deploy's step after the cluster
    check (microk8s.uncordon_replaced). The new machine is the harness's reboot of the old one:
    what the step goes by, the Node Ready under the same name with another boot id, is the same.
    """
    address, name = NODES[WORKER]
    result = provisioner(cluster, "drain-node.sh", MASTER, WORKER, address)
    assert (result.returncode, result.stdout) == (
        0,
        f"drained node {name} ({address}) on {MASTER} before its machine is deleted\n",
    ), result.stderr + cluster.logs()
    assert drains(cluster, MASTER)[-1] == name
    before = kubelets(cluster)
    assert before[name][1:] == (True, True)
    # Still the old machine (the apply failed before deleting it): it stays cordoned, and noted.
    waiting = {"uncordoned": [], "waiting": [name], "dropped": []}
    assert cluster.salt(MASTER, "microk8s.uncordon_replaced") == {MASTER: waiting}
    assert kubelets(cluster)[name] == before[name]
    # Another machine under its name: the voter has no note of it, the master uncordons it once.
    assert cluster.salt(WORKER, "kube_on_os.reboot")[WORKER]
    deadline = time.monotonic() + 60
    while not (kubelets(cluster)[name][0] != before[name][0] and kubelets(cluster)[name][1]):
        assert time.monotonic() < deadline, kubelets(cluster)
        time.sleep(1)
    # A short timeout: salt waits out the whole of it for a minion that missed the job while it
    # restarted.
    while cluster.salt(WORKER, "test.ping", timeout=5) != {WORKER: True}:
        assert time.monotonic() < deadline, cluster.logs()
        time.sleep(1)
    empty = {"uncordoned": [], "waiting": [], "dropped": []}
    assert cluster.salt(VOTER, "microk8s.uncordon_replaced") == {VOTER: empty}
    assert cluster.salt(MASTER, "microk8s.uncordon_replaced") == {MASTER: {**empty, "uncordoned": [name]}}
    assert kubelets(cluster)[name][1:] == (True, False)
    assert cluster.salt(MASTER, "microk8s.uncordon_replaced") == {MASTER: empty}


# Last: the voter's machine stays down.
def test_a_node_that_does_not_come_back_stops_the_roll_there_naming_it(cluster):
    before = kubelets(cluster)
    needs_reboot(cluster, VOTER, "linux-image-6.8.0-51-generic")
    needs_reboot(cluster, WORKER, "linux-image-6.8.0-51-generic")
    (cluster.fakes[VOTER].home / "fake" / "no-boot").parent.mkdir(parents=True, exist_ok=True)
    (cluster.fakes[VOTER].home / "fake" / "no-boot").touch()
    drained = drains(cluster, MASTER)
    result = reboot_sh(cluster, "true")
    assert result.returncode == 1
    assert "orch-reboot-salt-wait-for-event-start-k8s-worker-0" in result.stderr, result.stdout + result.stderr
    # The roll stopped at the voter: the worker was neither drained nor rebooted.
    assert drains(cluster, MASTER) == [*drained, "k8s-worker-0"]
    after = kubelets(cluster)
    assert after["k8s-worker-1"] == before["k8s-worker-1"]
    assert after["k8s-worker-0"][1:] == (False, True)
    assert cluster.reboot_required(WORKER).exists()
