"""
The microk8s module's OpenStack cloud integration (salt/_modules/microk8s/_cloud.py): its pure
functions directly, and the public functions over the fake microk8s cluster of
microk8s_support.py, whose kubectl keeps objects and providerIDs (kube_objects.py,
node_objects.py).
"""

from __future__ import annotations

import base64
import hashlib
import json

import pytest
import yaml
from harness.layout import PRIVATE_CIDR
from harness.salt_minion import ROOT, load_module
from microk8s_support import CP_JOINER, MASTER, PILLAR, WORKER, joined_cluster, pillar_get
from salt.exceptions import CommandExecutionError

CLOUD = {
    "auth_url": "https://keystone.example:5000/v3",
    "region": "RegionOne",
    "application_credential_id": "0123456789abcdef0123456789abcdef",
    "application_credential_secret": 'not;a#real"secret\\',
    "floating_network_id": "5e0c7f7a-7a1e-4a49-9d3e-6c3b1e2f0a11",
    "subnet_id": "2b9d7c1e-0f3a-4c5b-8e6d-7a8b9c0d1e2f",
    "member_subnet_id": "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
    "load_balancer": True,
}
INSTANCES = {
    MASTER: "3f1c2a9e-5b7d-4e21-9a0c-1d2e3f4a5b6c",
    CP_JOINER: "8a7b6c5d-4e3f-4a1b-8c9d-0e1f2a3b4c5d",
    WORKER: "c0ffee00-1234-4abc-9def-0123456789ab",
}
MANIFESTS = [
    f"salt://microk8s/files/cloud-provider/{name}"
    for name in (
        "cloud-controller-manager-roles.yaml",
        "cloud-controller-manager-role-bindings.yaml",
        "openstack-cloud-controller-manager-ds.yaml",
        "csi-cinder-driver.yaml",
        "cinder-csi-controllerplugin-rbac.yaml",
        "cinder-csi-nodeplugin-rbac.yaml",
        "cinder-csi-controllerplugin.yaml",
        "cinder-csi-nodeplugin.yaml",
    )
]


@pytest.fixture
def cloud(microk8s):
    """The _cloud submodule of the freshly imported package."""
    return microk8s._sub("_cloud")


def pillar_of(cloud: dict | None = None, instances: dict | None = None) -> dict:
    nodes = [{**node, "instance_id": (instances or INSTANCES).get(node["id"])} for node in PILLAR["nodes"]]
    result = {"microk8s": {**PILLAR, "nodes": nodes}, "network": {"private_cidr": PRIVATE_CIDR}}
    if cloud is not None:
        result["openstack"] = {"cloud": cloud}
    return result


def master_of(microk8s, tmp_path, cloud: dict | None = CLOUD, instances: dict | None = None):
    """The fake cluster's master module, the pillar with ``cloud`` and the nodes' ``instances``."""
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master(pillar=pillar_of(cloud, instances))
    master.__salt__["cp.get_file_str"] = lambda url: (ROOT / "salt" / url.removeprefix("salt://")).read_text()
    return cluster, master


def getter(tree: dict):
    return {"pillar.get": pillar_get(tree)}


def test_cloud_conf_names_every_option_as_cpo_documents_it_with_every_value_quoted_for_gcfg(cloud):
    settings = cloud.settings(getter({"openstack": {"cloud": CLOUD}}))
    options = {"ignore_volume_az": True, "metadata_search_order": "configDrive,metadataService"}
    assert cloud.cloud_conf(settings, "10.1.0.0/16", options) == (
        "[Global]\n"
        'auth-url = "https://keystone.example:5000/v3"\n'
        'region = "RegionOne"\n'
        'application-credential-id = "0123456789abcdef0123456789abcdef"\n'
        'application-credential-secret = "not;a#real\\"secret\\\\"\n'
        "\n[Networking]\n"
        'address-sort-order = "10.1.0.0/16"\n'
        "\n[LoadBalancer]\n"
        "enabled = true\n"
        'floating-network-id = "5e0c7f7a-7a1e-4a49-9d3e-6c3b1e2f0a11"\n'
        'subnet-id = "2b9d7c1e-0f3a-4c5b-8e6d-7a8b9c0d1e2f"\n'
        'member-subnet-id = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"\n'
        "create-monitor = true\n"
        "\n[BlockStorage]\n"
        "ignore-volume-az = true\n"
        "\n[Metadata]\n"
        'search-order = "configDrive,metadataService"\n'
    )


