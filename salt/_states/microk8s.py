"""
State module for microk8s, over the ``microk8s`` execution module. Each state checks first: when
the node is already right it reports ``result=True`` with no changes (in test mode too); in test
mode it reports ``result=None`` with the changes it would make; otherwise it acts and reports
``{"old": ..., "new": ...}``. One skeleton does this for every state (``_converge``, and
``_converge_nodes`` for a state over every node); each state gives only its own steps and words.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable
from typing import Any

from salt.exceptions import CommandExecutionError

# The execution module's _constants.MINE_FUNCTION: Salt loads state modules apart from the
# execution module's package, so they cannot import it.
MINE_FUNCTION = "microk8s.join_tokens"

__virtualname__ = "microk8s"


def __virtual__():
    if "microk8s.status" in __salt__:
        return __virtualname__
    return (False, "the microk8s state module needs the microk8s execution module (and its binary)")


def _ret(name: str, **fields) -> dict:
    return {"name": name, "result": False, "changes": {}, "comment": "", **fields}


class _Refused(Exception):
    """Raised by a state's ``compare``: the node must not be changed; the state fails with this comment."""


class _Unfinished(Exception):
    """
    Raised by a state's action that changed the node but could not finish (kubelite not back
    after new arguments, some of several nodes failing): the state fails with this comment,
    reporting ``changes``, or the changes it predicted when None.
    """

    def __init__(self, comment: str, changes: dict | None = None):
        super().__init__(comment)
        self.changes = changes


def _say(text: str | Callable[..., str], *values) -> str:
    """A comment: fixed text, or made from what the state read (and what its action returned)."""
    return text(*values) if callable(text) else text


def _converge(
    name: str,
    *,
    read: Callable[[], Any],
    compare: Callable[[Any], str | None],
    changes: Callable[[Any], dict],
    would: str | Callable[[Any], str],
    act: Callable[[Any], Any],
    did: str | Callable[[Any, Any], str],
    unreadable: str | None = "",
    failed: str = "",
    verify: Callable[[Any], str | None] | None = None,
    report: Callable[[Any, Any], dict] | None = None,
) -> dict:
    """
    The skeleton of every state here, read -> compare -> test -> act -> verify -> report:

    - ``read()``: what the node has now (``current``). A CommandExecutionError fails the state,
      its comment ``unreadable`` and the error (``unreadable=None``: Salt gets the error);
    - ``compare(current)``: the comment when nothing needs doing (result True), else None; it
      raises _Refused when the node must not be changed;
    - ``changes(current)``: the changes predicted, which test mode reports (result None, comment
      ``would``);
    - ``act(current)`` makes them and returns what ``verify`` and ``report`` read (``after``). A
      CommandExecutionError fails the state, its comment ``failed`` and the error, with no
      changes; _Unfinished fails it with the changes made;
    - ``verify(after)``, outside the action's error handling: why the action did not take (the
      state fails, with no changes), or None. It may complete the action (publish to the mine);
    - the report: result True, the changes ``report(current, after)`` (those the action made)
      or else the prediction, and the comment ``did``.

    ``would`` is text or a function of ``current``; ``did`` text or a function of ``current``
    and ``after``.
    """
    ret = _ret(name)
    try:
        current = read()
    except CommandExecutionError as error:
        if unreadable is None:
            raise
        ret["comment"] = f"{unreadable}{error}"
        return ret
    try:
        settled = compare(current)
    except _Refused as refusal:
        ret["comment"] = str(refusal)
        return ret
    if settled is not None:
        ret.update(result=True, comment=settled)
        return ret
    predicted = changes(current)
    if __opts__["test"]:
        ret.update(result=None, changes=predicted, comment=_say(would, current))
        return ret
    try:
        after = act(current)
    except _Unfinished as unfinished:
        ret.update(changes=predicted if unfinished.changes is None else unfinished.changes, comment=str(unfinished))
        return ret
    except CommandExecutionError as error:
        ret["comment"] = f"{failed}{error}"
        return ret
    problem = None if verify is None else verify(after)
    if problem is not None:
        ret["comment"] = problem
        return ret
    made = predicted if report is None else report(current, after)
    ret.update(result=True, changes=made, comment=_say(did, current, after))
    return ret


