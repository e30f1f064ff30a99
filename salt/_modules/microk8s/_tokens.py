"""
The issuer's side of the join protocol, after microk8s' add_token.py and the cluster agent's
token checks (canonical/microk8s-cluster-agent): one add-node token per expected joiner, the
root-only ledger of issued tokens in Salt's cachedir, the mine function's data, and renewal of a
token a joiner reports spent. The issuer is the master, or while the master stands alone (it
was rebuilt) the first voter still in the cluster (``_membership.issuer``); "master" below
means the issuer.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import ssl
import time

import yaml
from salt.exceptions import CommandExecutionError

from . import _cli, _membership
from . import _constants as constants


def parse_add_node(text: str) -> dict:
    """``{"token": "<token>/<check>", "urls": ["ip:port/token/check", ...]}`` from --format json or yaml."""
    stripped = text.strip()
    data = json.loads(stripped) if stripped.startswith("{") else yaml.safe_load(stripped)
    return {"token": str(data["token"]), "urls": [str(u) for u in data.get("urls") or []]}


def parse_cluster_tokens(text: str) -> dict[str, int | None]:
    """
    $SNAP_DATA/credentials/cluster-tokens.txt: one ``<token>`` (single-use) or
    ``<token>|<expiry epoch>`` (reusable until then) per line, as add_token.py writes them.
    """
    tokens: dict[str, int | None] = {}
    for line in text.splitlines():
        token, _, expiry = line.strip().partition("|")
        if token:
            tokens[token] = int(expiry) if expiry.strip().isdigit() else None
    return tokens


def token_is_live(token: str, tokens: dict[str, int | None], now: float) -> bool:
    """True while microk8s still accepts ``token`` and it does not expire within the margin."""
    if token not in tokens:
        return False
    expiry = tokens[token]
    return expiry is None or expiry > now + constants.TOKEN_EXPIRY_MARGIN


def check_ttl(ttl) -> int:
    """``ttl`` as microk8s' add-node takes it; raises naming the pillar key unless -1 or long enough."""
    try:
        value = int(ttl)
    except (TypeError, ValueError):
        value = None
    if (
        value is None
        or isinstance(ttl, bool)
        or (value != constants.SINGLE_USE_TTL and value < constants.MIN_TOKEN_TTL)
    ):
        raise CommandExecutionError(
            f"pillar microk8s:join:token_ttl must be -1 (single-use) or at least {constants.MIN_TOKEN_TTL} seconds "
            f"(a token expiring within {constants.TOKEN_EXPIRY_MARGIN} s is renewed on every run), got {ttl!r}"
        )
    return value


def certificate_check(pem: str) -> str:
    """add_token.py's ``check`` of a certificate: the first 12 hex digits of the SHA-256 of its DER form."""
    try:
        der = ssl.PEM_cert_to_DER_cert(pem)
    except ValueError as error:
        raise CommandExecutionError(f"{constants.SERVER_CERT} is not a PEM certificate: {error}") from None
    return hashlib.sha256(der).hexdigest()[: constants.CHECK_LENGTH]


def server_check(salt: dict) -> str | None:
    """The check of this node's server.crt now (server_cert_check in microk8s' utils.sh), or None without one."""
    path = _cli.snap_path(salt, constants.SERVER_CERT)
    return certificate_check(salt["file.read"](path)) if salt["file.file_exists"](path) else None


def url_check(url: str) -> str | None:
    """The fingerprint part of a join URL ``<ip>:<port>/<token>/<check>``, or None."""
    parts = url.split("/")
    return parts[2] if len(parts) == 3 else None


def with_check(url: str, check: str) -> str:
    """``url`` naming certificate ``check`` instead of the one it names."""
    return "/".join([*url.split("/")[:2], check])


def current_urls(entry: dict, check: str | None) -> bool:
    """True when every URL of a ledger entry names ``check`` (or the check is unknown)."""
    return check is None or all(url_check(url) == check for url in entry["urls"])


def add_node(salt: dict, token: str | None = None, ttl: int = constants.SINGLE_USE_TTL) -> dict:
    args = ["add-node", "--format", "json", "--token-ttl", str(ttl)]
    if token:
        args += ["--token", token]
    return parse_add_node(_cli.run(salt, *args))


