"""
The OpenStack cloud integration, with real Salt: a real Salt master runs the real orch.deploy
(salt-run state.orchestrate) over real minions, the real microk8s SLS and modules, against fake
microk8s nodes whose kubectl keeps what it applied (__tests__/doubles/microk8s_core/
kube_objects.py, its record fake/objects.json) and each node's providerID (node_objects.py).
Three Kubernetes nodes (the master and a voter, and a worker) and the Salt master's own minion;
the master's pillar has openstack:cloud (pillar/_cloud.sls, which pillar/top.sls gives it alone),
and microk8s' hostpath-storage addon made microk8s-hostpath the default StorageClass. The pillar
says microk8s:external_cloud_provider, so every node's kubelet gets --cloud-provider=external
(microk8s.kubelet).

The overlay in front of salt/ is the join protocol's, as in test_node_labels.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
import shutil

import pytest
import yaml
from harness import salt_cluster
from harness.layout import DOMAIN, LAB, PRIVATE_CIDR, PUBLIC_CIDR, fake_nodes
from harness.salt_cluster import PROTOCOL_OVERLAY, SaltCluster, from_terraform_sls
from test_cloud_module import CA, DEFAULT_POOL_TAINTS, admits

SALT_MASTER, MASTER, VOTER, WORKER = (m.fqdn for m in (LAB.salt_master, LAB.master, LAB.worker(0), LAB.worker(1)))
NODES = fake_nodes(LAB.salt_master, LAB.master, LAB.worker(0), LAB.worker(1))
KUBERNETES = (MASTER, VOTER, WORKER)
INSTANCES = {
    MASTER: "3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c",
    VOTER: "8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d",
    WORKER: "c0ffee00-1234-4abc-9def-0123456789ab",
}
# The project's Nova servers, as the fakes' cloud controller manager finds them
# (cloud_controller.py): named by FQDN, each in a zone of its own, the flavors by name.
ZONES = {MASTER: "az-1", VOTER: "az-2", WORKER: "az-3"}
FLAVORS = {MASTER: "m1.large", VOTER: "m1.large", WORKER: "m1.medium"}


def server(node: str, instance_id: str | None = None) -> dict:
    return {
        "id": instance_id or INSTANCES[node],
        "name": node,
        "status": "ACTIVE",
        "OS-EXT-AZ:availability_zone": ZONES[node],
        "flavor": {"original_name": FLAVORS[node]},
    }


# A secret with what gcfg must have quoted and escaped: a comment character, a quote, a backslash.
SECRET = 'sup3r;secret#"cred\\ential'
CLOUD = {
    "openstack": {
        "cloud": {
            "auth_url": "https://keystone.example:5000/v3",
            "region": "RegionOne",
            "application_credential_id": "0123456789abcdef0123456789abcdef",
            "application_credential_secret": SECRET,
            "floating_network_id": "5e0c7f7a-7a1e-4a49-9d3e-6c3b1e2f0a11",
            "subnet_id": "2b9d7c1e-0f3a-4c5b-8e6d-7a8b9c0d1e2f",
            "member_subnet_id": "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
            "load_balancer": True,
        }
    }
}
CLOUD_CONF = """[Global]
auth-url = "https://keystone.example:5000/v3"
region = "RegionOne"
application-credential-id = "0123456789abcdef0123456789abcdef"
application-credential-secret = "sup3r;secret#\\"cred\\\\ential"

[Networking]
address-sort-order = "10.1.0.0/16"

[LoadBalancer]
enabled = true
floating-network-id = "5e0c7f7a-7a1e-4a49-9d3e-6c3b1e2f0a11"
subnet-id = "2b9d7c1e-0f3a-4c5b-8e6d-7a8b9c0d1e2f"
member-subnet-id = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"
create-monitor = true

[BlockStorage]
ignore-volume-az = false