def _converge_value(name: str, key: str, wanted, *, already: str, **steps) -> dict:
    """``_converge`` for one value that must equal ``wanted``: changes ``{key: {"old", "new"}}``."""
    return _converge(
        name,
        compare=lambda current: already if current == wanted else None,
        changes=lambda current: {key: {"old": current, "new": wanted}},
        **steps,
    )


def _change(plan: dict) -> dict:
    return {"old": plan["old"], "new": plan["new"]}


def _converge_nodes(
    name: str,
    *,
    read: Callable[[], dict],
    unreadable: str,
    settled: Callable[[dict], str],
    act: Callable[[dict], dict],
    would: str,
    failed: str,
    did: str,
    note: Callable[[dict], str] = lambda _plans: "",
) -> dict:
    """
    ``_converge`` over the Kubernetes nodes: ``read()`` gives ``{id: plan}``, each plan with
    ``changed`` and the node's ``old`` and ``new``. With no plan changed, the comment is
    ``settled(plans)``. Otherwise ``act(plan)`` changes each node whose plan changed, in order,
    and returns its ``{"old", "new"}``; a node that fails does not stop the others, and the state
    fails naming every failure, reporting the nodes done. ``would``, ``failed`` and ``did`` are
    followed by the nodes (or the failures); ``did`` then by ``note(plans)``.
    """

    def pending(plans: dict) -> list[str]:
        return [node for node, plan in plans.items() if plan["changed"]]

    def act_on_each(plans: dict) -> dict:
        done, failures = {}, []
        for node in pending(plans):
            try:
                done[node] = act(plans[node])
            except CommandExecutionError as error:
                failures.append(f"{node}: {error}")
        if failures:
            raise _Unfinished(failed + "; ".join(failures), done)
        return done

    return _converge(
        name,
        read=read,
        unreadable=unreadable,
        compare=lambda plans: None if pending(plans) else settled(plans),
        changes=lambda plans: {node: _change(plans[node]) for node in pending(plans)},
        would=lambda plans: would + ", ".join(pending(plans)),
        act=act_on_each,
        report=lambda _plans, done: done,
        did=lambda plans, _done: did + ", ".join(pending(plans)) + note(plans),
    )


def running(name: str = "microk8s", timeout: int = 300) -> dict:
    """
    Ensures microk8s is running and ready.

    .. code-block:: yaml

        microk8s-running:
          microk8s.running: []
    """

    def start(_stopped) -> None:
        __salt__["microk8s.start"]()
        # A worker has no status of its own to wait on; the control plane reports its readiness.
        if not __salt__["microk8s.is_worker"]():
            __salt__["microk8s.wait_ready"](timeout)

    return _converge(
        name,
        read=__salt__["microk8s.is_running"],
        unreadable=None,
        compare=lambda started: "microk8s is already running" if started else None,
        changes=lambda _started: {"running": {"old": False, "new": True}},
        would="microk8s would be started",
        act=start,
        failed="microk8s could not be started: ",
        did="microk8s started",
    )


def _addon(name: str, wanted: str, args: list[str] | None) -> dict:
    def switch(_current) -> str:
        if wanted == "enabled":
            __salt__["microk8s.enable"](name, args)
        else:
            __salt__["microk8s.disable"](name)
        return __salt__["microk8s.addon_status"](name)

    return _converge_value(
        name,
        name,
        wanted,
        already=f"addon {name} is already {wanted}",
        read=lambda: __salt__["microk8s.addon_status"](name),
        would=f"addon {name} would be {wanted}",
        act=switch,
        failed=f"addon {name} could not be {wanted}: ",
        verify=lambda after: (
            None if after == wanted else f"addon {name} is still {after} after microk8s reported success"
        ),
        did=f"addon {name} {wanted}",
    )


def addon_enabled(name: str, args: list[str] | None = None) -> dict:
    """
    Ensures an addon is enabled, with optional arguments (``dns`` with ``args: [1.1.1.1]``).

    .. code-block:: yaml

        microk8s-addon-dns:
          microk8s.addon_enabled:
            - name: dns
    """
    return _addon(name, "enabled", args)


