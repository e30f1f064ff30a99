"""
Rolling upgrades: which nodes a new microk8s channel has to reach and in what order, taking a
node out of service (kubectl drain) and back (uncordon), refreshing the snap on the node, and
waiting until Kubernetes reports it Ready at the new release. The orchestration orch.upgrade
runs these one node at a time.

Kubernetes upgrades one minor release at a time (its version skew policy: kube-apiserver
instances within one minor of each other, kubelets never newer than the API server), and
microk8s documents its upgrades the same way (a track at a time), so a plan several minors
ahead is a series of steps, one minor each (the chain, provisioners/upgrade.sh, rolls them in
turn), and a plan that goes back is refused before anything is touched.
"""

from __future__ import annotations

import re

from salt.exceptions import CommandExecutionError

from . import _cli, _membership, _scale
from . import _constants as constants

_CHANNEL = re.compile(r"^1\.(\d+)/(stable|candidate|beta|edge)$")
# snapd refuses a change to a snap while another change of it runs (overlord/snapstate/conflict.go).
_CONFLICT = re.compile(r'snap "microk8s" has "([a-z-]+)" change in progress')
# How often a refresh refused by a change in progress is asked again, each after that change.
REFRESH_ATTEMPTS = 3
# The longest the roll waits for a change of microk8s (a refresh downloads the snap and restarts
# its services): snapd goes on with it past this, as it would past a killed snap client.
REFRESH_WAIT_SECONDS = 1800
_VERSION = re.compile(r"^v?1\.(\d+)\.")


def channel_minor(channel: str) -> int:
    """The Kubernetes minor release of a classic microk8s channel ``1.<minor>/<risk>``."""
    match = _CHANNEL.match(str(channel))
    if not match:
        raise CommandExecutionError(f"microk8s channel {channel!r} is not 1.<minor>/<stable|candidate|beta|edge>")
    return int(match.group(1))


def version_minor(version: str | None) -> int | None:
    """The minor release of a kubelet version ``v1.<minor>.<patch>``, or None when unknown."""
    match = _VERSION.match(str(version or ""))
    return int(match.group(1)) if match else None


def _snap_row(text: str) -> list[str]:
    """microk8s' row of ``snap list microk8s`` (cmd/snap/cmd_list.go: Name Version Rev Tracking Publisher Notes)."""
    lines = [line.split() for line in text.splitlines() if line.strip()]
    if len(lines) < 2 or lines[0][:4] != ["Name", "Version", "Rev", "Tracking"]:
        raise CommandExecutionError(f"snap list printed no table: {text[:200]!r}")
    row = next((line for line in lines[1:] if line[0] == "microk8s"), None)
    if row is None or len(row) < 4:
        raise CommandExecutionError(f"snap list has no microk8s row: {text[:200]!r}")
    return row


def parse_snap_list(text: str) -> dict:
    """``{"version", "tracking"}`` of microk8s from ``snap list microk8s``."""
    row = _snap_row(text)
    return {"version": row[1], "tracking": row[3]}


def snap_held(text: str) -> bool:
    """Whether ``snap list microk8s`` notes a refresh hold: "held" among its Notes (snapd cmd/snapd/cli/notes.go)."""
    row = _snap_row(text)
    return len(row) >= 6 and "held" in row[5].split(",")


def _snap(salt: dict, *args: str, timeout: int = constants.DEFAULT_TIMEOUT) -> dict:
    return salt["cmd.run_all"]([constants.SNAP, *args], python_shell=False, timeout=timeout, ignore_retcode=True)


def _output(result: dict) -> str:
    return " ".join((result.get("stderr") or result.get("stdout") or "").split())


def installed(salt: dict) -> dict | None:
    """The installed microk8s ``{"version", "tracking"}``, or None without the snap."""
    result = _snap(salt, "list", "microk8s")
    if result.get("retcode", 1) != 0:
        return None
    return parse_snap_list(result.get("stdout", ""))


def refreshes_held(salt: dict) -> bool:
    """Whether snapd holds its own refreshes of microk8s; raises without the snap."""
    result = _snap(salt, "list", "microk8s")
    if result.get("retcode", 1) != 0:
        raise CommandExecutionError("microk8s is not installed: there are no refreshes to hold")
    return snap_held(result.get("stdout", ""))