[Metadata]
search-order = "configDrive,metadataService"
"""
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
MANIFESTS = [
    "ClusterRole//system:cloud-controller-manager",
    "ClusterRole//system:cloud-node-controller",
    "ClusterRoleBinding//system:cloud-controller-manager",
    "ClusterRoleBinding//system:cloud-node-controller",
    "ServiceAccount/kube-system/cloud-controller-manager",
    "DaemonSet/kube-system/openstack-cloud-controller-manager",
    "CustomResourceDefinition//volumesnapshotclasses.snapshot.storage.k8s.io",
    "CustomResourceDefinition//volumesnapshotcontents.snapshot.storage.k8s.io",
    "CustomResourceDefinition//volumesnapshots.snapshot.storage.k8s.io",
    "ServiceAccount/kube-system/snapshot-controller",
    "Deployment/kube-system/snapshot-controller",
    "CSIDriver//cinder.csi.openstack.org",
    "ServiceAccount/kube-system/csi-cinder-controller-sa",
    "ServiceAccount/kube-system/csi-cinder-node-sa",
    "Deployment/kube-system/csi-cinder-controllerplugin",
    "DaemonSet/kube-system/csi-cinder-nodeplugin",
]


def pillar() -> dict:
    """The pillar as Terraform writes it, each node with its Nova server's UUID."""
    return {
        "mine_functions": {"network.ip_addrs": [{"mine_function": "config.get"}, "fake_ip_addrs"]},
        "network": {"public_cidr": PUBLIC_CIDR, "private_cidr": PRIVATE_CIDR},
        "microk8s": {
            "master": MASTER,
            "channel": "1.28/stable",
            "nodes": [
                {"id": node, "instance_id": INSTANCES[node], "address": NODES[node][0], "labels": {}, "taints": []}
                for node in KUBERNETES
            ],
            "control_plane": [MASTER, VOTER],
            "join": {"attempts": 8, "interval": 1, "max_interval": 2},
            # Terraform's side writes it with the cloud integration (microk8s.kubelet).
            "external_cloud_provider": True,
        },
    }


DAEMON_PATHS = salt_cluster._daemon_paths