def addon_disabled(name: str) -> dict:
    """Ensures an addon is disabled."""
    return _addon(name, "disabled", None)


def extra_sans(name: str, addresses: list[str]) -> dict:
    """
    Ensures the API server certificate's template lists exactly ``addresses`` (IPv4: every
    address clients reach the API at, the master's floating IP first) as its extra SANs, in
    order, replacing, adding and removing the lines it manages. Watch it to refresh the
    certificate.

    .. code-block:: yaml

        microk8s-certificates-microk8s-extra-sans:
          microk8s.extra_sans:
            - addresses: [203.0.113.10, 203.0.113.20, 10.1.0.5]
    """
    if not isinstance(addresses, (list, tuple)):
        return _ret(name, comment=f"addresses must be a list of IPv4 addresses, not {addresses!r}")
    wanted = list(addresses)
    listed = ", ".join(map(str, wanted))
    return _converge_value(
        name,
        "extra_sans",
        wanted,
        already=f"the extra SANs are already {listed}",
        read=__salt__["microk8s.extra_sans"],
        unreadable="the certificate template cannot be read: ",
        would=f"the extra SANs would become {listed}",
        act=lambda _current: __salt__["microk8s.config_set_extra_sans"](wanted),
        failed=f"the extra SANs could not be set to {listed}: ",
        did=f"the extra SANs are {listed}",
    )


def _kubelite_argument(
    name: str, wanted, shown: str, key: str, words: tuple[str, str, str], calls: tuple, timeout: int
) -> dict:
    """
    A state over one of kubelite's arguments: ``calls`` (execution module functions, and what the
    writer takes: the state's own argument) reads it and writes ``wanted``; only a change
    restarts kubelite (it reads its arguments only when it starts), and the state waits until the
    node is back. ``words``: the component, its verb now and as a prediction ("the kubelet",
    "runs with", "would run with"), for the comments; ``shown``: ``wanted`` as they say it.
    """
    component, verb, predicted = words
    read, write, argument = calls

    def write_and_restart(_current) -> None:
        __salt__[write](argument)
        try:
            __salt__["microk8s.restart_kubelite"](timeout)
        except CommandExecutionError as error:
            raise _Unfinished(f"{component}'s arguments say {shown}, but kubelite is not back: {error}") from None

    return _converge_value(
        name,
        key,
        wanted,
        already=f"{component} already {verb} {shown}",
        read=__salt__[read],
        unreadable=f"{component}'s arguments cannot be read: ",
        would=f"{component} {predicted} {shown} (kubelite restarted)",
        act=write_and_restart,
        failed=f"{component}'s arguments could not be written: ",
        did=f"{component} {verb} {shown} (kubelite restarted)",
    )


def kubelet_external_cloud_provider(name: str, external: bool = False, timeout: int = 300) -> dict:
    """
    Ensures the kubelet runs with ``--cloud-provider=external`` (``external``: an external cloud
    controller manager owns the node's addresses) or without the flag, in $SNAP_DATA/args/kubelet.
    Only a change restarts kubelite (it reads the file only when it starts), and the state waits
    until the node is back.

    .. code-block:: yaml

        microk8s-kubelet-microk8s-kubelet-external-cloud-provider:
          microk8s.kubelet_external_cloud_provider:
            - external: true
    """
    if not isinstance(external, bool):
        return _ret(name, comment=f"external must be true or false, not {external!r}")
    shown = "--cloud-provider=external" if external else "no --cloud-provider"
    words = ("the kubelet", "runs with", "would run with")
    calls = ("microk8s.kubelet_cloud_provider", "microk8s.set_kubelet_external_cloud_provider", external)
    return _kubelite_argument(name, "external" if external else None, shown, "cloud_provider", words, calls, timeout)


