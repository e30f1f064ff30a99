"""
Every custom state (salt/_states/) honours ``test=True``: on a node where it has something to do,
test mode reports what it would change and changes nothing. The states run over the real
execution module and the fake microk8s, whose files and cluster database hold what microk8s would
hold, so "nothing" is measured on the fake's effects, not on which functions were called. A state
with no case here fails the first test: Salt's preview (``state.apply test=True``) must never act.
"""

from __future__ import annotations

import ast
import hashlib
import json
from pathlib import Path

import pytest
from harness.layout import LAB
from harness.microk8s_node import FakeMicrok8s
from harness.salt_minion import ROOT, load_module
from microk8s_support import MASTER, pillar_get
from test_cloud_module import CLOUD, MANIFESTS, master_of, pillar_of
from test_file_transfer import minion_with, transfer

STATES = ROOT / "salt" / "_states"


def state_functions(path: Path) -> set[str]:
    """The public functions of a state module, as Salt loads them (``__virtual__`` aside)."""
    tree = ast.parse(path.read_text())
    return {node.name for node in tree.body if isinstance(node, ast.FunctionDef) and not node.name.startswith("_")}


def node_status_aside(path: Path) -> bytes:
    """
    A file's content, and for a cluster database (``.dqlite/<cluster>.json``) without what the API
    server keeps of each Node's status as its kubelet and the node lifecycle controller post it
    (node_objects.observe_ready: its Ready condition's time, the last boot id). They post it
    whether anyone reads or not; the fake records it at the first read that finds it changed.
    """
    if path.parent.name != ".dqlite" or path.suffix != ".json":
        return path.read_bytes()
    database = json.loads(path.read_text())
    for node in database.get("nodes", []):
        node.pop("ready_condition", None)
        node.pop("boot_id", None)
    return json.dumps(database, sort_keys=True).encode()


def files_under(root: Path) -> dict[str, str]:
    """
    Every file under ``root`` by path, with its content's digest; the fake's call log aside (reads
    write it too), and the Nodes' status in its databases (node_status_aside).
    """
    return {
        str(path.relative_to(root)): hashlib.sha256(node_status_aside(path)).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and path.name != "calls.log"
    }


def stopped(cluster, master) -> None:
    cluster.master.run("stop")


def a_new_node(cluster, master) -> str:
    """
    The module on a fourth node, which has not joined yet, with the token the master issued it
    published in the mine; its minion id.
    """
    new = LAB.worker(2)
    settings = pillar_of(CLOUD)
    settings["microk8s"]["nodes"].append({"id": new.fqdn, "address": new.address})
    master.__salt__["pillar.get"] = pillar_get(settings)
    master.issue_join_tokens([new.fqdn])
    cluster.reports = {MASTER: master.join_tokens()}
    node = FakeMicrok8s(cluster.cachedir.parent / "new", cluster.cachedir.parent / "cluster", new.address, new.name)
    cluster.as_master(minion_id=new.fqdn, pillar=settings, node=node)
    return new.fqdn


def labels_to_set(cluster, master) -> None:
    settings = pillar_of(CLOUD)
    settings["microk8s"]["nodes"][1]["labels"] = {"kube-on-os/pool": "web"}
    master.__salt__["pillar.get"] = pillar_get(settings)


# Each microk8s state with its arguments, and what gives it something to do on the fake cluster of
# master_of (three nodes joined at 1.28, the cloud pillar, no label, providerID, cloud-config Secret
# or manifest applied yet), beyond that cluster.
MICROK8S_CASES = {
    "running": ((), {}, stopped),
    "addon_enabled": (("dns",), {}, None),
    "addon_disabled": (("ha-cluster",), {}, None),
    "extra_sans": (("microk8s", ["203.0.113.7"]), {}, None),
    "kubelet_external_cloud_provider": (("microk8s",), {"external": True}, None),
    "apiserver_advertise_address": (("microk8s", "10.1.0.99"), {}, None),
    "channel_tracked": (("1.29/stable",), {}, None),
    "refreshes_held": ((), {}, None),
    "join_tokens_published": (("microk8s:join-tokens",), {}, None),
    "cluster_joined": (
        ("microk8s",),
        {"master": MASTER, "master_address": LAB.master.address, "worker": True},
        a_new_node,
    ),
    "nodes_labelled": (("microk8s:nodes",), {}, labels_to_set),
    "provider_ids_set": (("microk8s:nodes",), {}, None),
    "nodes_initialized": (("microk8s:nodes",), {"timeout": 0.5, "interval": 0.1}, None),
    "cloud_config_secret": (("microk8s:cloud-config",), {}, None),
    "manifests_applied": (("microk8s:cloud-provider",), {"sources": MANIFESTS}, None),
    "default_storage_class": (("csi-cinder-sc-delete",), {}, None),
}


def test_every_custom_state_has_a_test_mode_case():
    assert state_functions(STATES / "microk8s.py") == set(MICROK8S_CASES)
    assert state_functions(STATES / "file_transfer.py") == {"transferred"}
    assert {path.name for path in STATES.glob("*.py")} == {"microk8s.py", "file_transfer.py"}


def run_case(microk8s, tmp_path: Path, function: str, test: bool) -> tuple[dict, list[str]]:
    """Runs ``function``'s case on a fresh fake cluster; its return and the files it changed."""
    cluster, master = master_of(microk8s, tmp_path)
    args, kwargs, prepare = MICROK8S_CASES[function]
    minion_id = (prepare and prepare(cluster, master)) or MASTER
    states = load_module("microk8s_states_test_mode", STATES / "microk8s.py")
    # The states call the execution module as Salt's loader gives it to them.
    states.__salt__ = {
        **master.__salt__,
        **{f"microk8s.{name}": getattr(master, name) for name in dir(master) if not name.startswith("_")},
    }
    states.__opts__ = {"test": test, "id": minion_id}
    before = files_under(tmp_path)
    result = getattr(states, function)(*args, **kwargs)
    after = files_under(tmp_path)
    return result, sorted(path for path in before.keys() | after.keys() if before.get(path) != after.get(path))


@pytest.mark.parametrize("function", sorted(MICROK8S_CASES))
def test_a_microk8s_state_in_test_mode_predicts_and_changes_nothing(microk8s, tmp_path, function):
    result, changed = run_case(microk8s, tmp_path, function, test=True)
    assert (result["result"], bool(result["changes"]), changed) == (None, True, []), result


@pytest.mark.parametrize("function", sorted(MICROK8S_CASES))
def test_the_same_case_outside_test_mode_acts_where_the_files_show_it(microk8s, tmp_path, function):
    """The check above could see each state act: run for real, the same case changes the fake's files."""
    _result, changed = run_case(microk8s, tmp_path, function, test=False)
    assert changed != []


def test_file_transfer_in_test_mode_predicts_and_changes_nothing(tmp_path):
    target = tmp_path / "etc" / "ssl" / "corp-ca.crt"
    minion = minion_with(tmp_path, {"file_transfer": {str(target): {"source": "corp-ca.crt", "hosts": ["k8s-*"]}}})
    before = files_under(tmp_path / "etc")
    predicted = transfer(minion, "test=True")
    assert (predicted["result"], list(predicted["changes"])) == (None, [str(target)])
    assert files_under(tmp_path / "etc") == before
    # Run for real, it writes there: the check above could see it act.
    assert transfer(minion)["result"] is True
    assert files_under(tmp_path / "etc") != before
