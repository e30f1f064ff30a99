"""
The joiner's side of the join protocol, after microk8s' join.py and the cluster agent's Join
handler (canonical/microk8s-cluster-agent): this node's token from the master's mine entry,
``microk8s join``, what a failed join means, asking the master for a new token, and the
bounded retry loop that ties them together.
"""

from __future__ import annotations

import time
from typing import NamedTuple

from salt.exceptions import CommandExecutionError

from . import _cli, _membership
from . import _constants as constants

# How a failed `microk8s join` ends, by the texts microk8s prints: join.py relays the cluster
# agent's error as "Connection failed. <error> (<HTTP status>)." (exit 6), and refuses a master
# whose certificate does not match the URL's fingerprint before it sends the token (exit 4).
# The first kind whose text appears wins: the agent wraps "already known" in "failed to retrieve
# dqlite cluster nodes" since cluster-agent b306c39 (microk8s 1.29+), so that comes first.
_ERROR_KINDS = (
    # ConsumeClusterToken refused it: never issued, already used (single-use) or expired.
    ("invalid-token", ("invalid token", "token is expired")),
    # The agent found the joiner's address among the dqlite members: a rebuilt node.
    ("already-known", ("already known to dqlite",)),
    # The agent could not read the dqlite members (pkg/api/v2/join.go, after the token was
    # consumed; cluster-agent PR #26, microk8s#4696): transient, but the token is spent.
    ("dqlite-unavailable", ("failed to retrieve dqlite cluster nodes",)),
    # join.py join_request: the master's certificate is not the one the URL names (server.crt was
    # refreshed after the token was published; microk8s#3050, #4010). The token is unspent.
    ("fingerprint-mismatch", ("could not verify the identity",)),
    # The master could not resolve the joiner's hostname to its address.
    ("hostname-unresolved", ("does not resolve to the ip",)),
    # The master's cluster agent did not answer (not installed or restarting yet).
    (
        "unreachable",
        (
            "connection refused",
            "please ensure the master node is reachable",
            "connecting to cluster failed",
            "no route to host",
            "timed out",
        ),
    ),
    ("not-running", ("microk8s is not running",)),
)


def classify_error(message: str) -> dict:
    """
    ``{"kind", "action"}``: kind is one of ``invalid-token``, ``already-known``,
    ``dqlite-unavailable``, ``fingerprint-mismatch``, ``hostname-unresolved``, ``unreachable``,
    ``not-running`` or ``other``; action is ``renew`` (the token is spent or its URL stale: the
    master issues or republishes one), ``wait`` (the master is not ready) or ``fail`` (retrying
    cannot help).
    """
    lowered = message.lower()
    kind = next((kind for kind, needles in _ERROR_KINDS if any(n in lowered for n in needles)), "other")
    action = "renew" if kind in constants.RENEWABLE else "wait" if kind in constants.TRANSIENT else "fail"
    return {"kind": kind, "action": action}


def join_args(url: str, worker: bool = False) -> list[str]:
    return ["join", url, *(["--worker"] if worker else [])]


def join(salt: dict, url: str, worker: bool = False) -> str:
    return _cli.run(salt, *join_args(url, worker), timeout=2 * constants.DEFAULT_TIMEOUT)


def url_for(urls: list[str], address: str | None) -> str:
    """The join URL that reaches the master at ``address`` (its private one); else the first."""
    for url in urls:
        if address and url.split(":", 1)[0] == address:
            return url
    if not urls:
        raise CommandExecutionError("the master published a join token without any URL")
    return urls[0]


def published_token(salt: dict, opts: dict, master: str, master_address: str | None) -> dict | None:
    """This node's ``{"url", "serial", "worker"}`` from ``master``'s mine entry, or None."""
    entry = ((salt["mine.get"](master, constants.MINE_FUNCTION) or {}).get(master) or {}).get(opts["id"])
    if not entry:
        return None
    return {"url": url_for(entry["urls"], master_address), "serial": entry["serial"], "worker": entry["worker"]}


