"""
The microk8s execution module: unit tests with __salt__ patched and real-shaped microk8s output
(fixtures/microk8s/, see its README for where each shape comes from), and the real Salt loader
loading the package as one virtual module against a fake microk8s binary.
"""

from __future__ import annotations

import importlib
import json
import stat
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT, LocalMinion
from salt.exceptions import CommandExecutionError

FIXTURES = Path(__file__).parent / "fixtures" / "microk8s"


@pytest.fixture
def microk8s(monkeypatch):
    """The package imported as Salt would name it, with its dunders patched per test."""
    monkeypatch.syspath_prepend(str(ROOT / "salt" / "_modules"))
    module = importlib.import_module("microk8s")
    yield module
    for name in [n for n in sys.modules if n == "microk8s" or n.startswith("microk8s.")]:
        del sys.modules[name]


def fake_cli(outputs: dict[tuple[str, ...], dict]):
    """A cmd.run_all that answers known argument lists and records every call."""
    calls = []

    def run_all(cmd, python_shell=True, timeout=None, ignore_retcode=False):
        assert python_shell is False, "microk8s must be called with an argument list, not a shell string"
        assert timeout, "every microk8s call needs a timeout"
        calls.append(tuple(cmd))
        return outputs.get(tuple(cmd[1:]), {"retcode": 1, "stdout": "", "stderr": f"unexpected {cmd}"})

    run_all.calls = calls
    return run_all


def ok(stdout: str) -> dict:
    return {"retcode": 0, "stdout": stdout, "stderr": ""}


STATUS = ("status", "--format", "yaml")


def test_status_parses_ha_nodes_roles_and_addons(microk8s):
    microk8s.__salt__ = {"cmd.run_all": fake_cli({STATUS: ok((FIXTURES / "status-ha.yaml").read_text())})}
    status = microk8s.status()
    assert status["running"] is True
    assert status["high_availability"] == {
        "enabled": True,
        "nodes": [
            {"address": "10.1.0.10:19001", "role": "voter"},
            {"address": "10.1.0.100:19001", "role": "voter"},
            {"address": "10.1.0.101:19001", "role": "voter"},
            {"address": "10.1.0.102:19001", "role": "standby"},
        ],
    }
    assert status["addons"]["dns"] == {"status": "enabled", "description": "CoreDNS", "version": "1.28"}
    assert microk8s.addon_status("registry") == "disabled"
    assert len(microk8s.members()) == 4


def test_status_without_ha_has_no_nodes(microk8s):
    microk8s.__salt__ = {"cmd.run_all": fake_cli({STATUS: ok((FIXTURES / "status-single.yaml").read_text())})}
    assert microk8s.status()["high_availability"] == {"enabled": False, "nodes": []}
    assert microk8s.addons()["hostpath-storage"]["status"] == "enabled"


def test_a_stopped_microk8s_prints_invalid_yaml_which_still_parses_as_not_running(microk8s):
    text = (FIXTURES / "status-not-running.yaml").read_text()
    with pytest.raises(yaml.YAMLError):
        yaml.safe_load(text)
    microk8s.__salt__ = {"cmd.run_all": fake_cli({STATUS: ok(text)})}
    assert microk8s.status() == {
        "running": False,
        "high_availability": {"enabled": False, "nodes": []},
        "addons": {},
        "message": "microk8s is not running. Use microk8s inspect for a deeper inspection.",
    }
    assert microk8s.is_running() is False


def test_an_unknown_addon_is_an_error_not_disabled(microk8s):
    microk8s.__salt__ = {"cmd.run_all": fake_cli({STATUS: ok((FIXTURES / "status-single.yaml").read_text())})}
    with pytest.raises(CommandExecutionError, match="microk8s has no addon named 'nope'"):
        microk8s.addon_status("nope")


def test_enable_passes_addon_arguments_in_microk8s_syntax(microk8s):
    cli = fake_cli({("enable", "dns:1.1.1.1,1.0.0.1"): ok("Enabling DNS")})
    microk8s.__salt__ = {"cmd.run_all": cli}
    assert microk8s.enable("dns", ["1.1.1.1", "1.0.0.1"]) == "Enabling DNS"
    assert cli.calls == [("microk8s", "enable", "dns:1.1.1.1,1.0.0.1")]


