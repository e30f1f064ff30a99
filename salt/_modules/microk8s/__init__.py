"""
Execution module for microk8s, the wiki's "Microk8s Module": status, addons, constants,
crosscall and ha live in submodules; this package is what Salt loads as ``microk8s``. Every
function wraps microk8s CLI calls (through crosscall.run) or its files and returns parsed data.

The join protocol's master side is here too: the master issues one token per expected joiner
(``issue_join_token``), keeps them in a root-only ledger in Salt's cachedir, publishes them
through the mine (``join_tokens``) and renews one when a joiner reports it unusable
(``renew_join_token``, called by the Salt master's reactor). docs/microk8s-module.md has the
whole protocol.
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import json
import os
import re
import time

import salt.utils.path
from salt.exceptions import CommandExecutionError

__virtualname__ = "microk8s"


def _sub(name: str):
    """
    A submodule (_status, _addons, _constants, _crosscall, _ha). Imported when first used, not
    at the top: Salt's loader registers this package in sys.modules only after running this
    file, so an import here at load time could not find its parent package. The underscores
    keep an imported submodule from replacing the public function of the same name.
    """
    return importlib.import_module(f"{__name__}.{name}")


def __virtual__():
    binary = _sub("_constants").BINARY
    if salt.utils.path.which(binary):
        return __virtualname__
    return (False, f"the microk8s execution module needs the {binary} binary on PATH")


def _cmd(*args: str, timeout: int | None = None) -> str:
    return _sub("_crosscall").run(__salt__, *args, timeout=timeout or _sub("_constants").DEFAULT_TIMEOUT)


def _snap_path(relative: str) -> str:
    """A path below microk8s' $SNAP_DATA (the minion option ``microk8s.snap_data`` moves it)."""
    constants = _sub("_constants")
    return os.path.join(__salt__["config.get"](constants.SNAP_DATA_OPTION, constants.SNAP_DATA), relative)


def status() -> dict:
    """
    Parsed ``microk8s status --format yaml``: running, whether this is a worker node, high
    availability with its nodes and roles, and every addon with its status. A worker node has
    no status of its own (microk8s refers to the control plane): ``worker`` is True there and
    ``running`` is None.

    CLI Example: ``salt '*' microk8s.status``
    """
    try:
        return _sub("_status").parse(_cmd("status", "--format", "yaml"))
    except CommandExecutionError as error:
        if _sub("_status").WORKER_NODE in str(error):
            return _sub("_status").worker_node(str(error).split("failed:", 1)[-1])
        raise


def is_worker() -> bool:
    """True on a node that joined a cluster as a worker. CLI Example: ``salt '*' microk8s.is_worker``"""
    return bool(__salt__["file.file_exists"](_snap_path(_sub("_constants").WORKER_LOCK)))


def is_running() -> bool:
    """
    True when microk8s runs: by its status, or on a worker (which has none) by its kubelite
    service. CLI Example: ``salt '*' microk8s.is_running``
    """
    if is_worker():
        return bool(__salt__["service.status"]("snap.microk8s.daemon-kubelite"))
    try:
        return status()["running"] is True
    except CommandExecutionError:
        return False


def start() -> str:
    """Starts microk8s. CLI Example: ``salt '*' microk8s.start``"""
    return _cmd("start")


def wait_ready(timeout: int = 300) -> bool:
    """Blocks until microk8s is ready or ``timeout`` seconds pass (``status --wait-ready``)."""
    _cmd("status", "--wait-ready", "--timeout", str(timeout), timeout=timeout + 30)
    return True


def addons() -> dict:
    """Every addon with its status, description and version. CLI Example: ``salt '*' microk8s.addons``"""
    return status()["addons"]


def addon_status(name: str) -> str:
    """``enabled`` or ``disabled``. CLI Example: ``salt '*' microk8s.addon_status dns``"""
    return _sub("_addons").status_of(status(), name)