def request_token_renewal(salt: dict, master: str, reason: str, serial: int) -> bool:
    """
    The renewal event, which the Salt master's reactor turns into ``renew_join_token`` on
    ``master`` with this minion's id. After a failed name lookup this node's addresses are
    published first, so that the master refreshing its hosts file finds them.
    """
    if reason == "hostname-unresolved":
        salt["mine.update"]()
    data = {"master": master, "reason": reason, "serial": int(serial)}
    return bool(salt["event.send"](constants.RENEW_TAG, data))


class Backoff(NamedTuple):
    """How often a join is tried: ``attempts`` at most, ``interval`` seconds before the second,
    twice as long before each next one, never more than ``max_interval``."""

    attempts: int
    interval: float
    max_interval: float


def join_cluster(
    salt: dict, opts: dict, master: str, master_address: str | None, worker: bool, backoff: Backoff
) -> dict:
    """
    Joins with this node's published token, as often as ``backoff`` allows. A missing token is
    asked for once; a spent token (consumed by a failed attempt, expired, refused because the node
    was rebuilt or its name did not resolve) is renewed through the master; an unready master is
    waited for. Returns ``{"attempts",
    "serial", "membership"}`` of the join that worked, once the membership shows it
    (``settled_membership``); raises CommandExecutionError saying why it gave up.
    """
    attempts, interval, max_interval = backoff
    delay = float(interval)
    renewing = None  # the serial of the token reported spent, until a newer one is published
    asked = False  # whether the master was asked for a token it had not published
    last = "no attempt was made"
    for attempt in range(1, int(attempts) + 1):
        if attempt > 1:
            time.sleep(delay)
            delay = min(delay * 2, float(max_interval))
        token = published_token(salt, opts, master, master_address)
        if token is None:
            last = f"{master} has published no join token for this node (is its highstate done?)"
            if not asked:
                request_token_renewal(salt, master, constants.MISSING, 0)
                asked = True
            continue
        if renewing is not None and token["serial"] <= renewing:
            last = f"{master} has not renewed spent join token #{renewing}"
            continue
        try:
            join(salt, token["url"], worker)
        except _cli.Microk8sError as error:
            last = str(error)
            verdict = classify_error(error.output)
        else:
            return {
                "attempts": attempt,
                "serial": token["serial"],
                "membership": settled_membership(salt, worker, master_address),
            }
        if verdict["action"] == "fail":
            raise CommandExecutionError(f"joining {master} failed ({verdict['kind']}), retrying cannot help: {last}")
        if verdict["action"] == "renew":
            request_token_renewal(salt, master, verdict["kind"], token["serial"])
            renewing = token["serial"]
    raise CommandExecutionError(f"not joined to {master} after {attempts} attempts; last: {last}")


def settled_membership(salt: dict, worker: bool, master_address: str | None) -> dict:
    """
    The membership after a join that exited 0, once it shows the wanted role. microk8s
    restarts its services at the end of a join, and status fails (exit 1) or lists no members
    until they are back, so a failed or not-yet-right reading is read again, ``SETTLE_ATTEMPTS``
    times ``SETTLE_INTERVAL`` seconds apart; then CommandExecutionError with the last reading.
    """
    last = "no reading"
    for attempt in range(constants.SETTLE_ATTEMPTS):
        if attempt:
            time.sleep(constants.SETTLE_INTERVAL)
        try:
            current = _membership.membership(salt)
        except CommandExecutionError as error:
            last = str(error)
            continue
        if _membership.joined(current, worker, master_address):
            return current
        last = f"{current['role']} with members {current['members']}"
    wanted = "worker" if worker else "control-plane member"
    raise CommandExecutionError(
        f"microk8s join reported success, but this node is not a {wanted} after "
        f"{constants.SETTLE_ATTEMPTS} readings {constants.SETTLE_INTERVAL} s apart; last: {last}"
    )