def test_a_cloud_without_octavia_disables_load_balancers_and_names_no_network(cloud):
    settings = cloud.settings(getter({"openstack": {"cloud": {**CLOUD, "load_balancer": False}}}))
    conf = cloud.cloud_conf(settings)
    assert "[LoadBalancer]\nenabled = false\n\n[BlockStorage]" in conf
    assert "floating-network-id" not in conf and "[Networking]" not in conf
    # Without a search order, CPO's own default applies.
    assert "[Metadata]" not in conf


def test_no_cloud_in_the_pillar_is_no_cloud_integration(cloud):
    assert cloud.settings(getter({})) is None
    assert cloud.settings(getter({"openstack": {"cloud": {}}})) is None
    assert cloud.rendered(getter({})) is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"auth_url": None}, r"^pillar openstack:cloud:auth_url is missing$"),
        ({"application_credential_secret": ""}, r"^pillar openstack:cloud:application_credential_secret is missing$"),
        ({"region": 3}, r"^pillar openstack:cloud:region must be a string on one line: 3$"),
        ({"load_balancer": "yes"}, r"^pillar openstack:cloud:load_balancer must be true or false: 'yes'$"),
        # The secret's own value is never quoted.
        ({"application_credential_secret": "two\nlines"}, r"secret must be a string on one line$"),
    ],
)
def test_a_bad_cloud_pillar_is_an_error_naming_the_key(cloud, change, message):
    with pytest.raises(CommandExecutionError, match=message):
        cloud.settings(getter({"openstack": {"cloud": {**CLOUD, **change}}}))


def test_the_secret_carries_cloud_conf_base64_encoded_and_its_checksum(cloud):
    manifest = json.loads(cloud.secret_manifest("[Global]\n"))
    assert manifest["metadata"] == {
        "name": "cloud-config",
        "namespace": "kube-system",
        "annotations": {"kube-on-os/cloud-conf-sha256": hashlib.sha256(b"[Global]\n").hexdigest()},
    }
    assert base64.b64decode(manifest["data"]["cloud.conf"]) == b"[Global]\n"


def test_kubectl_applys_lines_are_parsed_and_an_unknown_one_is_an_error(cloud):
    assert cloud.parse_applied(
        "secret/cloud-config created\n"
        "daemonset.apps/openstack-cloud-controller-manager configured (server dry run)\n"
        "clusterrole.rbac.authorization.k8s.io/system:cloud-node-controller unchanged\n"
    ) == {
        "secret/cloud-config": "created",
        "daemonset.apps/openstack-cloud-controller-manager": "configured",
        "clusterrole.rbac.authorization.k8s.io/system:cloud-node-controller": "unchanged",
    }
    with pytest.raises(CommandExecutionError, match="kubectl apply printed a line it never prints"):
        cloud.parse_applied("Warning: resource is missing the annotation\n")


def test_a_provider_id_is_openstack_and_the_server_uuid(cloud):
    assert cloud.provider_id(INSTANCES[MASTER].upper()) == f"openstack:///{INSTANCES[MASTER]}"
    with pytest.raises(CommandExecutionError, match=r"^instance_id 'k8s-master' is not a Nova server UUID$"):
        cloud.provider_id("k8s-master")


