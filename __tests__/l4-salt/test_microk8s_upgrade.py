"""
The microk8s module's _upgrade: the snap's refreshes, held from snapd and made by the roll through
snapd's changes, and the rolling upgrade (orch.upgrade): the plan, the release check, drain,
refresh, wait and uncordon.
"""

from __future__ import annotations

import importlib
import json

import pytest
from harness.microk8s_node import FakeMicrok8s
from harness.salt_minion import ROOT, LocalMinion
from microk8s_support import CP_JOINER, MASTER, WORKER, fake_cli, joined_cluster
from salt.exceptions import CommandExecutionError


def test_refreshes_held_through_the_real_loader_are_held_once_and_stop_auto_refresh_not_the_roll(tmp_path):
    """
    state.single microk8s.refreshes_held twice against the fake's snapd (snapd.py beside the
    rehearsal's fake): predicted, then `snap refresh --hold microk8s` once; snapd's auto-refresh
    then leaves the node alone, and a refresh asked for by name (the roll's) still goes ahead.
    """
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    call = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=node.env).call
    call("saltutil.sync_all")

    def held(*extra: str) -> dict:
        return next(iter(call("state.single", "microk8s.refreshes_held", "microk8s", *extra).values()))

    def outcome(state: dict) -> tuple:
        return state["result"], state["changes"], state["comment"]

    change = {"refreshes_held": {"old": False, "new": True}}
    assert outcome(held("test=True")) == (None, change, "snapd's own refreshes of microk8s would be held")
    assert outcome(held()) == (True, change, "held snapd's own refreshes of microk8s: only the roll refreshes it")
    assert outcome(held()) == (True, {}, "snapd's own refreshes of microk8s are held")
    assert (node.home / "calls.log").read_text().count("snap refresh --hold microk8s\n") == 1
    before = node.state()
    assert node.run("fake-auto-refresh").returncode == 0
    assert node.state() == before
    assert call("microk8s.refresh", "1.29/stable") == {"old": "1.28/stable", "new": "1.29/stable"}


def refreshing_node(tmp_path, faults: dict) -> tuple[FakeMicrok8s, LocalMinion]:
    """A fake node at 1.28 with snapd's ``faults`` (fake/faults.json), and a minion with the modules synced."""
    node = FakeMicrok8s(tmp_path / "node", tmp_path / "cluster")
    minion = LocalMinion(tmp_path, MASTER, file_root=ROOT / "salt", env=node.env)
    minion.call("saltutil.sync_all")
    (node.home / "fake" / "faults.json").write_text(json.dumps(faults))
    return node, minion


def test_a_refresh_refused_by_a_change_in_progress_waits_it_out_and_is_asked_again(tmp_path):
    """
    snapd refuses a change to microk8s while another one runs (the fake's snapd.py: an
    auto-refresh started before the hold, or an operator's refresh): the roll's refresh waits
    for that change (`snap watch --last=auto-refresh?`) and asks again, then waits for its own
    change to finish, by its id, not for the snap client that a timeout would cut off.
    """
    node, minion = refreshing_node(tmp_path, {"auto_refresh_in_progress": 2})
    call = minion.call

    assert call("microk8s.refresh", "1.29/stable") == {"old": "1.28/stable", "new": "1.29/stable"}
    snap_calls = [
        line
        for line in (node.home / "calls.log").read_text().splitlines()
        if line.startswith("snap refresh microk8s") or line.startswith("snap watch")
    ]
    assert snap_calls == [
        "snap refresh microk8s --channel=1.29/stable --no-wait",
        "snap watch --last=auto-refresh?",
        "snap refresh microk8s --channel=1.29/stable --no-wait",
        "snap watch --last=auto-refresh?",
        "snap refresh microk8s --channel=1.29/stable --no-wait",
        f"snap watch {node.state()['change_seq']}",
    ]
    assert call("microk8s.installed")["tracking"] == "1.29/stable"


def test_a_refresh_refused_past_the_bound_fails_naming_the_change_in_progress(tmp_path):
    """Three refusals in a row fail the refresh, naming what snapd refused it for; the snap stays."""
    _, minion = refreshing_node(tmp_path, {"auto_refresh_in_progress": 5})
    call = minion.call

    error = minion.call_error("microk8s.refresh", "1.29/stable")
    assert error == (
        "snap refresh microk8s --channel=1.29/stable was refused 3 times, each time by a change in progress"
        ' (snapd lets one change at a time touch a snap): error: snap "microk8s" has "auto-refresh" change in progress'
    )
    assert call("microk8s.installed")["tracking"] == "1.28/stable"