def apiserver_advertise_address(name: str, address: str, timeout: int = 300) -> dict:
    """
    Ensures the API server advertises ``address`` (``--advertise-address`` in
    $SNAP_DATA/args/kube-apiserver): the endpoint of the ``kubernetes`` Service that pods and
    kubelets reach it at. Without it, kube-apiserver advertises the default route's address, the
    public one on the dual-homed master. Only a change restarts kubelite, and the state waits
    until the node is back.

    .. code-block:: yaml

        microk8s-apiserver-microk8s-apiserver-advertise-address:
          microk8s.apiserver_advertise_address:
            - address: 10.1.0.10
    """
    try:
        if ipaddress.ip_address(address).version != 4:
            raise ValueError(address)
    except ValueError:
        return _ret(name, comment=f"address must be the node's IPv4 address, not {address!r}")
    words = ("the API server", "advertises", "would advertise")
    calls = ("microk8s.apiserver_advertise_address", "microk8s.set_apiserver_advertise_address", address)
    return _kubelite_argument(name, address, address, "advertise_address", words, calls, timeout)


def channel_tracked(name: str) -> dict:
    """
    Ensures an installed microk8s tracks channel ``name`` (``snap refresh --channel``). Run by
    orch.upgrade on one node at a time, between draining it and waiting for it to be Ready; a
    node without the snap is left to microk8s.install.

    .. code-block:: yaml

        microk8s-upgrade-microk8s-channel-tracked:
          microk8s.channel_tracked:
            - name: 1.35/stable
    """

    def tracked(current: dict | None) -> str | None:
        if current is None:
            return f"microk8s is not installed; microk8s.install installs {name}"
        return f"microk8s already tracks {name}" if current["tracking"] == name else None

    return _converge(
        name,
        read=__salt__["microk8s.installed"],
        unreadable="the installed microk8s cannot be read: ",
        compare=tracked,
        changes=lambda current: {"channel": {"old": current["tracking"], "new": name}},
        would=f"microk8s would be refreshed to {name}",
        act=lambda _current: __salt__["microk8s.refresh"](name),
        did=f"microk8s refreshed to {name}",
    )


def refreshes_held(name: str = "microk8s") -> dict:
    """
    Holds snapd's own refreshes of microk8s (``snap refresh --hold microk8s``). snapd refreshes a
    snap within its track up to four times a day, on every node independently, restarting
    kubelite and k8s-dqlite: two voters can be down at once (canonical/microk8s#1022, #3735).
    Held, microk8s changes only when the roll refreshes it, one node at a time
    (``microk8s.channel_tracked``). ``snap refresh --unhold microk8s`` lifts the hold.

    .. code-block:: yaml

        microk8s-install-microk8s-refreshes-held:
          microk8s.refreshes_held: []
    """

    def hold(_held) -> bool:
        __salt__["microk8s.hold_refreshes"]()
        return __salt__["microk8s.refreshes_held"]()

    return _converge(
        name,
        read=__salt__["microk8s.refreshes_held"],
        compare=lambda held: "snapd's own refreshes of microk8s are held" if held else None,
        changes=lambda _held: {"refreshes_held": {"old": False, "new": True}},
        would="snapd's own refreshes of microk8s would be held",
        act=hold,
        verify=lambda held: None if held else "snap refresh --hold microk8s succeeded, but snap list shows no hold",
        did="held snapd's own refreshes of microk8s: only the roll refreshes it",
    )


def join_tokens_published(name: str, ttl: int = -1) -> dict:
    """
    On the issuer (``microk8s.issuer``: the master, or a voter while a rebuilt master stands
    alone): every node of pillar ``microk8s:nodes`` that is not in the cluster yet holds a
    usable join token of its own, and the tokens are published through the mine. Tokens of
    nodes that have joined (or left the pillar) are withdrawn; on any other node, every token it
    holds is. ``ttl=-1`` makes each token single-use; a positive ttl (at least 300) makes it
    reusable for that many seconds. Changes show token serials, never the tokens.

    .. code-block:: yaml

        microk8s-tokens-microk8s-join-tokens-published:
          microk8s.join_tokens_published:
            - ttl: -1
    """
    me = __opts__["id"]

    def read() -> dict:
        plan = __salt__["microk8s.join_token_plan"](ttl)
        published = (__salt__["mine.get"](me, MINE_FUNCTION) or {}).get(me) or {}
        stale_mine = published != __salt__["microk8s.join_tokens"]()
        return {**plan, "stale_mine": stale_mine, "affected": [*plan["issue"], *plan["withdraw"]]}

    def compare(plan: dict) -> str | None:
        if plan["affected"] or plan["stale_mine"]:
            return None
        if plan["issuer"] != me:
            return f"{plan['issuer']} issues the join tokens; this node holds none"
        return "every pending joiner holds a live, published join token"

    def tokens(plan: dict, new: dict) -> dict:
        if not plan["affected"]:
            return {"mine": {"old": "stale", "new": "published"}}
        return {"tokens": {"old": {joiner: plan["serials"].get(joiner) for joiner in plan["affected"]}, "new": new}}

    def predicted(plan: dict) -> dict:
        return tokens(plan, {**{j: "new token" for j in plan["issue"]}, **{j: None for j in plan["withdraw"]}})

    def issue(plan: dict) -> dict:
        new = __salt__["microk8s.issue_join_tokens"](plan["issue"], plan["withdraw"], ttl) if plan["affected"] else {}
        __salt__["mine.update"]()
        return new

    return _converge(
        name,
        read=read,
        unreadable="join tokens cannot be checked: ",
        compare=compare,
        changes=predicted,
        would="join tokens would be issued and published",
        act=issue,
        failed="join tokens could not be issued: ",
        report=tokens,
        did="join tokens issued and published",
    )