def enable(name: str, args: list[str] | None = None) -> str:
    """Enables an addon, e.g. ``salt '*' microk8s.enable dns``; returns microk8s' output."""
    return _cmd(*_sub("_addons").enable_args(name, args))


def disable(name: str) -> str:
    """Disables an addon. CLI Example: ``salt '*' microk8s.disable registry``"""
    return _cmd("disable", name)


def add_node(token: str | None = None, ttl: int = -1) -> dict:
    """
    Issues a join token and returns ``{"token", "urls"}``. ``ttl=-1`` (the default, as in
    microk8s) makes it single-use; a positive ttl makes it reusable for that many seconds.

    CLI Example: ``salt k8s-master.* microk8s.add_node ttl=600``
    """
    args = ["add-node", "--format", "json", "--token-ttl", str(ttl)]
    if token:
        args += ["--token", token]
    return _sub("_ha").parse_add_node(_cmd(*args))


def join(url: str, worker: bool = False) -> str:
    """Joins the cluster at ``url`` (``ip:port/token/check``), as a worker when asked."""
    return _cmd(*_sub("_ha").join_args(url, worker), timeout=2 * _sub("_constants").DEFAULT_TIMEOUT)


def leave() -> str:
    """Leaves the cluster this node is part of."""
    return _cmd("leave")


def remove_node(node: str, force: bool = False) -> str:
    """Removes a departed (or rebuilt) node from the cluster, by name or address."""
    return _cmd("remove-node", node, *(["--force"] if force else []))


def members() -> list[dict]:
    """The dqlite members (address and role) this node knows."""
    return status()["high_availability"]["nodes"]


def nodes() -> list[dict]:
    """
    The Kubernetes nodes: ``[{"name", "address" (InternalIP), "ready"}]``, from
    ``kubectl get nodes -o json``. CLI Example: ``salt k8s-master.* microk8s.nodes``
    """
    items = json.loads(_cmd("kubectl", "get", "nodes", "-o", "json") or "{}").get("items") or []
    result = []
    for item in items:
        addresses = item.get("status", {}).get("addresses") or []
        conditions = item.get("status", {}).get("conditions") or []
        result.append(
            {
                "name": item["metadata"]["name"],
                "address": next((a["address"] for a in addresses if a.get("type") == "InternalIP"), None),
                "ready": any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions),
            }
        )
    return result


def _member_hosts() -> list[str]:
    """The addresses of the dqlite members, without their port."""
    return [member["address"].rsplit(":", 1)[0] for member in members()]


def membership() -> dict:
    """
    How this node takes part in a cluster: ``{"role": "worker" | "control-plane" | "standalone",
    "members": [addresses of the dqlite members]}``. A node is control plane once dqlite knows
    more members than itself.
    """
    if is_worker():
        return {"role": "worker", "members": []}
    addresses = _member_hosts()
    return {"role": "control-plane" if len(addresses) > 1 else "standalone", "members": addresses}


def refresh_certs(cert: str = "server.crt") -> str:
    """Regenerates a certificate from csr.conf.template (after a SAN change)."""
    return _cmd("refresh-certs", "--cert", cert)


def extra_san() -> str | None:
    """The extra IP SAN (``IP.99``) in csr.conf.template, or None. CLI Example: ``salt '*' microk8s.extra_san``"""
    text = __salt__["file.read"](_snap_path(_sub("_constants").CSR_TEMPLATE))
    match = re.search(r"^IP\.99 = (.*)$", text, re.MULTILINE)
    return match.group(1).strip() if match else None