def test_provider_ids_are_planned_set_once_and_then_left_alone(microk8s, tmp_path):
    cluster, master = master_of(microk8s, tmp_path)
    plan = master.provider_id_plan()
    assert plan == {
        node: {
            "node": node.split(".")[0],
            "old": None,
            "new": f"openstack:///{INSTANCES[node]}",
            "changed": True,
            "stale": False,
        }
        for node in (MASTER, CP_JOINER, WORKER)
    }
    for entry in plan.values():
        assert master.set_provider_id(entry["node"], entry["new"]) == f"node/{entry['node']} patched"
    assert [entry["changed"] for entry in master.provider_id_plan().values()] == [False] * 3
    stored = {node["name"]: node.get("providerID") for node in cluster.master.database()["nodes"]}
    assert stored == {entry["node"]: entry["new"] for entry in plan.values()}


def test_a_node_with_another_provider_id_is_stale_and_no_instance_id_an_error_naming_it(microk8s, tmp_path):
    _, master = master_of(microk8s, tmp_path)
    master.set_provider_id("k8s-worker-1", "openstack:///00000000-0000-4000-8000-000000000000")
    # A machine rebuilt under the node's name: reported, left as it is.
    assert master.provider_id_plan()[WORKER] == {
        "node": "k8s-worker-1",
        "old": "openstack:///00000000-0000-4000-8000-000000000000",
        "new": f"openstack:///{INSTANCES[WORKER]}",
        "changed": False,
        "stale": True,
    }
    # The API server refuses the change itself, too.
    with pytest.raises(CommandExecutionError, match=r"may not change providerID except from \\?\"\\?\" to valid"):
        master.set_provider_id("k8s-worker-1", f"openstack:///{INSTANCES[WORKER]}")
    _, master = master_of(microk8s, tmp_path / "again", instances={MASTER: INSTANCES[MASTER]})
    with pytest.raises(CommandExecutionError, match=rf"^pillar microk8s:nodes entry {CP_JOINER} has no instance_id$"):
        master.provider_id_plan()


def test_the_secret_is_applied_on_stdin_only_then_left_alone_and_reported_by_checksum(microk8s, tmp_path):
    cluster, master = master_of(microk8s, tmp_path)
    conf = master._sub("_cloud").rendered(master.__salt__)
    sha = hashlib.sha256(conf.encode()).hexdigest()
    assert master.cloud_config_plan() == {
        "secret": "kube-system/cloud-config",
        "old": None,
        "new": sha,
        "changed": True,
    }
    applied = master.cloud_config_apply()
    assert applied == {
        "secret": "kube-system/cloud-config",
        "old": None,
        "new": sha,
        "changed": True,
        "operation": "created",
    }
    assert master.cloud_config_plan()["changed"] is False
    secret = cluster.master.database()["objects"]["Secret/kube-system/cloud-config"]
    assert base64.b64decode(secret["data"]["cloud.conf"]).decode() == conf
    # The credential went on stdin (in cloud.conf, base64-encoded), on no command line Salt could log.
    assert any(base64.b64encode(conf.encode()).decode() in text for text in cluster.master.stdins)
    assert not any("real" in line for line in cluster.master.logged)
    assert "kubectl apply" not in " ".join(cluster.master.logged)
    # A changed credential is a new checksum.
    master.__salt__["pillar.get"] = getter(pillar_of({**CLOUD, "application_credential_secret": "other"}))["pillar.get"]
    assert master.cloud_config_plan()["old"] == sha
    assert master.cloud_config_apply()["operation"] == "configured"


def test_a_failing_apply_of_the_secret_hides_it_from_the_error(microk8s, tmp_path):
    _, master = master_of(microk8s, tmp_path)
    run_all = master.__salt__["cmd.run_all"]

    def refusing(cmd, **kwargs):
        if "apply" in cmd and "--dry-run=server" not in cmd:
            secret = CLOUD["application_credential_secret"]
            return {"retcode": 1, "stdout": "", "stderr": f"error: cannot take {secret}"}
        return run_all(cmd, **kwargs)

    master.__salt__["cmd.run_all"] = refusing
    with pytest.raises(CommandExecutionError) as raised:
        master.cloud_config_apply()
    assert "real" not in str(raised.value) and "<hidden>" in str(raised.value)