@contextlib.contextmanager
def _ledger(opts: dict, write: bool = True):
    """
    The issued tokens, ``{"tokens": {joiner: entry}, "serials": {joiner: n}}``, locked for the
    duration (the highstate and reactor-run renewals may touch it at the same time) and saved
    afterwards unless ``write`` is False.
    """
    path = os.path.join(opts["cachedir"], constants.LEDGER)
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


def _live_tokens(salt: dict) -> dict:
    text = ""
    path = _cli.snap_path(salt, constants.CLUSTER_TOKENS)
    if salt["file.file_exists"](path):
        text = salt["file.read"](path)
    return parse_cluster_tokens(text)


def _published(entry: dict) -> dict:
    return {key: entry[key] for key in ("urls", "serial", "worker", "expires")}


def join_tokens(opts: dict) -> dict:
    """The mine function's data: ``{joiner: {"urls", "serial", "worker", "expires"}}``."""
    with _ledger(opts, write=False) as ledger:
        return {joiner: _published(entry) for joiner, entry in ledger["tokens"].items()}


def _issue(salt: dict, ledger: dict, joiner: str, worker: bool, ttl: int, check: str | None, live: dict) -> dict:
    """
    A new serial for ``joiner``: its unspent token republished with the certificate's current
    ``check`` when only the URL is stale (server.crt was refreshed; no second live token is
    left behind), else a new token from add-node.
    """
    current = ledger["tokens"].get(joiner)
    if current and token_is_live(current["token"], live, time.time()) and not current_urls(current, check):
        entry = {**current, "urls": [with_check(url, check) for url in current["urls"]]}
    else:
        issued = add_node(salt, ttl=ttl)
        entry = {
            "token": issued["token"].split("/", 1)[0],
            "urls": issued["urls"],
            "worker": worker,
            "expires": None if ttl == constants.SINGLE_USE_TTL else int(time.time()) + ttl,
        }
    entry["serial"] = ledger["serials"].get(joiner, 0) + 1
    ledger["serials"][joiner] = entry["serial"]
    ledger["tokens"][joiner] = entry
    return _published(entry)


def usable(entry: dict | None, live: dict, now: float, check: str | None) -> bool:
    """A ledger entry a joiner can use: its token unspent and not expiring, its URLs naming today's certificate."""
    return bool(entry) and token_is_live(entry["token"], live, now) and current_urls(entry, check)


def pending_joiners(salt: dict, opts: dict) -> list[str]:
    """
    The nodes that join through this node's tokens (every pillar node but this one) whose
    address neither dqlite nor Kubernetes knows, in order.
    """
    roles = _membership.node_roles(salt)
    known = set(_membership.member_hosts(salt))
    known.update(address for node in _membership.nodes(salt) for address in node["addresses"])
    return [j for j in _membership.joiners_of(roles, opts["id"]) if roles["addresses"][j] not in known]


def _must_issue(salt: dict, opts: dict) -> None:
    issuer = _membership.issuer(salt)
    if issuer != opts["id"]:
        raise CommandExecutionError(f"{opts['id']} does not issue join tokens: {issuer} does")


def join_token_plan(salt: dict, opts: dict, ttl: int = constants.SINGLE_USE_TTL) -> dict:
    """
    ``{"issuer", "issue": [pending joiners without a usable token], "withdraw": [holders who
    need none], "serials"}``. A token is usable while unspent, not expiring and published with
    the check of today's server.crt (certificates.sls refreshes it when the floating IP
    changes). On a node that is not the issuer (``_membership.issuer``) nothing is issued and
    every token it holds is withdrawn. Raises when ``ttl``, the one the tokens would be issued
    with, is too short (``check_ttl``).
    """
    check_ttl(ttl)
    issuer = _membership.issuer(salt)
    if issuer != opts["id"]:
        with _ledger(opts, write=False) as ledger:
            held = ledger["tokens"]
            return {
                "issuer": issuer,
                "issue": [],
                "withdraw": sorted(held),
                "serials": {j: entry["serial"] for j, entry in held.items()},
            }
    pending = pending_joiners(salt, opts)
    live = _live_tokens(salt)
    now = time.time()
    check = server_check(salt)
    with _ledger(opts, write=False) as ledger:
        held = ledger["tokens"]
        return {
            "issuer": issuer,
            "issue": [j for j in pending if not usable(held.get(j), live, now, check)],
            "withdraw": sorted(j for j in held if j not in pending),
            "serials": {j: entry["serial"] for j, entry in held.items()},
        }