def _joined(membership: dict, worker: bool, master_address: str | None) -> bool:
    if worker:
        return membership["role"] == "worker"
    return membership["role"] == "control-plane" and (master_address is None or master_address in membership["members"])


def _role_in_pillar(master: str | None, worker: bool | None, master_address: str | None) -> tuple[str, bool, str]:
    """
    The node whose tokens this node joins with (``master``, or else the issuer the voters'
    memberships name), this node's role and that node's address, as the pillar has them.
    """
    roles = __salt__["microk8s.node_roles"]()
    me = __opts__["id"]
    if me not in roles["addresses"]:
        raise CommandExecutionError(f"{me} is not a node in pillar microk8s:nodes")
    issuer = master or __salt__["microk8s.issuer"]()
    if issuer not in roles["control_plane"]:
        raise CommandExecutionError(f"{issuer} is not a voter in pillar microk8s:control_plane")
    is_worker = me in roles["workers"]
    return issuer, (is_worker if worker is None else worker), (master_address or roles["addresses"][issuer])


def cluster_joined(
    name: str,
    master: str | None = None,
    master_address: str | None = None,
    worker: bool | None = None,
    attempts: int = 8,
    interval: float = 5,
    max_interval: float = 60,
) -> dict:
    """
    Ensures this node has joined the cluster of ``master`` (a minion id), as a worker or as a
    control-plane voter, with the join token ``master`` published for this node in the mine.
    Left out, ``master`` is the issuer (``microk8s.issuer``: the pillar's master, or while it
    stands alone after a rebuild, the first voter still in the cluster), so a rebuilt master
    joins the cluster instead of starting one; on the issuer itself the state has nothing to
    do. ``master_address`` picks the issuer's URL on the private network and confirms
    control-plane membership. Left out, ``worker`` and ``master_address`` come from the pillar
    (``microk8s.node_roles``: ``microk8s:control_plane`` are the voters, the rest workers).
    Checks first, predicts in test mode, then joins through ``microk8s.join_cluster``
    (``attempts`` joins with exponential backoff from ``interval`` to ``max_interval`` seconds,
    renewing spent tokens through the issuer, returning once the membership shows the join) and
    publishes the new membership to the mine.

    .. code-block:: yaml

        microk8s-joined-microk8s-cluster-joined:
          microk8s.cluster_joined: []
    """
    try:
        if master is None or worker is None or master_address is None:
            master, worker, master_address = _role_in_pillar(master, worker, master_address)
    except CommandExecutionError as error:
        return _ret(name, comment=f"this node's role is unknown: {error}")
    if master == __opts__["id"]:
        return _ret(name, result=True, comment="this node issues the join tokens: it has no cluster to join")
    wanted = "worker" if worker else "control-plane"

    def compare(before: dict) -> str | None:
        if _joined(before, worker, master_address):
            return f"already joined {master} as {wanted}"
        if before["role"] != "standalone":
            members = ", ".join(before["members"]) or "its control plane"
            raise _Refused(
                f"this node is already a {before['role']} of another cluster ({members}); "
                f"run microk8s leave on it before it can join {master} as {wanted}"
            )
        return None

    def join(_before) -> None:
        # It returns once the membership shows the join, reading it again while microk8s restarts.
        __salt__["microk8s.join_cluster"](master, master_address, worker, attempts, interval, max_interval)

    def publish(_after) -> None:
        # The voters' memberships in the mine decide who issues tokens (microk8s.issuer).
        __salt__["mine.update"]()

    return _converge(
        name,
        read=__salt__["microk8s.membership"],
        unreadable="cannot tell whether this node is in a cluster: ",
        compare=compare,
        changes=lambda _before: {"cluster": {"old": "standalone", "new": f"{wanted} of {master}"}},
        would=f"would join {master} as {wanted}",
        act=join,
        verify=publish,
        did=f"joined {master} as {wanted}",
    )