def config_set_extra_san(address: str) -> dict:
    """
    Puts ``address`` into csr.conf.template as an extra IP SAN, idempotently, keeping the
    marker so a later address replaces it. Returns ``{"changed": bool, "san": "IP.99 = <address>"}``.
    """
    line = f"IP.99 = {address}"
    constants = _sub("_constants")
    template = _snap_path(constants.CSR_TEMPLATE)
    text = __salt__["file.read"](template)
    if re.search(rf"^{re.escape(line)}$", text, re.MULTILINE):
        return {"changed": False, "san": line}
    if re.search(r"^IP\.99 = .*$", text, re.MULTILINE):
        text = re.sub(r"^IP\.99 = .*$", line, text, flags=re.MULTILINE)
    elif constants.CSR_MARKER in text:
        text = text.replace(constants.CSR_MARKER, f"{line}\n{constants.CSR_MARKER}", 1)
    else:
        raise CommandExecutionError(f"{template} has no {constants.CSR_MARKER} marker to add a SAN at")
    __salt__["file.write"](template, text)
    return {"changed": True, "san": line}


def node_roles() -> dict:
    """
    The control plane and the workers, from the pillar (``microk8s:nodes``, ``:master``,
    ``:control_plane``, ``:control_plane_size``): ``{"master", "control_plane", "workers",
    "joiners": {id: joins_as_worker}, "addresses": {id: address}}``. The default control plane
    is the first three nodes. CLI Example: ``salt '*' microk8s.node_roles``
    """
    return _sub("_ha").node_roles(__salt__["pillar.get"]("microk8s", {}))


def cluster_check(expected_nodes: int | None = None) -> dict:
    """
    Fails (CommandExecutionError) unless ``expected_nodes`` nodes (default: every node in the
    pillar) are Ready in Kubernetes; the orchestration's final step. Returns
    ``{"ready": [names], "expected": N}``.
    """
    expected = int(expected_nodes) if expected_nodes is not None else len(node_roles()["addresses"])
    ready = sorted(node["name"] for node in nodes() if node["ready"])
    if len(ready) < expected:
        raise CommandExecutionError(f"only {len(ready)} of {expected} nodes are Ready: {', '.join(ready) or 'none'}")
    return {"ready": ready, "expected": expected}


# The master's side of the join protocol.


def _ledger_path() -> str:
    return os.path.join(__opts__["cachedir"], _sub("_constants").LEDGER)