def issue_join_tokens(salt: dict, opts: dict, joiners: list[str], withdraw: list[str] | None, ttl: int) -> dict:
    """
    ``{joiner: new serial, or None for a withdrawn token}``; refuses joiners the pillar does
    not expect, and issuing anything on a node that is not the issuer.
    """
    roles = _membership.node_roles(salt)
    expected = _membership.joiners_of(roles, opts["id"])
    unexpected = [j for j in joiners if j not in expected]
    if unexpected:
        raise CommandExecutionError(f"not expected joiners according to pillar microk8s:nodes: {unexpected}")
    ttl = check_ttl(ttl)
    if joiners:
        _must_issue(salt, opts)
    check = server_check(salt)
    live = _live_tokens(salt)
    result = {}
    with _ledger(opts) as ledger:
        for joiner in withdraw or []:
            ledger["tokens"].pop(joiner, None)
            result[joiner] = None
        for joiner in joiners:
            result[joiner] = _issue(salt, ledger, joiner, expected[joiner], ttl, check, live)["serial"]
    return result


def renew_join_token(salt: dict, opts: dict, joiner: str, reason: str, serial: int | None) -> dict:
    """
    On the issuer (refused elsewhere), for ``joiner`` (the minion that fired the renewal
    event), after ``reason``:

    - ``no-token``: none is published for it (a rebuilt node the master counts as joined); a
      dqlite member still at its pillar address is removed first (the rehearsal's -replace of a
      voter found the mine withholding its token otherwise), then a token is issued unless it
      holds a live one, which is published again;
    - ``already-known``: the joiner was rebuilt; its old dqlite member, found at the joiner's
      pillar address (never an address the event names), is removed first;
    - ``hostname-unresolved``: the master's /etc/hosts (``core.hosts``, from the mine) is
      refreshed first;
    - after those, ``invalid-token`` and ``dqlite-unavailable``, a new token is issued, since
      microk8s consumed the failed one (or it expired);
    - ``fingerprint-mismatch``: the token is unspent but its URL names an older server.crt: it
      is republished with today's check (a new serial, the same token).

    A member is only forgotten while its Kubernetes node is not Ready (``forget_member``), so a
    report from a node that misread its own membership cannot remove a healthy voter.

    A failure report for a ``serial`` older than the current token is a duplicate: nothing
    happens. Returns ``{"joiner", "serial", "renewed", "forgot", "hosts"}``.
    """
    roles = _membership.node_roles(salt)
    expected = _membership.joiners_of(roles, opts["id"])
    if joiner not in expected:
        raise CommandExecutionError(f"{joiner} is not an expected joiner according to pillar microk8s:nodes")
    if reason not in (*constants.RENEWABLE, constants.MISSING):
        raise CommandExecutionError(
            f"a token is only renewed after {', '.join(constants.RENEWABLE)} or {constants.MISSING}, not {reason!r}"
        )
    ttl = check_ttl(salt["pillar.get"]("microk8s:join:token_ttl", constants.SINGLE_USE_TTL))
    _must_issue(salt, opts)
    check = server_check(salt)
    result = {"joiner": joiner, "renewed": False, "forgot": False, "hosts": False}
    with _ledger(opts) as ledger:
        current = ledger["tokens"].get(joiner)
        live = _live_tokens(salt)
        if reason == constants.MISSING:
            renew = not usable(current, live, time.time(), check)
        else:
            renew = not (current and serial is not None and current["serial"] > int(serial))
        if renew:
            address = roles["addresses"][joiner]
            # A joiner asks only when it is not in a cluster itself: a member at its address is
            # what is left of the machine it replaced, and while the cluster knows that address
            # the mine publishes no token for it (pending_joiners).
            stale = reason == "already-known" or (
                reason == constants.MISSING and address in _membership.member_hosts(salt)
            )
            if stale:
                result["forgot"] = _membership.forget_member(salt, address, keep_ready=True)
            if reason == "hostname-unresolved":
                refreshed = salt["state.sls"]("core.hosts", queue=True)
                result["hosts"] = all(state.get("result") for state in (refreshed or {}).values())
            current = _issue(salt, ledger, joiner, expected[joiner], ttl, check, live)
        result.update(serial=current["serial"], renewed=renew)
    if renew or reason == constants.MISSING:
        salt["mine.update"]()
    return result
