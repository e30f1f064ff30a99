"""
Taking a node out of service: cordon and drain, for a roll (``_upgrade``) or for good, when
``num_kube_nodes`` shrinks and the node's machine is about to be deleted (``vacate``, which
provisioners/remove-node.sh runs on the master before ``leave`` on the node and ``forget_node``).

Scale-down never takes an HA cluster below three dqlite voters: a voter whose removal would
leave fewer is refused before anything is touched.
"""

from __future__ import annotations

import time

from salt.exceptions import CommandExecutionError

from . import _cli, _membership

# dqlite's quorum needs three voters to survive the loss of one; microk8s turns HA on at three
# (scripts/wrappers/status.py: "high-availability: yes" once voters > 2).
HA_VOTERS = 3


# kubectl drain on an unreachable node: each evicted pod's grace period, and how long after its
# deletionTimestamp kubectl stops waiting for it (Cluster API's machine_controller.go drainNode).
UNREACHABLE_GRACE_SECONDS = 1
UNREACHABLE_SKIP_SECONDS = 1


def drain(salt: dict, node: dict, timeout: int) -> None:
    """
    ``kubectl drain`` (which cordons first) of the Kubernetes ``node`` (``_membership.nodes``):
    DaemonSet pods stay (calico runs on every node); emptyDir data goes; a pod no controller
    manages is deleted (``--force``: it cannot move to another node, and a roll, a reboot or a
    replacement must not stop on it; Kubespray's and Cluster API's drains do the same); every other
    pod is evicted, so PodDisruptionBudgets hold: kubectl gives up after ``timeout`` seconds while
    one allows no eviction, and Salt stops waiting a minute later. Raises Microk8sError naming the
    node on failure.

    An unreachable node (its kubelet stopped reporting: a dead or stopped machine) never confirms
    that its evicted pods stopped: the API server keeps each one, marked for deletion at the end
    of its grace period, and kubectl would wait for them until ``timeout`` (kubectl's drain.go
    waitForDelete). There, as Cluster API's drain does, each eviction's grace period is
    UNREACHABLE_GRACE_SECONDS and kubectl stops waiting UNREACHABLE_SKIP_SECONDS after it. The
    evictions and the budgets are the same; the pods' controllers replace them as always, a
    StatefulSet's once the old pod is gone.
    """
    args = [
        "drain",
        node["name"],
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--force",
        f"--timeout={int(timeout)}s",
    ]
    if node["unreachable"]:
        args += [
            f"--grace-period={UNREACHABLE_GRACE_SECONDS}",
            f"--skip-wait-for-delete-timeout={UNREACHABLE_SKIP_SECONDS}",
        ]
    _cli.run(salt, "kubectl", *args, timeout=int(timeout) + 60)


def voter_floor(members: list[dict], address: str, label: str) -> str | None:
    """
    Why removing the dqlite member at ``address`` is refused, or None when it may go: the member
    is a voter of an HA cluster (three voters or more) that would keep fewer than three. dqlite's
    role adjustment promotes a standby or spare to voter when a voter goes, so those count. A
    cluster below three voters (one voter and a spare, or two) is not HA and may lose a member.
    """
    departing = [m for m in members if m["address"].rsplit(":", 1)[0] == address]
    if not departing or departing[0]["role"] != "voter":
        return None
    voters = sum(1 for m in members if m["role"] == "voter")
    others = len(members) - voters
    kept = voters - 1 + min(others, 1)
    if voters < HA_VOTERS or kept >= HA_VOTERS:
        return None
    return (
        f"refusing to remove {label} (a dqlite voter): the HA cluster would keep {kept} of its {voters} voters; "
        f"keep num_kube_nodes >= {HA_VOTERS}"
    )


def vacate(salt: dict, address: str, timeout: int) -> dict:
    """
    On the master, before a departing node's machine is deleted: refuses a voter whose removal
    breaks the voter floor, else cordons and drains its Kubernetes node within ``timeout``
    seconds. A drain that does not finish in time is reported, not raised: the machine goes
    anyway, and its pods are rescheduled once its node is removed.

    ``{"outcome", "node", "member", "seconds", "reason"}``, outcome one of ``refused`` (reason
    says why; nothing was touched), ``absent`` (neither a Kubernetes node nor a dqlite member at
    ``address``), ``no-node`` (a dqlite member without a Kubernetes node: nothing to drain),
    ``drained`` or ``gave-up`` (reason: kubectl's last line); ``member`` is its dqlite role or
    None, ``seconds`` how long the drain took.
    """
    timeout = int(timeout)
    if timeout < 1:
        raise CommandExecutionError(f"the drain bound must be at least 1 second, got {timeout}")
    node = next((n for n in _membership.nodes(salt) if address in n["addresses"]), None)
    members = _membership.members(salt)
    member = next((m for m in members if m["address"].rsplit(":", 1)[0] == address), None)
    result = {"outcome": None, "node": node and node["name"], "member": member and member["role"]}
    result.update(seconds=0, reason=None)
    refusal = voter_floor(members, address, node["name"] if node else address)
    if refusal:
        return {**result, "outcome": "refused", "reason": refusal}
    if node is None:
        return {**result, "outcome": "no-node" if member else "absent"}
    started = time.monotonic()
    try:
        drain(salt, node, timeout)
    except _cli.Microk8sError as error:
        seconds = round(time.monotonic() - started)
        return {**result, "outcome": "gave-up", "seconds": seconds, "reason": _cli.summary(error.output)}
    return {**result, "outcome": "drained", "seconds": round(time.monotonic() - started)}


def wait_node(salt: dict, address: str, timeout: int, interval: float, reading, waiting: str) -> dict:
    """
    Reads the node at ``address`` every ``interval`` seconds until ``reading(node)`` returns
    ``(result, None)``; it returns ``(None, last)`` while the node is not back, ``last`` saying
    how it stands. The API server restarts or is away when its own node does, so failed readings
    are read again. After ``timeout`` seconds: an error naming the address, what it is
    (``waiting``, e.g. "not Ready at 1.35") and its last reading.
    """
    deadline = time.monotonic() + int(timeout)
    last = "no reading"
    while True:
        try:
            node = _membership.known_node_at(salt, address)
        except CommandExecutionError as error:
            last = str(error)
        else:
            result, last = reading(node)
            if result is not None:
                return result
        if time.monotonic() >= deadline:
            raise CommandExecutionError(f"the node at {address} is {waiting} after {timeout} s; last: {last}")
        time.sleep(interval)
