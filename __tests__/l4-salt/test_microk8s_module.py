"""
The microk8s execution module as one package (salt/_modules/microk8s/__init__.py): its
__virtual__, the real Salt loader loading it with its submodules, and the names and signatures of
its public functions, which the pillar's mine function, the reactor, the states, the
orchestrations and the provisioners call by name.

Each submodule's own tests are in test_microk8s_<submodule>.py (test_cloud_module.py for _cloud):
unit tests with __salt__/__opts__ patched over real-shaped microk8s output (fixtures/microk8s/,
see its README for where each shape comes from) or over the fake microk8s (harness.microk8s_node),
and the real Salt loader where a state runs. What they share is in microk8s_support.py.
"""

from __future__ import annotations

import inspect
import stat

from harness.salt_minion import ROOT, LocalMinion
from microk8s_support import FIXTURES, MASTER


def test_virtual_refuses_without_the_binary(microk8s, monkeypatch):
    monkeypatch.setattr(microk8s.salt.utils.path, "which", lambda _name: None)
    assert microk8s.__virtual__() == (False, "the microk8s execution module needs the microk8s binary on PATH")


def test_the_salt_loader_loads_the_package_as_one_module(tmp_path):
    """salt-call --local loads salt/_modules/microk8s/ with its submodules, against a fake binary."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "microk8s"
    fake.write_text(f"#!/bin/sh\ncat '{FIXTURES / 'status-ha.yaml'}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path)}
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=env).call

    call("saltutil.sync_modules")
    status = call("microk8s.status")
    assert status["running"] is True
    assert [n["role"] for n in status["high_availability"]["nodes"]] == ["voter", "voter", "voter", "standby"]
    assert call("microk8s.addon_status", "dns") == "enabled"


# The public functions are what the pillar's mine function, the reactor, the states, the
# orchestration and the provisioners call by name: their names and signatures are a contract.
PUBLIC = {
    "status": "()",
    "is_worker": "()",
    "is_running": "()",
    "start": "()",
    "wait_ready": "(timeout: int = 300)",
    "addons": "()",
    "addon_status": "(name: str)",
    "enable": "(name: str, args: list[str] | None = None)",
    "disable": "(name: str)",
    "refresh_certs": "(cert: str = 'server.crt')",
    # microk8s.kubelet_external_cloud_provider calls them.
    "kubelet_cloud_provider": "()",
    "set_kubelet_external_cloud_provider": "(external: bool)",
    # microk8s.apiserver_advertise_address calls them.
    "apiserver_advertise_address": "()",
    "set_apiserver_advertise_address": "(address: str)",
    "restart_kubelite": "(timeout: int = 300)",
    "extra_sans": "()",
    "config_set_extra_sans": "(addresses: list[str])",
    "node_roles": "()",
    "members": "()",
    "nodes": "()",
    "node_health": "()",
    "issuer": "()",
    "membership": "()",
    "leave": "()",
    "remove_node": "(node: str, force: bool = False)",
    "forget_node": "(address: str)",
    # remove-node.sh calls it: salt MASTER microk8s.vacate_node ADDRESS DRAIN_SECONDS.
    "vacate_node": "(address: str, timeout: int = 300)",
    "cluster_check": "(expected_nodes: int | None = None)",
    "add_node": "(token: str | None = None, ttl: int = -1)",
    "join_tokens": "()",
    "pending_joiners": "()",
    "join_token_plan": "(ttl: int = -1)",
    "issue_join_tokens": "(joiners: list[str], withdraw: list[str] | None = None, ttl: int = -1)",
    "renew_join_token": "(joiner: str, reason: str, serial: int | None = None)",
    "join": "(url: str, worker: bool = False)",
    "classify_error": "(message: str)",
    "published_token": "(master: str, master_address: str | None = None)",
    "request_token_renewal": "(master: str, reason: str, serial: int)",
    # upgrade.sh calls it with microk8s_channel, or with none when it is unset; orch.upgrade one minor at a time.
    "upgrade_plan": "(channel: str | None = None, one_minor: bool = False)",
    "release_check": "(channel: str | None = None)",
    "installed": "()",
    "refresh": "(channel: str)",
    # microk8s.refreshes_held (microk8s.install) calls them.
    "refreshes_held": "()",
    "hold_refreshes": "()",
    "drain_node": "(address: str, channel: str, timeout: int = 300)",
    "uncordon_node": "(address: str)",
    "wait_node_ready": "(address: str, channel: str, timeout: int = 600, interval: float = 2)",
    # microk8s.nodes_labelled (orch.deploy's last step) calls them.
    "node_metadata": "(address: str)",
    "label_plan": "()",
    "label_node": "(address: str, labels: dict | None = None, taints: list | None = None)",
    # microk8s.cloud_provider's states call them.
    "cloud_config_plan": "(options: dict | None = None)",
    "cloud_config_apply": "(options: dict | None = None)",
    "manifests_apply": "(sources: list[str], dry_run: bool = False)",
    "provider_id_plan": "()",
    "set_provider_id": "(node: str, provider_id: str)",
    "initialization_plan": "()",
    "wait_initialized": "(timeout: float = 300, interval: float = 5)",
    "mark_uninitialized": "(node: str, marked: bool = True)",
    "storage_class_plan": "(name: str)",
    "default_storage_class": "(name: str)",
    # orch.reboot calls them.
    "drain_for_reboot": "(address: str, timeout: int = 300)",
    "drain_for_replacement": "(address: str, timeout: int = 300)",
    "uncordon_replaced": "()",
    "wait_node_rebooted": "(address: str, timeout: int = 600, interval: float = 2)",
    "join_cluster": (
        "(master: str, master_address: str | None, worker: bool, attempts: int, interval: float, max_interval: float)"
    ),
}


def test_the_public_functions_keep_their_names_and_signatures(microk8s):
    public = {
        name: str(inspect.signature(function, eval_str=True)).split(" -> ")[0]
        for name, function in vars(microk8s).items()
        if inspect.isfunction(function) and not name.startswith("_") and function.__module__ == microk8s.__name__
    }
    assert public == PUBLIC