def hold_refreshes(salt: dict) -> None:
    """
    ``snap refresh --hold microk8s`` (snapd 2.58 and later): snapd refreshes microk8s on its own
    no more, neither automatically nor in a `snap refresh` of every snap, while a refresh that
    names it (the roll's) still goes ahead (snapd cmd/snapd/cli/cmd_snap_op.go, the command's help).
    """
    result = _snap(salt, "refresh", "--hold", "microk8s")
    if result.get("retcode", 1) != 0:
        output = (result.get("stderr") or result.get("stdout") or "").strip()
        raise CommandExecutionError(f"snap refresh --hold microk8s failed (it needs snapd 2.58 or later): {output}")


def refresh(salt: dict, channel: str) -> dict:
    """
    ``snap refresh microk8s --channel``: ``{"old", "new"}`` tracking; raises without the snap or on
    failure. snapd does the refresh in a change of its own, which goes on whatever happens to the
    snap client; so the refresh starts it (``--no-wait`` prints its id) and waits for that change
    (``snap watch ID``, up to REFRESH_WAIT_SECONDS), not for a client that a timeout would cut off
    mid-refresh. A refresh refused because another change of microk8s runs (an auto-refresh that
    began before the hold, an operator's refresh) waits that change out (``snap watch
    --last=KIND?``) and is asked again, REFRESH_ATTEMPTS times at most.
    """
    channel_minor(channel)
    current = installed(salt)
    if current is None:
        raise CommandExecutionError("microk8s is not installed: nothing to refresh")
    asked = f"snap refresh microk8s --channel={channel}"
    for _ in range(REFRESH_ATTEMPTS):
        result = _snap(salt, "refresh", "microk8s", f"--channel={channel}", "--no-wait")
        if result.get("retcode", 1) == 0:
            break
        conflict = _CONFLICT.search(_output(result))
        if not conflict:
            raise CommandExecutionError(f"{asked} failed: {_output(result)}")
        _snap(salt, "watch", f"--last={conflict.group(1)}?", timeout=REFRESH_WAIT_SECONDS)
    else:
        raise CommandExecutionError(
            f"{asked} was refused {REFRESH_ATTEMPTS} times, each time by a change in progress"
            f" (snapd lets one change at a time touch a snap): {_output(result)}"
        )
    change = (result.get("stdout") or "").strip()
    # No change: snapd had nothing to do ("has no updates available").
    if change.isdigit():
        watched = _snap(salt, "watch", change, timeout=REFRESH_WAIT_SECONDS)
        if watched.get("retcode", 1) != 0:
            raise CommandExecutionError(
                f"{asked}: snapd's change {change} did not complete"
                f" (`snap change {change}` shows its tasks): {_output(watched)}"
            )
    return {"old": current["tracking"], "new": channel}