def test_a_refresh_whose_change_fails_is_an_error_naming_the_change(tmp_path):
    """
    snapd's change fails (a task of it, e.g. starting the new revision's services) and snapd
    undoes it: the error names the change, whose tasks `snap change ID` lists, and the snap keeps
    its channel.
    """
    node, minion = refreshing_node(tmp_path, {"refresh_fails": 1})
    call = minion.call

    error = minion.call_error("microk8s.refresh", "1.29/stable")
    change = node.state()["change_seq"]
    assert error == (
        f"snap refresh microk8s --channel=1.29/stable: snapd's change {change} did not complete (`snap change {change}`"
        " shows its tasks): error: cannot perform the following tasks:"
        ' - Start snap "microk8s" (7001) services (the fake\'s refresh_fails)'
    )
    assert call("microk8s.installed")["tracking"] == "1.28/stable"


def test_a_hold_snapd_refuses_is_an_error_naming_the_snapd_it_needs(microk8s):
    refused = {"retcode": 64, "stdout": "", "stderr": "error: unknown flag `hold'"}
    microk8s.__salt__ = {"cmd.run_all": fake_cli({("refresh", "--hold", "microk8s"): refused})}
    with pytest.raises(
        CommandExecutionError,
        match=r"^snap refresh --hold microk8s failed \(it needs snapd 2\.58 or later\): error: unknown flag `hold'$",
    ):
        microk8s.hold_refreshes()
    microk8s.__salt__ = {"cmd.run_all": fake_cli({})}
    with pytest.raises(CommandExecutionError, match=r"^microk8s is not installed: there are no refreshes to hold$"):
        microk8s.refreshes_held()