def nodes_labelled(name: str) -> dict:
    """
    On a control-plane node (the master, after the cluster check): every Kubernetes node has the
    labels and taints its pillar entry lists (``microk8s:nodes``: ``labels``, a map, and
    ``taints``, ``key=value:Effect`` or ``key:Effect``; an entry without them has none), and
    those kube-on-os set before that the entry no longer lists are gone; labels and taints
    kube-on-os did not set (the kubelet's, microk8s', a cloud controller's, the node lifecycle
    controller's) are never touched. Changes:
    ``{id: {"old": {"labels", "taints"}, "new": {"labels", "taints"}}}`` for the nodes that change.

    .. code-block:: yaml

        microk8s-labels-microk8s-nodes-labelled:
          microk8s.nodes_labelled:
            - name: microk8s:nodes
    """

    def label(plan: dict) -> dict:
        return _change(__salt__["microk8s.label_node"](plan["address"], plan["new"]["labels"], plan["new"]["taints"]))

    return _converge_nodes(
        name,
        read=__salt__["microk8s.label_plan"],
        unreadable="node labels and taints cannot be checked: ",
        settled=lambda plans: f"all {len(plans)} nodes have their labels and taints",
        act=label,
        would="labels and taints would change on ",
        failed="labels and taints could not be applied on ",
        did="labels and taints applied on ",
    )


def provider_ids_set(name: str) -> dict:
    """
    On the master, before the cloud controller manager runs: every Kubernetes node of pillar
    ``microk8s:nodes`` has spec.providerID ``openstack:///<instance_id>`` (its entry's Nova server
    UUID), set with kubectl patch. The API server never changes a set providerID: a node holding
    another one (a machine rebuilt under its name) is named in the comment with what to do, and
    does not fail the state. Changes: ``{id: {"old", "new"}}``.

    .. code-block:: yaml

        microk8s-cloud-provider-microk8s-provider-ids-set:
          microk8s.provider_ids_set:
            - name: microk8s:nodes
    """

    def stale(plans: dict) -> list[str]:
        return [
            f"{plan['node']} keeps {plan['old']} of the machine it replaced (not {plan['new']}): delete the Node "
            "object (microk8s kubectl delete node) and restart its microk8s to register it again"
            for plan in plans.values()
            if plan.get("stale")
        ]

    def note(plans: dict) -> str:
        return "".join(f"; {line}" for line in stale(plans))

    def settled(plans: dict) -> str:
        if stale(plans):
            return f"all {len(plans) - len(stale(plans))} other nodes have their providerID{note(plans)}"
        return f"all {len(plans)} nodes have their providerID"

    def set_provider_id(plan: dict) -> dict:
        __salt__["microk8s.set_provider_id"](plan["node"], plan["new"])
        return _change(plan)

    return _converge_nodes(
        name,
        read=__salt__["microk8s.provider_id_plan"],
        unreadable="providerIDs cannot be set: ",
        settled=settled,
        act=set_provider_id,
        would="providerIDs would be set on ",
        failed="providerIDs could not be set on ",
        did="providerIDs set on ",
        note=note,
    )