def test_the_manifests_are_dry_run_applied_and_then_unchanged(microk8s, tmp_path):
    cluster, master = master_of(microk8s, tmp_path)
    planned = master.manifests_apply(MANIFESTS, True)
    assert planned["daemonset.apps/openstack-cloud-controller-manager"] == "created"
    assert planned["csidriver.storage.k8s.io/cinder.csi.openstack.org"] == "created"
    assert set(planned.values()) == {"created"}
    assert "objects" not in cluster.master.database() or cluster.master.database()["objects"] == {}
    assert master.manifests_apply(MANIFESTS) == planned
    assert set(master.manifests_apply(MANIFESTS, True).values()) == {"unchanged"}
    assert len(cluster.master.database()["objects"]) == len(planned)


def test_cinder_becomes_the_one_default_storage_class(microk8s, tmp_path):
    cluster, master = master_of(microk8s, tmp_path)
    assert cluster.master.run("enable", "hostpath-storage").returncode == 0
    plan = master.storage_class_plan("cinder")
    assert plan == {
        "apply": {"storageclass.storage.k8s.io/cinder": "created"},
        "undefault": ["microk8s-hostpath"],
        "changed": True,
    }
    assert master.default_storage_class("cinder")["apply"] == {"storageclass.storage.k8s.io/cinder": "created"}
    assert master.storage_class_plan("cinder") == {
        "apply": {"storageclass.storage.k8s.io/cinder": "unchanged"},
        "undefault": [],
        "changed": False,
    }
    classes = cluster.master.database()["objects"]
    default = "storageclass.kubernetes.io/is-default-class"
    assert classes["StorageClass//cinder"]["metadata"]["annotations"][default] == "true"
    assert classes["StorageClass//microk8s-hostpath"]["metadata"]["annotations"][default] == "false"


def test_without_a_cloud_in_the_pillar_there_is_no_secret_to_plan(microk8s, tmp_path):
    _, master = master_of(microk8s, tmp_path, cloud=None)
    with pytest.raises(CommandExecutionError, match=r"^pillar openstack:cloud is absent"):
        master.cloud_config_plan()


# The default pool's taints (kube_node_taints), the control plane's among them: all three of the
# fake's nodes are in the default pool. One with a value, one without, one that only scores.
DEFAULT_POOL_TAINTS = ["dedicated=infra:NoSchedule", "example.com/maintenance:NoExecute", "spare=yes:PreferNoSchedule"]
# Every manifest Salt applies, in its order (salt/microk8s/defaults.yaml).
CLOUD_PROVIDER = yaml.safe_load((ROOT / "salt" / "microk8s" / "defaults.yaml").read_text())["microk8s"][
    "cloud_provider"
]
EVERY_MANIFEST = [f"salt://microk8s/files/cloud-provider/{name}" for name in CLOUD_PROVIDER["manifests"]]


def tolerates(toleration: dict, taint: dict) -> bool:
    """k8s.io/api core/v1 toleration.go, ToleratesTaint (Equal and Exists; the manifests use no other operator)."""
    if toleration.get("effect") and toleration["effect"] != taint["effect"]:
        return False
    if toleration.get("key") and toleration["key"] != taint["key"]:
        return False
    operator = toleration.get("operator") or "Equal"
    if operator == "Equal":
        return (toleration.get("value") or "") == (taint.get("value") or "")
    return operator == "Exists"