def test_add_node_issues_a_single_use_token_by_default_and_parses_json(microk8s):
    args = ("add-node", "--format", "json", "--token-ttl", "-1")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({args: ok((FIXTURES / "add-node.json").read_text())})}
    assert microk8s.add_node() == json.loads((FIXTURES / "add-node.json").read_text())


def test_a_failing_command_raises_with_microk8s_message(microk8s):
    message = (FIXTURES / "error-already-known.txt").read_text()
    join = ("join", "10.1.0.10:25000/abc/def", "--worker")
    microk8s.__salt__ = {"cmd.run_all": fake_cli({join: {"retcode": 1, "stdout": message, "stderr": ""}})}
    with pytest.raises(CommandExecutionError, match="already known to dqlite") as raised:
        microk8s.join("10.1.0.10:25000/abc/def", worker=True)
    assert importlib.import_module("microk8s._ha").classify_error(str(raised.value)) == "already-known"


@pytest.mark.parametrize(
    ("fixture", "kind"),
    [
        ("error-already-known.txt", "already-known"),
        ("error-invalid-token.txt", "invalid-token"),
        ("error-not-running.txt", "not-running"),
    ],
)
def test_join_errors_are_classified(microk8s, fixture, kind):
    assert importlib.import_module("microk8s._ha").classify_error((FIXTURES / fixture).read_text()) == kind


def test_extra_san_is_added_once_and_replaced_when_it_changes(microk8s):
    files = {"/var/snap/microk8s/current/certs/csr.conf.template": "[ alt_names ]\nDNS.1 = kubernetes\n#MOREIPS\n"}
    microk8s.__salt__ = {"file.read": files.__getitem__, "file.write": files.__setitem__}
    assert microk8s.config_set_extra_san("203.0.113.10") == {"changed": True, "san": "IP.99 = 203.0.113.10"}
    assert microk8s.config_set_extra_san("203.0.113.10") == {"changed": False, "san": "IP.99 = 203.0.113.10"}
    assert microk8s.config_set_extra_san("203.0.113.11") == {"changed": True, "san": "IP.99 = 203.0.113.11"}
    template = files["/var/snap/microk8s/current/certs/csr.conf.template"]
    assert template.count("IP.99") == 1
    assert "#MOREIPS" in template


def test_cluster_check_fails_when_nodes_are_missing(microk8s):
    nodes = "k8s-master   Ready    <none>   5m   v1.28.3\nk8s-worker-0   NotReady   <none>   1m   v1.28.3\n"
    microk8s.__salt__ = {"cmd.run_all": fake_cli({("kubectl", "get", "nodes", "--no-headers"): ok(nodes)})}
    assert microk8s.cluster_check(1) == {"ready": ["k8s-master"], "expected": 1}
    with pytest.raises(CommandExecutionError, match="only 1 of 2 nodes are Ready: k8s-master"):
        microk8s.cluster_check(2)


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
    call = LocalMinion(tmp_path, "k8s-master.lab.example", file_root=ROOT / "salt", env=env).call

    call("saltutil.sync_modules")
    status = call("microk8s.status")
    assert status["running"] is True
    assert [n["role"] for n in status["high_availability"]["nodes"]] == ["voter", "voter", "voter", "standby"]
    assert call("microk8s.addon_status", "dns") == "enabled"


def test_addon_enabled_through_the_real_loader_changes_once_then_nothing(tmp_path):
    """state.single microk8s.addon_enabled twice against a stateful fake microk8s."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "microk8s").symlink_to(Path(__file__).parent / "fake_microk8s.py")
    state_dir = tmp_path / "fake"
    state_dir.mkdir()
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "FAKE_MICROK8S_DIR": str(state_dir)}
    call = LocalMinion(tmp_path, "k8s-master.lab.example", file_root=ROOT / "salt", env=env).call

    call("saltutil.sync_all")
    first = next(iter(call("state.single", "microk8s.addon_enabled", "dns").values()))
    assert first["result"] is True
    assert first["changes"] == {"dns": {"old": "disabled", "new": "enabled"}}
    second = next(iter(call("state.single", "microk8s.addon_enabled", "dns").values()))
    assert second["result"] is True
    assert second["changes"] == {}
    assert (state_dir / "calls.log").read_text().count("enable dns\n") == 1