def nodes_initialized(name: str, timeout: float = 300, interval: float = 5) -> dict:
    """
    On the master, once the cloud controller manager is applied: it has initialized every node of
    pillar ``microk8s:nodes`` (their zone, region and instance-type labels). It initializes only a
    Node that carries the uninitialized taint, which a kubelet adds only to a Node it creates
    while it runs with --cloud-provider=external; a node registered before (the master, on every
    deployment; every node, when the cloud integration comes to a running cluster) is given that
    taint here, so the controller manager initializes it and removes the taint. Then the state
    waits up to ``timeout`` seconds until no node has the taint. A node still tainted then fails
    the state, named; the taint this state added is removed again from it, so no node is left
    unschedulable by it. Changes: ``{id: {"old", "new"}}``, the labels the node got.

    .. code-block:: yaml

        microk8s-cloud-provider-microk8s-nodes-initialized:
          microk8s.nodes_initialized:
            - name: microk8s:nodes
    """

    def in_state(plans: dict, state: str) -> list[str]:
        return [node for node, plan in plans.items() if plan["state"] == state]

    def compare(plans: dict) -> str | None:
        if in_state(plans, "never") or in_state(plans, "pending"):
            return None
        return f"the cloud controller manager initialized all {len(plans)} nodes"

    def would(plans: dict) -> str:
        never, pending = in_state(plans, "never"), in_state(plans, "pending")
        waited = f"; it has yet to initialize {', '.join(pending)}" if pending else ""
        marked = f"{', '.join(never)} would be tainted for the cloud controller manager to initialize" if never else ""
        return (marked + waited).lstrip("; ")

    def initialize(plans: dict) -> dict:
        never, pending = in_state(plans, "never"), in_state(plans, "pending")
        marked, failed = [], []
        for node in never:
            try:
                __salt__["microk8s.mark_uninitialized"](plans[node]["node"])
            except CommandExecutionError as error:
                failed.append(f"{node}: {error}")
                continue
            marked.append(node)
        try:
            final = __salt__["microk8s.wait_initialized"](timeout, interval)
        except CommandExecutionError as error:
            final, failed = {}, [*failed, f"cannot tell which nodes it initialized: {error}"]
        done = [node for node in marked + pending if (final.get(node) or {}).get("state") == "initialized"]
        labelled = {
            node: {"old": "not initialized", "new": " ".join(f"{k}={v}" for k, v in final[node]["labels"].items())}
            for node in done
        }
        left = [node for node in marked + pending if node not in done]
        untainted = []
        for node in (n for n in left if n in marked):
            try:
                __salt__["microk8s.mark_uninitialized"](plans[node]["node"], False)
            except CommandExecutionError as error:
                failed.append(f"{node}: the taint could not be removed again: {error}")
                continue
            untainted.append(node)
        if left or failed:
            why = []
            if left:
                logs = "microk8s kubectl -n kube-system logs daemonset/openstack-cloud-controller-manager says why"
                back = f"; the taint this state added is removed again from {', '.join(untainted)}" if untainted else ""
                within = f"within {timeout:g} s ({logs}{back})"
                why.append(f"the cloud controller manager did not initialize {', '.join(left)} {within}")
            raise _Unfinished("; ".join(why + failed), labelled)
        return labelled

    return _converge(
        name,
        read=__salt__["microk8s.initialization_plan"],
        unreadable="cannot tell which nodes the cloud controller manager initialized: ",
        compare=compare,
        changes=lambda plans: {
            node: {"old": "registered before the cloud integration", "new": "initialized"}
            for node in in_state(plans, "never")
        },
        would=would,
        act=initialize,
        report=lambda _plans, labelled: labelled,
        did=lambda _plans, labelled: f"the cloud controller manager initialized {', '.join(labelled)}",
    )