def admits(pod: dict, node: dict) -> bool:
    """
    Whether the scheduler's filters on the pod and the node alone let pod spec ``pod`` run on
    ``node``: NodeAffinity's required terms (the manifests' match expressions are all Exists) and
    TaintToleration (kubernetes pkg/scheduler/framework/plugins/tainttoleration: every NoSchedule
    and NoExecute taint tolerated; PreferNoSchedule only scores).
    """
    labels = node["metadata"].get("labels") or {}
    required = ((pod.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    if required and not any(
        all(
            expression["operator"] == "Exists" and expression["key"] in labels
            for expression in term["matchExpressions"]
        )
        for term in required["nodeSelectorTerms"]
    ):
        return False
    taints = (node.get("spec") or {}).get("taints") or []
    return all(
        any(tolerates(toleration, taint) for toleration in pod.get("tolerations") or [])
        for taint in taints
        if taint["effect"] in ("NoSchedule", "NoExecute")
    )


def test_the_cloud_integration_tolerates_the_default_pools_taints_on_the_control_plane(microk8s, tmp_path):
    # kube_node_taints taints the default pool, the control plane with it: the cloud controller
    # manager, which runs on control-plane nodes only, must still run there, and the Cinder
    # controller must find a node when no other pool has an untainted one.
    pillar = pillar_of(CLOUD)
    for node in pillar["microk8s"]["nodes"]:
        node["taints"] = DEFAULT_POOL_TAINTS
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master(pillar=pillar)
    master.__salt__["cp.get_file_str"] = lambda url: (ROOT / "salt" / url.removeprefix("salt://")).read_text()
    for node in pillar["microk8s"]["nodes"]:
        assert master.label_node(node["address"], {}, node["taints"])["changed"] is True
    master.manifests_apply(EVERY_MANIFEST)

    nodes = json.loads(cluster.master.run("kubectl", "get", "nodes", "-o", "json").stdout)["items"]
    assert [len(node["spec"]["taints"]) for node in nodes] == [3, 3, 3]
    objects = cluster.master.database()["objects"]
    pods = {
        ref: item["spec"]["template"]["spec"]
        for ref, item in objects.items()
        if ref.split("/")[0] in ("DaemonSet", "Deployment")
    }
    admitted = {
        ref: sorted(node["metadata"]["name"] for node in nodes if admits(pod, node)) for ref, pod in pods.items()
    }
    assert admitted == {
        # Where it ran before the taints: the control plane (node.kubernetes.io/microk8s-controlplane).
        "DaemonSet/kube-system/openstack-cloud-controller-manager": ["k8s-master", "k8s-worker-0"],
        # Upstream's tolerates every taint (operator Exists): every node.
        "DaemonSet/kube-system/csi-cinder-nodeplugin": ["k8s-master", "k8s-worker-0", "k8s-worker-1"],
        # No node selector: anywhere the control plane's taints are all there is.
        "Deployment/kube-system/csi-cinder-controllerplugin": ["k8s-master", "k8s-worker-0", "k8s-worker-1"],
        "Deployment/kube-system/snapshot-controller": ["k8s-master", "k8s-worker-0", "k8s-worker-1"],
    }
    # Exactly those taints: key, value and effect, Equal with a value and Exists without.
    tolerations = pods["DaemonSet/kube-system/openstack-cloud-controller-manager"]["tolerations"]
    assert tolerations[-3:] == [
        {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"},
        {"key": "example.com/maintenance", "operator": "Exists", "effect": "NoExecute"},
        {"key": "spare", "operator": "Equal", "value": "yes", "effect": "PreferNoSchedule"},
    ]
    assert pods["DaemonSet/kube-system/csi-cinder-nodeplugin"]["tolerations"] == [{"operator": "Exists"}]


def test_without_taints_the_manifests_are_applied_as_shipped(microk8s, tmp_path):
    # An existing cluster without kube_node_taints: no pod template changes, so nothing rolls.
    cluster, master = master_of(microk8s, tmp_path)
    master.manifests_apply(EVERY_MANIFEST)
    objects = cluster.master.database()["objects"]
    for name in CLOUD_PROVIDER["manifests"]:
        for document in yaml.safe_load_all(
            (ROOT / "salt" / "microk8s" / "files" / "cloud-provider" / name).read_text()
        ):
            if document and document["kind"] in ("DaemonSet", "Deployment"):
                ref = f"{document['kind']}/{document['metadata']['namespace']}/{document['metadata']['name']}"
                assert (ref, objects[ref]["spec"]["template"]["spec"]) == (ref, document["spec"]["template"]["spec"])


# A private CA's certificate (a self-signed P-256 one, made for the tests with openssl req -x509).
CA = (ROOT / "__tests__" / "fixtures" / "private-ca.pem").read_text()


def test_a_private_ca_is_the_ca_file_in_global_and_a_second_key_of_the_secret(cloud):
    settings = cloud.settings(getter({"openstack": {"cloud": {**CLOUD, "ca_certificate": CA}}}))
    conf = cloud.cloud_conf(settings)
    assert conf.startswith(
        "[Global]\n"
        'auth-url = "https://keystone.example:5000/v3"\n'
        'ca-file = "/etc/config/ca.crt"\n'
        'region = "RegionOne"\n'
    )
    manifest = json.loads(cloud.secret_manifest(conf, settings["ca_certificate"]))
    assert sorted(manifest["data"]) == ["ca.crt", "cloud.conf"]
    assert base64.b64decode(manifest["data"]["ca.crt"]).decode() == CA
    # The checksum covers the CA too: a new CA alone rolls the pods; without one it is cloud.conf's own.
    annotated = manifest["metadata"]["annotations"]["kube-on-os/cloud-conf-sha256"]
    assert (
        annotated
        == cloud.checksum(conf, CA)
        != cloud.checksum(conf, CA.replace("MIIB", "MIIC"))
        != cloud.checksum(conf)
    )
    assert cloud.checksum(conf) == hashlib.sha256(conf.encode()).hexdigest()
    without = json.loads(cloud.secret_manifest(conf))
    assert list(without["data"]) == ["cloud.conf"]


def test_a_load_balancer_provider_and_method_go_into_the_load_balancer_section(cloud):
    ovn = {**CLOUD, "lb_provider": "ovn", "lb_method": "SOURCE_IP_PORT"}
    conf = cloud.cloud_conf(cloud.settings(getter({"openstack": {"cloud": ovn}})))
    assert (
        "\n[LoadBalancer]\n"
        "enabled = true\n"
        'floating-network-id = "5e0c7f7a-7a1e-4a49-9d3e-6c3b1e2f0a11"\n'
        'subnet-id = "2b9d7c1e-0f3a-4c5b-8e6d-7a8b9c0d1e2f"\n'
        'member-subnet-id = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a"\n'
        'lb-provider = "ovn"\n'
        'lb-method = "SOURCE_IP_PORT"\n'
        "create-monitor = true\n"
    ) in conf
    # Empty, as Terraform writes them unset: cloud.conf as before, so its checksum rolls nothing.
    empty = {**CLOUD, "lb_provider": "", "lb_method": "", "ca_certificate": ""}
    assert cloud.cloud_conf(cloud.settings(getter({"openstack": {"cloud": empty}}))) == cloud.cloud_conf(
        cloud.settings(getter({"openstack": {"cloud": CLOUD}}))
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("not a certificate", r"^pillar openstack:cloud:ca_certificate must be PEM certificates"),
        # A private key pasted by mistake: never quoted.
        (
            "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n",
            r"\(-----BEGIN CERTIFICATE-----",
        ),
        (3, r"^pillar openstack:cloud:ca_certificate must be PEM certificates"),
    ],
    ids=["text", "a private key", "a number"],
)
def test_a_ca_that_is_no_pem_certificate_is_an_error_naming_the_key_never_the_value(cloud, value, message):
    with pytest.raises(CommandExecutionError, match=message) as raised:
        cloud.settings(getter({"openstack": {"cloud": {**CLOUD, "ca_certificate": value}}}))
    assert "MIGHAgEA" not in str(raised.value) and "not a certificate" not in str(raised.value)


def test_the_secret_with_a_private_ca_is_applied_and_a_new_ca_alone_changes_it(microk8s, tmp_path):
    cluster, master = master_of(microk8s, tmp_path, cloud={**CLOUD, "ca_certificate": CA})
    assert master.cloud_config_apply()["operation"] == "created"
    secret = cluster.master.database()["objects"]["Secret/kube-system/cloud-config"]
    assert base64.b64decode(secret["data"]["ca.crt"]).decode() == CA
    assert 'ca-file = "/etc/config/ca.crt"' in base64.b64decode(secret["data"]["cloud.conf"]).decode()
    assert master.cloud_config_plan()["changed"] is False
    other = CA.replace("MIIB", "MIIC")
    master.__salt__["pillar.get"] = getter(pillar_of({**CLOUD, "ca_certificate": other}))["pillar.get"]
    assert master.cloud_config_plan()["changed"] is True
    assert master.cloud_config_apply()["operation"] == "configured"
    secret = cluster.master.database()["objects"]["Secret/kube-system/cloud-config"]
    assert base64.b64decode(secret["data"]["ca.crt"]).decode() == other


def test_nodes_initialized_fails_naming_the_node_and_takes_its_taint_back_when_the_controller_does_not_come(
    microk8s, tmp_path
):
    """The state microk8s.nodes_initialized over this module, against the fakes' cloud controller manager."""
    cluster, master = master_of(microk8s, tmp_path)
    for entry in master.provider_id_plan().values():
        master.set_provider_id(entry["node"], entry["new"])
    states = load_module("microk8s_states_initialized", ROOT / "salt" / "_states" / "microk8s.py")
    states.__salt__ = {
        f"microk8s.{name}": getattr(master, name)
        for name in ("initialization_plan", "wait_initialized", "mark_uninitialized")
    }
    states.__opts__ = {"test": False}
    everyone = (MASTER, CP_JOINER, WORKER)
    # These kubelets never ran with --cloud-provider=external: no node was ever initialized.
    assert {node: plan["state"] for node, plan in master.initialization_plan().items()} == dict.fromkeys(
        everyone, "never"
    )
    states.__opts__ = {"test": True}
    predicted = states.nodes_initialized("microk8s:nodes")
    assert (predicted["result"], sorted(predicted["changes"])) == (None, sorted(everyone))
    assert not any("taints" in node for node in cluster.master.database()["nodes"])
    states.__opts__ = {"test": False}

    # No controller manager runs: the state waits, fails naming every node, and leaves no taint.
    failed = states.nodes_initialized("microk8s:nodes", timeout=0.5, interval=0.1)
    assert (failed["result"], failed["changes"]) == (False, {})
    assert failed["comment"] == (
        f"the cloud controller manager did not initialize {', '.join(everyone)} within 0.5 s "
        "(microk8s kubectl -n kube-system logs daemonset/openstack-cloud-controller-manager says why;"
        f" the taint this state added is removed again from {', '.join(everyone)})"
    )
    assert not any(node.get("taints") for node in cluster.master.database()["nodes"])

    # Once it runs and the cloud lists the servers, the state has it initialize every node.
    listing = tmp_path / "cluster" / ".nova" / "servers.json"
    listing.parent.mkdir(parents=True, exist_ok=True)
    servers = [
        {
            "id": INSTANCES[node],
            "name": node,
            "status": "ACTIVE",
            "OS-EXT-AZ:availability_zone": "nova",
            "flavor": {"original_name": "m1.large"},
        }
        for node in everyone
    ]
    listing.write_text(json.dumps(servers))
    master.cloud_config_apply()
    master.manifests_apply(MANIFESTS)
    done = states.nodes_initialized("microk8s:nodes", timeout=5, interval=0.1)
    labels = (
        "topology.kubernetes.io/zone=nova topology.kubernetes.io/region=RegionOne "
        "node.kubernetes.io/instance-type=m1.large"
    )
    assert done == {
        "name": "microk8s:nodes",
        "result": True,
        "changes": {node: {"old": "not initialized", "new": labels} for node in everyone},
        "comment": f"the cloud controller manager initialized {', '.join(everyone)}",
    }
    again = states.nodes_initialized("microk8s:nodes")
    assert (again["result"], again["changes"], again["comment"]) == (
        True,
        {},
        "the cloud controller manager initialized all 3 nodes",
    )