def test_the_upgrade_plan_rolls_the_control_plane_first_one_minor_at_a_time(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    everyone = [MASTER, CP_JOINER, WORKER]
    assert master.upgrade_plan("1.29/stable") == {
        "channel": "1.29/stable",
        "minor": 29,
        "roll": everyone,
        "current": {MASTER: "v1.28.15", CP_JOINER: "v1.28.15", WORKER: "v1.28.15"},
        "steps": [{"channel": "1.29/stable", "roll": everyone}],
    }
    assert master.upgrade_plan("1.28/candidate")["roll"] == []
    assert master.upgrade_plan("1.28/candidate")["steps"] == []
    # Several minors ahead: a step per minor, on the channel's risk.
    assert master.upgrade_plan("1.31/candidate")["steps"] == [
        {"channel": f"1.{minor}/candidate", "roll": everyone} for minor in (29, 30, 31)
    ]
    # orch.upgrade, run by hand, rolls one step: it refuses more.
    with pytest.raises(
        CommandExecutionError,
        match=rf"^{MASTER} runs v1\.28\.15: microk8s_channel 1\.35/stable skips a minor release; "
        r"upgrade one at a time \(1\.29/stable next\)$",
    ):
        master.upgrade_plan("1.35/stable", one_minor=True)
    with pytest.raises(
        CommandExecutionError, match=rf"^{MASTER} runs v1\.28\.15: microk8s_channel 1\.27/stable would downgrade it"
    ):
        master.upgrade_plan("1.27/stable")
    with pytest.raises(CommandExecutionError, match=r"microk8s channel 'latest/edge' is not 1\.<minor>/"):
        master.upgrade_plan("latest/edge")


def test_an_unset_channel_keeps_the_one_the_master_tracks_and_rolls_only_the_nodes_left_behind(
    microk8s, tmp_path, monkeypatch
):
    cluster = joined_cluster(microk8s, tmp_path)
    master = cluster.as_master()
    assert master.upgrade_plan() == {
        "channel": "1.28/stable",
        "minor": 28,
        "roll": [],
        "current": {MASTER: "v1.28.15", CP_JOINER: "v1.28.15", WORKER: "v1.28.15"},
        "steps": [],
    }
    assert master.release_check()["channel"] == "1.28/stable"
    # A roll to 1.30 that stopped after the master: unset, the others follow it one minor at a time.
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    for channel in ("1.29/stable", "1.30/stable"):
        assert master.refresh(channel)["new"] == channel
        master.wait_node_ready("10.1.0.10", channel, 30, 0)
    assert master.upgrade_plan()["steps"] == [
        {"channel": "1.29/stable", "roll": [CP_JOINER, WORKER]},
        {"channel": "1.30/stable", "roll": [CP_JOINER, WORKER]},
    ]
    with pytest.raises(CommandExecutionError) as raised:
        master.release_check()
    assert str(raised.value) == (
        f"2 node(s) run 1.28 ({CP_JOINER}, {WORKER}), below the 1.30/stable this node tracks: roll them first "
        "(set microk8s_channel to 1.30/stable and deploy)"
    )
    # A node newer than the master's channel is never rolled back.
    with pytest.raises(CommandExecutionError, match=r"microk8s_channel 1\.29/stable would downgrade it"):
        master.upgrade_plan("1.29/stable")


def test_the_dual_homed_master_is_known_by_its_host_name_where_its_private_address_is_not_its_node_address(
    microk8s, tmp_path
):
    """
    kubelet registers the address of the default route: the Kubernetes master's public one, not
    the private one in the pillar. The rehearsal found the master left out of the roll.
    """
    master = joined_cluster(microk8s, tmp_path, master_address="10.0.0.11").as_master()
    assert [n["address"] for n in master.nodes() if n["name"] == "k8s-master"] == ["10.0.0.11"]
    assert master.upgrade_plan("1.29/stable")["roll"] == [MASTER, CP_JOINER, WORKER]
    assert master.drain_node("10.1.0.10", "1.29/stable", 60) == {"node": "k8s-master", "drained": True}
    assert master.uncordon_node("10.1.0.10") == "k8s-master"
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.99$"):
        master.uncordon_node("10.1.0.99")


def test_one_node_is_drained_refreshed_waited_for_and_uncordoned(microk8s, tmp_path, monkeypatch):
    cluster = joined_cluster(microk8s, tmp_path)
    monkeypatch.setattr(importlib.import_module("microk8s._scale").time, "sleep", lambda _s: None)
    master = cluster.as_master()
    assert master.drain_node("10.1.0.101", "1.29/stable", 60) == {"node": "k8s-worker-1", "drained": True}
    assert [n["unschedulable"] for n in master.nodes() if n["address"] == "10.1.0.101"] == [True]
    # On the worker: the snap follows the channel.
    worker = microk8s
    worker.__salt__ = cluster.worker.salt_functions()
    assert worker.installed() == {"version": "v1.28.15", "tracking": "1.28/stable"}
    assert worker.refresh("1.29/stable") == {"old": "1.28/stable", "new": "1.29/stable"}
    master = cluster.as_master()
    assert master.wait_node_ready("10.1.0.101", "1.29/stable", 30, 0) == {"node": "k8s-worker-1", "version": "v1.29.0"}
    assert master.uncordon_node("10.1.0.101") == "k8s-worker-1"
    assert [n["unschedulable"] for n in master.nodes() if n["address"] == "10.1.0.101"] == [False]
    # Run again (a roll resumed after a failure): the node is passed over.
    assert master.drain_node("10.1.0.101", "1.29/stable", 60) == {"node": "k8s-worker-1", "drained": False}
    assert master.upgrade_plan("1.29/stable")["roll"] == [MASTER, CP_JOINER]


def test_a_node_that_is_not_ready_at_the_release_in_time_stops_the_roll_naming_it(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    with pytest.raises(CommandExecutionError) as raised:
        master.wait_node_ready("10.1.0.101", "1.29/stable", 0, 0)
    assert str(raised.value) == (
        "the node at 10.1.0.101 is not Ready at 1.29 after 0 s; last: k8s-worker-1 Ready at v1.28.15"
    )
    with pytest.raises(CommandExecutionError, match=r"^Kubernetes has no node at 10\.1\.0\.199$"):
        master.drain_node("10.1.0.199", "1.29/stable", 60)


def test_new_nodes_join_only_a_cluster_that_runs_the_channels_release(microk8s, tmp_path):
    master = joined_cluster(microk8s, tmp_path).as_master()
    assert master.release_check("1.28/candidate")["roll"] == []
    with pytest.raises(CommandExecutionError) as raised:
        master.release_check("1.29/stable")
    assert str(raised.value) == (
        f"3 node(s) run 1.28 ({MASTER}, {CP_JOINER}, {WORKER}) and microk8s_channel is 1.29/stable: roll them first "
        "(salt-run state.orchestrate orch.upgrade on the Salt master), or keep microk8s_channel at 1.28/stable"
    )
    # Several minors ahead: the roll comes first all the same.
    with pytest.raises(CommandExecutionError, match=r"^3 node\(s\) run 1\.28 .* microk8s_channel is 1\.30/stable"):
        master.release_check("1.30/stable")
