"""The microk8s module's _addons: an addon's status, enabling with arguments, and the addon_enabled state."""

from __future__ import annotations

import pytest
from harness.microk8s_node import FakeMicrok8s
from harness.salt_minion import ROOT, LocalMinion
from microk8s_support import MASTER, fake_cli, fixture, ok, with_status
from salt.exceptions import CommandExecutionError


def test_an_unknown_addon_is_an_error_not_disabled(microk8s):
    microk8s.__salt__ = with_status(fixture("status-single.yaml"))
    with pytest.raises(CommandExecutionError, match="microk8s has no addon named 'nope'"):
        microk8s.addon_status("nope")


def test_enable_passes_addon_arguments_in_microk8s_syntax(microk8s):
    cli = fake_cli({("enable", "dns:1.1.1.1,1.0.0.1"): ok("Enabling DNS")})
    microk8s.__salt__ = {"cmd.run_all": cli}
    assert microk8s.enable("dns", ["1.1.1.1", "1.0.0.1"]) == "Enabling DNS"
    assert cli.calls == [("microk8s", "enable", "dns:1.1.1.1,1.0.0.1")]


def test_addon_enabled_through_the_real_loader_changes_once_then_nothing(tmp_path):
    """state.single microk8s.addon_enabled twice against a stateful fake microk8s."""
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=node.env).call

    call("saltutil.sync_all")
    first = next(iter(call("state.single", "microk8s.addon_enabled", "dns").values()))
    assert first["result"] is True
    assert first["changes"] == {"dns": {"old": "disabled", "new": "enabled"}}
    second = next(iter(call("state.single", "microk8s.addon_enabled", "dns").values()))
    assert second["result"] is True
    assert second["changes"] == {}
    assert (node.home / "calls.log").read_text().count("enable dns\n") == 1