def cloud_config_secret(name: str, ignore_volume_az: bool = False, metadata_search_order: str | None = None) -> dict:
    """
    On the master: the Secret kube-system/cloud-config holds, under cloud.conf, what pillar
    ``openstack:cloud`` renders (the application credential among it), and under ca.crt its
    private CA's certificates when it has some, for the cloud controller manager and the Cinder
    CSI driver. The credential is read from the pillar by the execution module, goes to kubectl
    on standard input and appears nowhere in what the state returns: changes show the SHA-256 of
    the old and new content (``{"cloud.conf sha256": {"old", "new"}}``; cloud.conf's alone
    without a CA). ``ignore_volume_az`` and ``metadata_search_order`` are cloud.conf's
    [BlockStorage] ignore-volume-az and [Metadata] search-order (None: CPO's default);
    salt/microk8s/defaults.yaml has kube-on-os' values.

    .. code-block:: yaml

        microk8s-cloud-provider-microk8s-cloud-config-secret:
          microk8s.cloud_config_secret:
            - name: kube-system/cloud-config
    """
    options = {"ignore_volume_az": ignore_volume_az, "metadata_search_order": metadata_search_order}
    return _converge(
        name,
        read=lambda: __salt__["microk8s.cloud_config_plan"](options),
        unreadable="the cloud-config Secret cannot be checked: ",
        compare=lambda plan: None if plan["changed"] else f"{name} holds cloud.conf sha256 {plan['new']}",
        changes=lambda plan: {"cloud.conf sha256": _change(plan)},
        would=lambda plan: f"{name} would hold cloud.conf sha256 {plan['new']}",
        act=lambda _plan: __salt__["microk8s.cloud_config_apply"](options),
        failed="the cloud-config Secret could not be applied: ",
        did=lambda plan, done: f"{name} {done['operation']}: cloud.conf sha256 {plan['new']}",
    )


def _applied(operations: dict) -> dict:
    """The changes of a kubectl apply, ``{ref: operation}``: what it created or configured."""
    return {
        ref: {"old": None if operation == "created" else "present", "new": operation}
        for ref, operation in operations.items()
        if operation != "unchanged"
    }


def manifests_applied(name: str, sources: list[str]) -> dict:
    """
    On the master: the manifests at ``sources`` (salt:// URLs, in order) are applied with
    ``kubectl apply -f -``. What would change comes from the API server's dry run, so a run with
    nothing to change changes nothing. Changes: ``{"<kind>[.<group>]/<name>": {"old": "present" or
    None, "new": "created" | "configured"}}``.

    .. code-block:: yaml

        microk8s-cloud-provider-microk8s-manifests-applied:
          microk8s.manifests_applied:
            - name: cloud-provider-openstack
            - sources:
              - salt://microk8s/files/cloud-provider/csi-cinder-driver.yaml
    """
    return _converge(
        name,
        read=lambda: __salt__["microk8s.manifests_apply"](list(sources), True),
        unreadable=f"the manifests of {name} cannot be checked: ",
        compare=lambda planned: None if _applied(planned) else f"all {len(planned)} objects of {name} are applied",
        changes=_applied,
        would=lambda planned: f"{len(_applied(planned))} objects of {name} would change",
        act=lambda _planned: __salt__["microk8s.manifests_apply"](list(sources)),
        failed=f"the manifests of {name} could not be applied: ",
        report=lambda _planned, applied: _applied(applied),
        did=f"{name} applied",
    )


def default_storage_class(name: str) -> dict:
    """
    On the master: the Cinder StorageClass ``name`` exists and is the cluster's only default
    (annotation storageclass.kubernetes.io/is-default-class); any other default (microk8s'
    hostpath-storage makes microk8s-hostpath one) is annotated ``false``.
    Changes: ``{"storageclass.storage.k8s.io/<name>": {"old", "new"}, "other defaults": {"old":
    [classes], "new": []}}``.

    .. code-block:: yaml

        microk8s-cloud-provider-microk8s-default-storage-class:
          microk8s.default_storage_class:
            - name: cinder
    """

    def changes(plan: dict, applied: dict) -> dict:
        result = _applied(applied)
        if plan["undefault"]:
            result["other defaults"] = {"old": plan["undefault"], "new": []}
        return result

    return _converge(
        name,
        read=lambda: __salt__["microk8s.storage_class_plan"](name),
        unreadable="the default StorageClass cannot be checked: ",
        compare=lambda plan: None if plan["changed"] else f"{name} is the only default StorageClass",
        changes=lambda plan: changes(plan, plan["apply"]),
        would=f"{name} would become the default StorageClass",
        act=lambda _plan: __salt__["microk8s.default_storage_class"](name),
        failed=f"{name} could not be made the default StorageClass: ",
        report=lambda plan, done: changes(plan, done["apply"]),
        did=f"{name} is the default StorageClass",
    )