def plan(salt: dict, channel: str | None = None, one_minor: bool = False) -> dict:
    """
    ``{"channel", "minor", "roll": [ids], "current": {id: kubelet version}, "steps": [{"channel",
    "roll": [ids]}]}``: the nodes of the pillar that Kubernetes runs below ``channel``'s minor,
    control plane first (pillar order), then the workers, and the steps that take them there one
    minor at a time (Kubernetes' version skew policy): a step per minor from the oldest node's
    next one up to ``channel``'s, each rolling the nodes still below it, on ``channel``'s risk.

    ``channel`` None (microk8s_channel unset) keeps the channel this node tracks: the cluster's,
    since the Kubernetes master is rolled first; only nodes a failed roll left behind are rolled.
    Nodes not in the cluster yet are left to orch.deploy, which installs the channel; so is
    everything when this node has no microk8s yet (a first deployment: the chain asks before
    orch.deploy has installed anything). Raises naming the node when one runs a newer minor (no
    downgrades), and with ``one_minor`` (orch.upgrade run by hand rolls one step) when the nodes
    are two or more minors older.
    """
    here = installed(salt)
    if not channel:
        if here is None:
            return {"channel": None, "minor": None, "roll": [], "current": {}, "steps": []}
        channel = here["tracking"]
        asked = f"microk8s_channel unset (keep {channel}, which this node tracks)"
    else:
        asked = f"microk8s_channel {channel}"
    target = channel_minor(channel)
    if here is None:
        return {"channel": channel, "minor": target, "roll": [], "current": {}, "steps": []}
    roles = _membership.node_roles(salt)
    known = _membership.nodes(salt)
    current, minors = {}, {}
    for node_id in [*roles["control_plane"], *roles["workers"]]:
        node = _membership.node_of(known, node_id, roles["addresses"][node_id])
        if node is None:
            continue
        current[node_id] = node["version"]
        minor = version_minor(node["version"])
        if minor is None:
            raise CommandExecutionError(f"{node_id} reports no kubelet version; its release is unknown")
        if minor > target:
            raise CommandExecutionError(
                f"{node_id} runs {node['version']}: {asked} would downgrade it; "
                "Kubernetes cannot go back a minor release"
            )
        if one_minor and minor < target - 1:
            raise CommandExecutionError(
                f"{node_id} runs {node['version']}: {asked} skips a minor release; "
                f"upgrade one at a time (1.{minor + 1}/stable next)"
            )
        minors[node_id] = minor
    roll = [node_id for node_id, minor in minors.items() if minor < target]
    risk = channel.split("/")[1]
    steps = [
        {"channel": f"1.{step}/{risk}", "roll": [node_id for node_id in roll if minors[node_id] < step]}
        for step in range(min((minors[node_id] for node_id in roll), default=target) + 1, target + 1)
    ]
    return {"channel": channel, "minor": target, "roll": roll, "current": current, "steps": steps}


def release_check(salt: dict, channel: str | None = None) -> dict:
    """
    Before orch.deploy joins new nodes: ``plan(channel)`` must have nothing to roll, since a
    node that installs ``channel`` (unset: the channel this node tracks) into a cluster running
    another minor breaks the version skew policy. Raises naming the nodes and the way on: the
    roll (the chain's Upgrade step, or orch.upgrade), or the channel the cluster runs. Returns
    the plan.
    """
    result = plan(salt, channel)
    if result["roll"]:
        minor = version_minor(result["current"][result["roll"][0]])
        nodes = f"{len(result['roll'])} node(s) run 1.{minor} ({', '.join(result['roll'])})"
        if channel:
            raise CommandExecutionError(
                f"{nodes} and microk8s_channel is {channel}: roll them first (salt-run state.orchestrate "
                f"orch.upgrade on the Salt master), or keep microk8s_channel at 1.{minor}/stable"
            )
        raise CommandExecutionError(
            f"{nodes}, below the {result['channel']} this node tracks: roll them first (set microk8s_channel to "
            f"{result['channel']} and deploy)"
        )
    return result


def drain(salt: dict, address: str, channel: str, timeout: int) -> dict:
    """
    Cordons and drains the node at ``address`` unless it already runs ``channel``'s minor:
    ``{"node", "drained"}``; ``_scale.drain`` says how, and kubectl gives up after ``timeout``
    seconds with an error naming the node.
    """
    node = _membership.known_node_at(salt, address)
    if version_minor(node["version"]) == channel_minor(channel):
        return {"node": node["name"], "drained": False}
    _scale.drain(salt, node, timeout)
    return {"node": node["name"], "drained": True}


def uncordon(salt: dict, address: str) -> str:
    node = _membership.known_node_at(salt, address)
    _cli.run(salt, "kubectl", "uncordon", node["name"])
    return node["name"]


def wait_node(salt: dict, address: str, channel: str, timeout: int, interval: float) -> dict:
    """
    Waits until the node at ``address`` is Ready at ``channel``'s minor: ``{"node", "version"}``.
    The API server restarts when its own node refreshes, so failed readings are read again;
    after ``timeout`` seconds the error names the node and its last state.
    """
    target = channel_minor(channel)

    def reading(node: dict) -> tuple[dict | None, str | None]:
        if node["ready"] and version_minor(node["version"]) == target:
            return {"node": node["name"], "version": node["version"]}, None
        return None, f"{node['name']} {'Ready' if node['ready'] else 'not Ready'} at {node['version']}"

    return _scale.wait_node(salt, address, timeout, interval, reading, f"not Ready at 1.{target}")