def debug_logs(root, name: str) -> dict:
    """The harness's daemon settings, but logging at debug: the secret must stay out of every log line."""
    return {**DAEMON_PATHS(root, name), "log_level_logfile": "debug"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(salt_cluster, "_daemon_paths", debug_logs)
        cluster = SaltCluster(tmp_path_factory.mktemp("salt-cluster"), NODES, pillar(), OVERLAY)
        (cluster.pillar_root / "_cloud.sls").write_text(f"#!yaml\n{yaml.safe_dump(CLOUD)}")
        # microk8s' hostpath-storage addon (enabled by microk8s.addons) made its class the default.
        assert cluster.fakes[MASTER].run("enable", "hostpath-storage").returncode == 0
        listing(cluster, [server(node) for node in KUBERNETES])
        try:
            cluster.start()
            yield cluster
        finally:
            cluster.stop()


def listing(cluster, servers: list[dict]) -> None:
    """The servers the cloud lists (cloud_controller.py reads them from the fake cluster's directory)."""
    path = cluster.root / "fake-cluster" / ".nova" / "servers.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(servers))


def orchestrate(cluster, data: dict | None = None) -> tuple[int, dict, str]:
    """
    orch.deploy with ``data`` (default: ``pillar()``) as _from_terraform.sls: salt-run's exit
    code, its steps, and all it printed.
    """
    (cluster.pillar_root / "_from_terraform.sls").write_text(from_terraform_sls(data or pillar()))
    result = cluster._run("salt-run", "--out=json", "state.orchestrate", "orch.deploy", timeout=600)
    steps = next(iter(json.loads(result.stdout)["data"].values())) if result.stdout.startswith("{") else {}
    return result.returncode, steps, result.stdout + result.stderr + (cluster.logs() if result.returncode else "")


def step_states(steps: dict, step: str) -> dict:
    """The master's states in orch.deploy's ``step`` (salt.state reports them only when one changed something)."""
    found = next(value for key, value in steps.items() if step in key)
    assert found["result"] is True, found
    states = found["changes"].get("ret", {}).get(MASTER, {})
    return {key.split("_|-")[1]: value for key, value in states.items()}


def deploy(cluster, data: dict | None = None) -> tuple[dict, str]:
    """
    orch.deploy with ``data`` (default: ``pillar()``) as _from_terraform.sls; every step must
    succeed. The cloud-provider step's states, and all salt-run printed.
    """
    code, steps, printed = orchestrate(cluster, data)
    assert code == 0, printed[-8000:]
    return step_states(steps, "orch-deploy-salt-state-cloud-provider"), printed


def node_objects(cluster) -> dict:
    """The Nodes, by name, as the master's kubectl lists them."""
    shown = json.loads(cluster.fakes[MASTER].run("kubectl", "get", "nodes", "-o", "json").stdout)
    return {item["metadata"]["name"]: item for item in shown["items"]}


def cloud_labels(item: dict) -> dict:
    labels = item["metadata"]["labels"]
    wanted = ("topology.kubernetes.io/zone", "topology.kubernetes.io/region", "node.kubernetes.io/instance-type")
    return {key: labels[key] for key in wanted if key in labels}


def objects(cluster) -> dict:
    """The fake's record of every object kubectl applied on the master."""
    return json.loads((cluster.fakes[MASTER].home / "fake" / "objects.json").read_text())


def provider_ids(cluster) -> dict:
    return {name: item["spec"].get("providerID") for name, item in node_objects(cluster).items()}


def calls(cluster, *prefix: str) -> list[str]:
    log = (cluster.fakes[MASTER].home / "calls.log").read_text().splitlines()
    return [line for line in log if line.split()[: len(prefix)] == list(prefix)]


def kubelet_flags(cluster) -> dict:
    """Each node's --cloud-provider lines in its args/kubelet, and how often its kubelite restarted."""
    found = {}
    for node in KUBERNETES:
        home = cluster.fakes[node].home
        lines = (home / "args" / "kubelet").read_text().splitlines()
        restarts = (home / "calls.log").read_text().splitlines().count("snap restart microk8s.daemon-kubelite")
        found[node] = ([line for line in lines if line.startswith("--cloud-provider")], restarts)
    return found


def test_orch_deploy_applies_the_cloud_integration_with_the_secret_in_no_output_then_changes_nothing(cluster):
    code, steps, printed = orchestrate(cluster)
    assert code == 0, printed[-8000:]
    states = step_states(steps, "orch-deploy-salt-state-cloud-provider")
    # The master's highstate wrote the flag and restarted its kubelite, then once more for the
    # address its API server advertises (microk8s.apiserver); the joiners, after it, got the
    # master's kubelet arguments with their join (join.py store_base_kubelet_args), so their own
    # state found the flag there and restarted nothing (this top file gives them no apiserver).
    assert kubelet_flags(cluster) == {
        MASTER: (["--cloud-provider=external"], 2),
        VOTER: (["--cloud-provider=external"], 0),
        WORKER: (["--cloud-provider=external"], 0),
    }
    assert all(state["result"] is True for state in states.values()), states
    # The providerIDs came right after the joins, in a step of their own.
    assert step_states(steps, "orch-deploy-salt-state-provider-ids")["microk8s-provider-ids-microk8s-provider-ids-set"][
        "changes"
    ] == {node: {"old": None, "new": f"openstack:///{INSTANCES[node]}"} for node in KUBERNETES}
    assert provider_ids(cluster) == {NODES[node][1]: f"openstack:///{INSTANCES[node]}" for node in KUBERNETES}
    # The cloud controller manager initialized every node: the joiners once it ran (their kubelets
    # registered them tainted), the master once Salt tainted it (its kubelet registered it before
    # it ran with --cloud-provider=external).
    initialized = states["microk8s-cloud-provider-microk8s-nodes-initialized"]
    assert initialized["changes"] == {
        MASTER: {
            "old": "not initialized",
            "new": "topology.kubernetes.io/zone=az-1 topology.kubernetes.io/region=RegionOne "
            "node.kubernetes.io/instance-type=m1.large",
        }
    }
    for node, item in node_objects(cluster).items():
        assert "taints" not in item["spec"], item
        zone = ZONES[f"{node}.{DOMAIN}"]
        assert cloud_labels(item) == {
            "topology.kubernetes.io/zone": zone,
            "topology.kubernetes.io/region": "RegionOne",
            "node.kubernetes.io/instance-type": FLAVORS[f"{node}.{DOMAIN}"],
        }

    record = objects(cluster)
    secret = record["Secret/kube-system/cloud-config"]
    assert base64.b64decode(secret["data"]["cloud.conf"]).decode() == CLOUD_CONF
    assert "stringData" not in secret
    assert set(MANIFESTS) <= set(record)
    daemonset = record["DaemonSet/kube-system/openstack-cloud-controller-manager"]["spec"]["template"]["spec"]
    assert daemonset["volumes"][-1] == {"name": "cloud-config-volume", "secret": {"secretName": "cloud-config"}}
    cinder = record["StorageClass//cinder"]
    assert cinder["provisioner"] == "cinder.csi.openstack.org"
    assert cinder["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"] == "true"
    hostpath = record["StorageClass//microk8s-hostpath"]["metadata"]["annotations"]
    assert hostpath["storageclass.kubernetes.io/is-default-class"] == "false"
    # The providerIDs were set before anything of the cloud controller manager was applied.
    order = [line.split()[:2] for line in calls(cluster, "kubectl") if line.split()[1] in ("patch", "apply")]
    assert order.index(["kubectl", "apply"]) > max(i for i, call in enumerate(order) if call[1] == "patch")

    # The secret's state shows checksums, never the secret.
    changes = states["microk8s-cloud-provider-microk8s-cloud-config-secret"]["changes"]
    assert list(changes) == ["cloud.conf sha256"] and changes["cloud.conf sha256"]["old"] is None

    # Again: nothing changes, nothing is written.
    applied = calls(cluster, "kubectl", "apply", "-f", "-")
    patched = calls(cluster, "kubectl", "patch")
    again, printed_again = deploy(cluster)
    assert again == {}
    assert [line for line in calls(cluster, "kubectl", "apply", "-f", "-") if "--dry-run=server" not in line] == [
        line for line in applied if "--dry-run=server" not in line
    ]
    assert calls(cluster, "kubectl", "patch") == patched
    assert objects(cluster) == record
    assert kubelet_flags(cluster) == {
        MASTER: (["--cloud-provider=external"], 2),
        VOTER: (["--cloud-provider=external"], 0),
        WORKER: (["--cloud-provider=external"], 0),
    }

    # The credential is in no output, no log and no command line; nor its base64 nor cloud.conf's.
    encoded = base64.b64encode(CLOUD_CONF.encode()).decode()
    # Every log of the Salt master and minions, whole (cluster.logs() keeps their tails only), at debug.
    files = [*cluster.root.rglob("*.log"), *cluster.root.rglob("*.out")]
    assert any(path.name == "minion.log" for path in files)
    logs = "".join(path.read_text(errors="replace") for path in files)
    assert "[DEBUG   ]" in logs
    for text in (printed, printed_again, logs):
        assert "sup3r" not in text and encoded not in text


# The workloads whose pods mount the cloud-config Secret (their manifests' secretName: cloud-config).
READERS = [
    "DaemonSet/kube-system/openstack-cloud-controller-manager",
    "Deployment/kube-system/csi-cinder-controllerplugin",
    "DaemonSet/kube-system/csi-cinder-nodeplugin",
]


def test_a_rotated_credential_rolls_the_pods_that_read_cloud_conf_and_changes_nothing_else(cluster):
    # Both read cloud.conf only when they start: with a new application credential in the Secret
    # and the old pods running on, LoadBalancer Services and volume attachments fail with 401.
    # Deployed already when the test before ran: an orch.deploy less.
    record = cluster.fakes[MASTER].home / "fake" / "objects.json"
    if not record.exists() or "Secret/kube-system/cloud-config" not in objects(cluster):
        deploy(cluster)
    before = objects(cluster)
    rotated = json.loads(json.dumps(CLOUD))
    rotated["openstack"]["cloud"]["application_credential_secret"] = "r0tated-secret"
    (cluster.pillar_root / "_cloud.sls").write_text(f"#!yaml\n{yaml.safe_dump(rotated)}")
    try:
        states, printed = deploy(cluster)
    finally:
        (cluster.pillar_root / "_cloud.sls").write_text(f"#!yaml\n{yaml.safe_dump(CLOUD)}")
    after = objects(cluster)
    assert sorted(k for k in after if after[k] != before.get(k)) == sorted(
        ["Secret/kube-system/cloud-config", *READERS]
    )
    conf = base64.b64decode(after["Secret/kube-system/cloud-config"]["data"]["cloud.conf"]).decode()
    assert 'application-credential-secret = "r0tated-secret"' in conf
    checksum = hashlib.sha256(conf.encode()).hexdigest()
    for ref in READERS:
        # A new pod template (its generation one more): the controller replaces every pod.
        template = after[ref]["spec"]["template"]["metadata"]["annotations"]
        assert (ref, template["kube-on-os/cloud-conf-sha256"]) == (ref, checksum)
        assert (ref, after[ref]["metadata"]["generation"]) == (ref, before[ref]["metadata"]["generation"] + 1)
    assert "r0tated" not in printed
    assert set(states["microk8s-cloud-provider-microk8s-manifests-applied"]["changes"]) == {
        "daemonset.apps/openstack-cloud-controller-manager",
        "deployment.apps/csi-cinder-controllerplugin",
        "daemonset.apps/csi-cinder-nodeplugin",
    }


def test_a_tainted_default_pool_a_private_ca_and_an_ovn_provider_reach_the_cloud_integration(cluster):
    # kube_node_taints on the default pool (all three nodes, the control plane with them),
    # openstack_ca_certificate, and lb_provider and lb_method for an OVN-only Octavia.
    tainted = pillar()
    for node in tainted["microk8s"]["nodes"]:
        node["taints"] = DEFAULT_POOL_TAINTS
    private = json.loads(json.dumps(CLOUD))
    private["openstack"]["cloud"].update(ca_certificate=CA, lb_provider="ovn", lb_method="SOURCE_IP_PORT")
    (cluster.pillar_root / "_cloud.sls").write_text(f"#!yaml\n{yaml.safe_dump(private)}")
    try:
        deploy(cluster, tainted)
    finally:
        (cluster.pillar_root / "_cloud.sls").write_text(f"#!yaml\n{yaml.safe_dump(CLOUD)}")
    record = objects(cluster)
    secret = record["Secret/kube-system/cloud-config"]
    conf = base64.b64decode(secret["data"]["cloud.conf"]).decode()
    assert base64.b64decode(secret["data"]["ca.crt"]).decode() == CA
    assert 'auth-url = "https://keystone.example:5000/v3"\nca-file = "/etc/config/ca.crt"\n' in conf
    assert (
        'member-subnet-id = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"\nlb-provider = "ovn"\nlb-method = "SOURCE_IP_PORT"\n'
        in conf
    )
    # The pods that read the Secret hold its checksum, which covers the CA (not cloud.conf's alone).
    checksum = secret["metadata"]["annotations"]["kube-on-os/cloud-conf-sha256"]
    assert checksum != hashlib.sha256(conf.encode()).hexdigest()
    for ref in READERS:
        assert (ref, record[ref]["spec"]["template"]["metadata"]["annotations"]["kube-on-os/cloud-conf-sha256"]) == (
            ref,
            checksum,
        )
    # The labels step tainted every node; the cloud controller manager still runs on the control plane.
    nodes = json.loads(cluster.fakes[MASTER].run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert {node["metadata"]["name"]: len(node["spec"].get("taints") or []) for node in nodes} == {
        "k8s-master": 3,
        "k8s-worker-0": 3,
        "k8s-worker-1": 3,
    }
    ccm = record["DaemonSet/kube-system/openstack-cloud-controller-manager"]["spec"]["template"]["spec"]
    assert sorted(node["metadata"]["name"] for node in nodes if admits(ccm, node)) == ["k8s-master", "k8s-worker-0"]
    controller = record["Deployment/kube-system/csi-cinder-controllerplugin"]["spec"]["template"]["spec"]
    assert all(admits(controller, node) for node in nodes)


def test_a_rebuilt_node_that_stays_not_ready_is_initialized_though_the_deploy_stops_at_the_cluster_check(cluster):
    # The worker's machine rebuilt under its name: its old server deleted, a new one listed.
    # Deployed already when the tests before ran: an orch.deploy less.
    record = cluster.fakes[MASTER].home / "fake" / "objects.json"
    if not record.exists() or "Secret/kube-system/cloud-config" not in objects(cluster):
        deploy(cluster)
    rebuilt = "d15ea5e0-7a1e-4b2c-9d3e-4f5a6b7c8d9e"
    listing(cluster, [server(MASTER), server(VOTER), server(WORKER, rebuilt)])
    fake = cluster.fakes[WORKER]
    shutil.rmtree(fake.home)
    fake.run("status", "--format", "yaml")  # the snap's install: a new $SNAP_DATA
    shutil.rmtree(cluster.root / WORKER / "cache" / "kube-on-os", ignore_errors=True)
    # Its old Node is NotReady and names a server the cloud no longer has: the controller manager
    # deletes it (nodelifecycle MonitorNodes).
    assert "k8s-worker-1" not in node_objects(cluster)
    # The new kubelet will not turn Ready (its container network, say): the deploy stops at the
    # cluster check, after the join.
    (fake.home / "fake").mkdir(parents=True, exist_ok=True)
    (fake.home / "fake" / "faults.json").write_text(json.dumps({"not_ready": True}))
    data = pillar()
    next(node for node in data["microk8s"]["nodes"] if node["id"] == WORKER)["instance_id"] = rebuilt
    code, steps, printed = orchestrate(cluster, data)
    assert code != 0, printed[-8000:]
    check = next(value for key, value in steps.items() if "orch-deploy-salt-function-cluster-check" in key)
    assert check["result"] is False, check
    # Yet the node has its providerID, so the controller manager found its server and
    # initialized it: no uninitialized taint keeps it unschedulable until a deploy completes.
    item = node_objects(cluster)["k8s-worker-1"]
    assert item["spec"] == {"providerID": f"openstack:///{rebuilt}"}
    assert cloud_labels(item) == {
        "topology.kubernetes.io/zone": "az-3",
        "topology.kubernetes.io/region": "RegionOne",
        "node.kubernetes.io/instance-type": "m1.medium",
    }
    # Ready again, the next deploy completes and initializes nothing more.
    (fake.home / "fake" / "faults.json").unlink()
    states, _ = deploy(cluster, data)
    assert states.get("microk8s-cloud-provider-microk8s-nodes-initialized", {}).get("changes", {}) == {}