@contextlib.contextmanager
def _ledger(write: bool = True):
    """
    The issued tokens, ``{"tokens": {joiner: entry}, "serials": {joiner: n}}``, locked for the
    duration (the highstate and reactor-run renewals may touch it at the same time) and saved
    afterwards unless ``write`` is False.
    """
    path = _ledger_path()
    if not write and not os.path.exists(path):
        # Nothing issued yet: a reader neither locks nor creates anything.
        yield {"tokens": {}, "serials": {}}
        return
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    with open(f"{path}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX if write else fcntl.LOCK_SH)
        try:
            with open(path) as existing:
                ledger = json.load(existing)
        except FileNotFoundError:
            ledger = {"tokens": {}, "serials": {}}
        yield ledger
        if not write:
            return
        fd = os.open(f"{path}.new", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as new:
            json.dump(ledger, new, indent=1, sort_keys=True)
        os.replace(f"{path}.new", path)


def _live_tokens() -> dict:
    text = ""
    path = _snap_path(_sub("_constants").CLUSTER_TOKENS)
    if __salt__["file.file_exists"](path):
        text = __salt__["file.read"](path)
    return _sub("_ha").parse_cluster_tokens(text)


def _published(entry: dict) -> dict:
    return {key: entry[key] for key in ("urls", "serial", "worker", "expires")}


def join_tokens() -> dict:
    """
    The mine function of the join protocol: ``{joiner_id: {"urls", "serial", "worker",
    "expires"}}``, the tokens this master issued and not yet withdrawn. The URLs carry the
    tokens; the pillar limits who may read them from the mine.
    """
    with _ledger(write=False) as ledger:
        return {joiner: _published(entry) for joiner, entry in ledger["tokens"].items()}


def _issue(ledger: dict, joiner: str, worker: bool, ttl: int) -> dict:
    issued = add_node(ttl=ttl)
    serial = ledger["serials"].get(joiner, 0) + 1
    ledger["serials"][joiner] = serial
    ledger["tokens"][joiner] = {
        "token": issued["token"].split("/", 1)[0],
        "urls": issued["urls"],
        "serial": serial,
        "worker": worker,
        "expires": None if ttl == _sub("_constants").SINGLE_USE_TTL else int(time.time()) + ttl,
    }
    return _published(ledger["tokens"][joiner])


def pending_joiners() -> list[str]:
    """The expected joiners (pillar) whose address the cluster does not know yet, in order."""
    roles = node_roles()
    known = set(_member_hosts())
    known.update(node["address"] for node in nodes() if node["address"])
    return [joiner for joiner in roles["joiners"] if roles["addresses"][joiner] not in known]


def join_token_plan() -> dict:
    """
    What ``join_tokens_published`` would do, without doing it: ``{"issue": [joiners without a
    live token], "withdraw": [joiners holding a token who need none], "serials": {joiner:
    serial}}``. Read-only.
    """
    pending = pending_joiners()
    live = _live_tokens()
    now = time.time()
    with _ledger(write=False) as ledger:
        held = ledger["tokens"]
        return {
            "issue": [
                j for j in pending if j not in held or not _sub("_ha").token_is_live(held[j]["token"], live, now)
            ],
            "withdraw": sorted(j for j in held if j not in pending),
            "serials": {j: entry["serial"] for j, entry in held.items()},
        }


def issue_join_tokens(joiners: list[str], withdraw: list[str] | None = None, ttl: int = -1) -> dict:
    """
    Issues a fresh token for each of ``joiners`` and withdraws the tokens of ``withdraw``;
    returns ``{joiner: serial or None (withdrawn)}``. The caller publishes them (mine.update).
    """
    roles = node_roles()
    unexpected = [j for j in joiners if j not in roles["joiners"]]
    if unexpected:
        raise CommandExecutionError(f"not expected joiners according to pillar microk8s:nodes: {unexpected}")
    result = {}
    with _ledger() as ledger:
        for joiner in withdraw or []:
            ledger["tokens"].pop(joiner, None)
            result[joiner] = None
        for joiner in joiners:
            result[joiner] = _issue(ledger, joiner, roles["joiners"][joiner], int(ttl))["serial"]
    return result


def renew_join_token(joiner: str, reason: str, serial: int | None = None) -> dict:
    """
    Called on the master (by the Salt master's reactor, with the minion id that fired the
    event) when ``joiner`` has no usable token, for ``reason``:

    - ``no-token``: none is published for it (a rebuilt node the master counts as joined); a
      dqlite member still at its pillar address is removed first (the rehearsal's -replace of a
      voter found the mine withholding its token otherwise), then a token is issued unless it
      holds a live one, which is published again;
    - ``already-known``: the joiner was rebuilt; its old dqlite member, found at the joiner's
      pillar address (never an address the event names), is removed first;
    - ``hostname-unresolved``: the master's /etc/hosts (``core.hosts``, from the mine) is
      refreshed first;
    - after those and ``invalid-token``, a new token is issued, since microk8s consumed the
      failed one (or it expired).

    A failure report for a ``serial`` older than the current token is a duplicate: nothing
    happens. Returns ``{"joiner", "serial", "renewed", "forgot", "hosts"}``.
    """
    roles = node_roles()
    if __opts__["id"] != roles["master"]:
        raise CommandExecutionError(f"{__opts__['id']} is not the microk8s master ({roles['master']})")
    if joiner not in roles["joiners"]:
        raise CommandExecutionError(f"{joiner} is not an expected joiner according to pillar microk8s:nodes")
    ha = _sub("_ha")
    if reason not in (*ha.RENEWABLE, ha.MISSING):
        raise CommandExecutionError(
            f"a token is only renewed after {', '.join(ha.RENEWABLE)} or {ha.MISSING}, not {reason!r}"
        )
    result = {"joiner": joiner, "renewed": False, "forgot": False, "hosts": False}
    with _ledger() as ledger:
        current = ledger["tokens"].get(joiner)
        if reason == ha.MISSING:
            renew = not (current and ha.token_is_live(current["token"], _live_tokens(), time.time()))
        else:
            renew = not (current and serial is not None and current["serial"] > int(serial))
        if renew:
            address = roles["addresses"][joiner]
            # A joiner asks only when it is not in a cluster itself: a member at its address is
            # what is left of the machine it replaced, and while the cluster knows that address
            # the mine publishes no token for it (pending_joiners).
            if reason == "already-known" or (reason == ha.MISSING and address in _member_hosts()):
                result["forgot"] = _forget(address)
            if reason == "hostname-unresolved":
                refreshed = __salt__["state.sls"]("core.hosts", queue=True)
                result["hosts"] = all(state.get("result") for state in (refreshed or {}).values())
            ttl = __salt__["pillar.get"]("microk8s:join:token_ttl", _sub("_constants").SINGLE_USE_TTL)
            current = _issue(ledger, joiner, roles["joiners"][joiner], int(ttl))
        result.update(serial=current["serial"], renewed=renew)
    if renew or reason == ha.MISSING:
        __salt__["mine.update"]()
    return result


def forget_node(address: str) -> bool:
    """
    Removes the node at private ``address`` from the cluster, whether it is a dqlite member
    (control plane) or only a Kubernetes node (worker): the scale-down of a departed node,
    run on the master before its machine is deleted. True if something was removed, False if
    the cluster knew no node there. CLI Example: ``salt k8s-master.* microk8s.forget_node 10.1.0.102``
    """
    if _forget(address):
        return True
    names = [node["name"] for node in nodes() if node["address"] == address]
    for name in names:
        remove_node(name, force=True)
    return bool(names)


def _forget(address: str) -> bool:
    """
    Removes the dqlite member (and Kubernetes node) at ``address``. microk8s' remove-node exits 1
    when the node is in dqlite but not in Kubernetes, even after removing it, so the outcome is
    judged by the members afterwards.
    """
    if address not in _member_hosts():
        return False
    try:
        remove_node(address, force=True)
    except CommandExecutionError:
        if address in _member_hosts():
            raise
    return True


# The joiner's side of the join protocol.


def classify_error(message: str) -> dict:
    """
    What a failed join means and what to do about it: ``{"kind", "action"}``, where action is
    ``renew`` (the token is spent: ask the master for a new one), ``wait`` (the master is not
    ready: retry later) or ``fail`` (retrying cannot help).
    """
    ha = _sub("_ha")
    kind = ha.classify_error(message)
    action = "renew" if kind in ha.RENEWABLE else "wait" if kind in ha.TRANSIENT else "fail"
    return {"kind": kind, "action": action}


def published_token(master: str, master_address: str | None = None) -> dict | None:
    """
    This node's entry in ``master``'s published join tokens (the mine), with the URL that
    reaches the master at ``master_address``: ``{"url", "serial", "worker"}``, or None while the
    master has published nothing for this node.
    """
    constants = _sub("_constants")
    entry = ((__salt__["mine.get"](master, constants.MINE_FUNCTION) or {}).get(master) or {}).get(__opts__["id"])
    if not entry:
        return None
    return {
        "url": _sub("_ha").url_for(entry["urls"], master_address),
        "serial": entry["serial"],
        "worker": entry["worker"],
    }


def request_token_renewal(master: str, reason: str, serial: int) -> bool:
    """
    Asks ``master`` for a new join token after a failed join of kind ``reason``: an event the
    Salt master's reactor turns into ``renew_join_token`` on the master, with this minion's id.
    Publishes this node's addresses first, so a master refreshing its hosts file can find them.
    """
    if reason == "hostname-unresolved":
        __salt__["mine.update"]()
    data = {"master": master, "reason": reason, "serial": int(serial)}
    return bool(__salt__["event.send"](_sub("_constants").RENEW_TAG, data))
