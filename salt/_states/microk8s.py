"""
State module for microk8s, over the ``microk8s`` execution module. Each state checks first: when
the node is already right it reports ``result=True`` with no changes (in test mode too); in test
mode it reports ``result=None`` with the changes it would make; otherwise it acts and reports
``{"old": ..., "new": ...}``.
"""

from __future__ import annotations

import ipaddress

from salt.exceptions import CommandExecutionError

# The execution module's _constants.MINE_FUNCTION: Salt loads state modules apart from the
# execution module's package, so they cannot import it.
MINE_FUNCTION = "microk8s.join_tokens"

__virtualname__ = "microk8s"


def __virtual__():
    if "microk8s.status" in __salt__:
        return __virtualname__
    return (False, "the microk8s state module needs the microk8s execution module (and its binary)")


def _ret(name: str) -> dict:
    return {"name": name, "result": False, "changes": {}, "comment": ""}


def running(name: str = "microk8s", timeout: int = 300) -> dict:
    """
    Ensures microk8s is running and ready.

    .. code-block:: yaml

        microk8s-running:
          microk8s.running: []
    """
    ret = _ret(name)
    if __salt__["microk8s.is_running"]():
        ret.update(result=True, comment="microk8s is already running")
        return ret
    changes = {"running": {"old": False, "new": True}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment="microk8s would be started")
        return ret
    try:
        __salt__["microk8s.start"]()
        # A worker has no status of its own to wait on; the control plane reports its readiness.
        if not __salt__["microk8s.is_worker"]():
            __salt__["microk8s.wait_ready"](timeout)
    except CommandExecutionError as error:
        ret["comment"] = f"microk8s could not be started: {error}"
        return ret
    ret.update(result=True, changes=changes, comment="microk8s started")
    return ret


def _addon(name: str, wanted: str, args: list[str] | None) -> dict:
    ret = _ret(name)
    try:
        current = __salt__["microk8s.addon_status"](name)
    except CommandExecutionError as error:
        ret["comment"] = str(error)
        return ret
    if current == wanted:
        ret.update(result=True, comment=f"addon {name} is already {wanted}")
        return ret
    changes = {name: {"old": current, "new": wanted}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"addon {name} would be {wanted}")
        return ret
    try:
        if wanted == "enabled":
            __salt__["microk8s.enable"](name, args)
        else:
            __salt__["microk8s.disable"](name)
        after = __salt__["microk8s.addon_status"](name)
    except CommandExecutionError as error:
        ret["comment"] = f"addon {name} could not be {wanted}: {error}"
        return ret
    if after != wanted:
        ret["comment"] = f"addon {name} is still {after} after microk8s reported success"
        return ret
    ret.update(result=True, changes=changes, comment=f"addon {name} {wanted}")
    return ret


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
    ret = _ret(name)
    if not isinstance(addresses, (list, tuple)):
        ret["comment"] = f"addresses must be a list of IPv4 addresses, not {addresses!r}"
        return ret
    wanted = list(addresses)
    listed = ", ".join(map(str, wanted))
    try:
        current = __salt__["microk8s.extra_sans"]()
    except CommandExecutionError as error:
        ret["comment"] = f"the certificate template cannot be read: {error}"
        return ret
    if current == wanted:
        ret.update(result=True, comment=f"the extra SANs are already {listed}")
        return ret
    changes = {"extra_sans": {"old": current, "new": wanted}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"the extra SANs would become {listed}")
        return ret
    try:
        __salt__["microk8s.config_set_extra_sans"](wanted)
    except CommandExecutionError as error:
        ret["comment"] = f"the extra SANs could not be set to {listed}: {error}"
        return ret
    ret.update(result=True, changes=changes, comment=f"the extra SANs are {listed}")
    return ret


def _kubelite_argument(
    ret: dict, wanted, shown: str, key: str, words: tuple[str, str, str], calls: tuple, timeout: int
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
    try:
        current = __salt__[read]()
    except CommandExecutionError as error:
        ret["comment"] = f"{component}'s arguments cannot be read: {error}"
        return ret
    if current == wanted:
        ret.update(result=True, comment=f"{component} already {verb} {shown}")
        return ret
    changes = {key: {"old": current, "new": wanted}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"{component} {predicted} {shown} (kubelite restarted)")
        return ret
    try:
        __salt__[write](argument)
    except CommandExecutionError as error:
        ret["comment"] = f"{component}'s arguments could not be written: {error}"
        return ret
    try:
        __salt__["microk8s.restart_kubelite"](timeout)
    except CommandExecutionError as error:
        ret.update(changes=changes, comment=f"{component}'s arguments say {shown}, but kubelite is not back: {error}")
        return ret
    ret.update(result=True, changes=changes, comment=f"{component} {verb} {shown} (kubelite restarted)")
    return ret


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
    ret = _ret(name)
    if not isinstance(external, bool):
        ret["comment"] = f"external must be true or false, not {external!r}"
        return ret
    shown = "--cloud-provider=external" if external else "no --cloud-provider"
    words = ("the kubelet", "runs with", "would run with")
    calls = ("microk8s.kubelet_cloud_provider", "microk8s.set_kubelet_external_cloud_provider", external)
    return _kubelite_argument(ret, "external" if external else None, shown, "cloud_provider", words, calls, timeout)


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
    ret = _ret(name)
    try:
        if ipaddress.ip_address(address).version != 4:
            raise ValueError(address)
    except ValueError:
        ret["comment"] = f"address must be the node's IPv4 address, not {address!r}"
        return ret
    words = ("the API server", "advertises", "would advertise")
    calls = ("microk8s.apiserver_advertise_address", "microk8s.set_apiserver_advertise_address", address)
    return _kubelite_argument(ret, address, address, "advertise_address", words, calls, timeout)


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
    ret = _ret(name)
    try:
        current = __salt__["microk8s.installed"]()
    except CommandExecutionError as error:
        ret["comment"] = f"the installed microk8s cannot be read: {error}"
        return ret
    if current is None:
        ret.update(result=True, comment=f"microk8s is not installed; microk8s.install installs {name}")
        return ret
    if current["tracking"] == name:
        ret.update(result=True, comment=f"microk8s already tracks {name}")
        return ret
    changes = {"channel": {"old": current["tracking"], "new": name}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"microk8s would be refreshed to {name}")
        return ret
    try:
        __salt__["microk8s.refresh"](name)
    except CommandExecutionError as error:
        ret["comment"] = str(error)
        return ret
    ret.update(result=True, changes=changes, comment=f"microk8s refreshed to {name}")
    return ret


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
    ret = _ret(name)
    try:
        held = __salt__["microk8s.refreshes_held"]()
    except CommandExecutionError as error:
        ret["comment"] = str(error)
        return ret
    if held:
        ret.update(result=True, comment="snapd's own refreshes of microk8s are held")
        return ret
    changes = {"refreshes_held": {"old": False, "new": True}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment="snapd's own refreshes of microk8s would be held")
        return ret
    try:
        __salt__["microk8s.hold_refreshes"]()
        held = __salt__["microk8s.refreshes_held"]()
    except CommandExecutionError as error:
        ret["comment"] = str(error)
        return ret
    if not held:
        ret["comment"] = "snap refresh --hold microk8s succeeded, but snap list shows no hold"
        return ret
    comment = "held snapd's own refreshes of microk8s: only the roll refreshes it"
    ret.update(result=True, changes=changes, comment=comment)
    return ret


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
    ret = _ret(name)
    me = __opts__["id"]
    try:
        plan = __salt__["microk8s.join_token_plan"](ttl)
        published = (__salt__["mine.get"](me, MINE_FUNCTION) or {}).get(me) or {}
        stale_mine = published != __salt__["microk8s.join_tokens"]()
    except CommandExecutionError as error:
        ret["comment"] = f"join tokens cannot be checked: {error}"
        return ret
    affected = [*plan["issue"], *plan["withdraw"]]
    if not affected and not stale_mine:
        if plan["issuer"] != me:
            ret.update(result=True, comment=f"{plan['issuer']} issues the join tokens; this node holds none")
        else:
            ret.update(result=True, comment="every pending joiner holds a live, published join token")
        return ret
    old = {joiner: plan["serials"].get(joiner) for joiner in affected}

    def changes(new: dict) -> dict:
        return {"tokens": {"old": old, "new": new}} if affected else {"mine": {"old": "stale", "new": "published"}}

    if __opts__["test"]:
        predicted = {**{j: "new token" for j in plan["issue"]}, **{j: None for j in plan["withdraw"]}}
        ret.update(result=None, changes=changes(predicted), comment="join tokens would be issued and published")
        return ret
    try:
        new = __salt__["microk8s.issue_join_tokens"](plan["issue"], plan["withdraw"], ttl) if affected else {}
        __salt__["mine.update"]()
    except CommandExecutionError as error:
        ret["comment"] = f"join tokens could not be issued: {error}"
        return ret
    ret.update(result=True, changes=changes(new), comment="join tokens issued and published")
    return ret


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
    ret = _ret(name)
    try:
        if master is None or worker is None or master_address is None:
            master, worker, master_address = _role_in_pillar(master, worker, master_address)
    except CommandExecutionError as error:
        ret["comment"] = f"this node's role is unknown: {error}"
        return ret
    if master == __opts__["id"]:
        ret.update(result=True, comment="this node issues the join tokens: it has no cluster to join")
        return ret
    try:
        before = __salt__["microk8s.membership"]()
    except CommandExecutionError as error:
        ret["comment"] = f"cannot tell whether this node is in a cluster: {error}"
        return ret
    wanted = "worker" if worker else "control-plane"
    if _joined(before, worker, master_address):
        ret.update(result=True, comment=f"already joined {master} as {wanted}")
        return ret
    if before["role"] != "standalone":
        members = ", ".join(before["members"]) or "its control plane"
        ret["comment"] = (
            f"this node is already a {before['role']} of another cluster ({members}); "
            f"run microk8s leave on it before it can join {master} as {wanted}"
        )
        return ret
    changes = {"cluster": {"old": "standalone", "new": f"{wanted} of {master}"}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"would join {master} as {wanted}")
        return ret
    try:
        # It returns once the membership shows the join, reading it again while microk8s restarts.
        __salt__["microk8s.join_cluster"](master, master_address, worker, attempts, interval, max_interval)
    except CommandExecutionError as error:
        ret["comment"] = str(error)
        return ret
    # The voters' memberships in the mine decide who issues tokens (microk8s.issuer).
    __salt__["mine.update"]()
    ret.update(result=True, changes=changes, comment=f"joined {master} as {wanted}")
    return ret


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
    ret = _ret(name)
    try:
        plans = __salt__["microk8s.label_plan"]()
    except CommandExecutionError as error:
        ret["comment"] = f"node labels and taints cannot be checked: {error}"
        return ret
    pending = [node for node, plan in plans.items() if plan["changed"]]
    if not pending:
        ret.update(result=True, comment=f"all {len(plans)} nodes have their labels and taints")
        return ret
    changes = {node: {"old": plans[node]["old"], "new": plans[node]["new"]} for node in pending}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"labels and taints would change on {', '.join(pending)}")
        return ret
    done, failed = {}, []
    for node in pending:
        plan = plans[node]
        try:
            result = __salt__["microk8s.label_node"](plan["address"], plan["new"]["labels"], plan["new"]["taints"])
        except CommandExecutionError as error:
            failed.append(f"{node}: {error}")
            continue
        done[node] = {"old": result["old"], "new": result["new"]}
    ret["changes"] = done
    if failed:
        ret["comment"] = "labels and taints could not be applied on " + "; ".join(failed)
        return ret
    ret.update(result=True, comment=f"labels and taints applied on {', '.join(pending)}")
    return ret


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
    ret = _ret(name)
    try:
        plans = __salt__["microk8s.provider_id_plan"]()
    except CommandExecutionError as error:
        ret["comment"] = f"providerIDs cannot be set: {error}"
        return ret
    pending = [node for node, plan in plans.items() if plan["changed"]]
    stale = [
        f"{plan['node']} keeps {plan['old']} of the machine it replaced (not {plan['new']}): delete the Node object "
        "(microk8s kubectl delete node) and restart its microk8s to register it again"
        for plan in plans.values()
        if plan.get("stale")
    ]
    note = f"; {'; '.join(stale)}" if stale else ""
    if not pending:
        ret.update(
            result=True,
            comment=f"all {len(plans) - len(stale)} other nodes have their providerID{note}"
            if stale
            else f"all {len(plans)} nodes have their providerID",
        )
        return ret
    changes = {node: {"old": plans[node]["old"], "new": plans[node]["new"]} for node in pending}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"providerIDs would be set on {', '.join(pending)}")
        return ret
    done, failed = {}, []
    for node in pending:
        try:
            __salt__["microk8s.set_provider_id"](plans[node]["node"], plans[node]["new"])
        except CommandExecutionError as error:
            failed.append(f"{node}: {error}")
            continue
        done[node] = changes[node]
    ret["changes"] = done
    if failed:
        ret["comment"] = "providerIDs could not be set on " + "; ".join(failed)
        return ret
    ret.update(result=True, comment=f"providerIDs set on {', '.join(pending)}{note}")
    return ret


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
    ret = _ret(name)
    try:
        plans = __salt__["microk8s.initialization_plan"]()
    except CommandExecutionError as error:
        ret["comment"] = f"cannot tell which nodes the cloud controller manager initialized: {error}"
        return ret
    never = [node for node, plan in plans.items() if plan["state"] == "never"]
    pending = [node for node, plan in plans.items() if plan["state"] == "pending"]
    if not never and not pending:
        ret.update(result=True, comment=f"the cloud controller manager initialized all {len(plans)} nodes")
        return ret
    if __opts__["test"]:
        changes = {node: {"old": "registered before the cloud integration", "new": "initialized"} for node in never}
        waited = f"; it has yet to initialize {', '.join(pending)}" if pending else ""
        marked = f"{', '.join(never)} would be tainted for the cloud controller manager to initialize" if never else ""
        ret.update(result=None, changes=changes, comment=(marked + waited).lstrip("; "))
        return ret
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
    ret["changes"] = {
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
            why.append(
                f"the cloud controller manager did not initialize {', '.join(left)} within {timeout:g} s ({logs}{back})"
            )
        ret["comment"] = "; ".join(why + failed)
        return ret
    ret.update(result=True, comment=f"the cloud controller manager initialized {', '.join(done)}")
    return ret


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
    ret = _ret(name)
    options = {"ignore_volume_az": ignore_volume_az, "metadata_search_order": metadata_search_order}
    try:
        plan = __salt__["microk8s.cloud_config_plan"](options)
    except CommandExecutionError as error:
        ret["comment"] = f"the cloud-config Secret cannot be checked: {error}"
        return ret
    if not plan["changed"]:
        ret.update(result=True, comment=f"{name} holds cloud.conf sha256 {plan['new']}")
        return ret
    changes = {"cloud.conf sha256": {"old": plan["old"], "new": plan["new"]}}
    if __opts__["test"]:
        ret.update(result=None, changes=changes, comment=f"{name} would hold cloud.conf sha256 {plan['new']}")
        return ret
    try:
        done = __salt__["microk8s.cloud_config_apply"](options)
    except CommandExecutionError as error:
        ret["comment"] = f"the cloud-config Secret could not be applied: {error}"
        return ret
    ret.update(result=True, changes=changes, comment=f"{name} {done['operation']}: cloud.conf sha256 {plan['new']}")
    return ret


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
    ret = _ret(name)
    try:
        planned = __salt__["microk8s.manifests_apply"](list(sources), True)
    except CommandExecutionError as error:
        ret["comment"] = f"the manifests of {name} cannot be checked: {error}"
        return ret
    pending = {ref: operation for ref, operation in planned.items() if operation != "unchanged"}
    if not pending:
        ret.update(result=True, comment=f"all {len(planned)} objects of {name} are applied")
        return ret

    def changes(applied: dict) -> dict:
        return {
            ref: {"old": None if operation == "created" else "present", "new": operation}
            for ref, operation in applied.items()
            if operation != "unchanged"
        }

    if __opts__["test"]:
        ret.update(result=None, changes=changes(pending), comment=f"{len(pending)} objects of {name} would change")
        return ret
    try:
        applied = __salt__["microk8s.manifests_apply"](list(sources))
    except CommandExecutionError as error:
        ret["comment"] = f"the manifests of {name} could not be applied: {error}"
        return ret
    ret.update(result=True, changes=changes(applied), comment=f"{name} applied")
    return ret


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
    ret = _ret(name)
    try:
        plan = __salt__["microk8s.storage_class_plan"](name)
    except CommandExecutionError as error:
        ret["comment"] = f"the default StorageClass cannot be checked: {error}"
        return ret
    if not plan["changed"]:
        ret.update(result=True, comment=f"{name} is the only default StorageClass")
        return ret

    def changes(applied: dict) -> dict:
        result = {
            ref: {"old": None if operation == "created" else "present", "new": operation}
            for ref, operation in applied.items()
            if operation != "unchanged"
        }
        if plan["undefault"]:
            result["other defaults"] = {"old": plan["undefault"], "new": []}
        return result

    if __opts__["test"]:
        ret.update(result=None, changes=changes(plan["apply"]), comment=f"{name} would become the default StorageClass")
        return ret
    try:
        done = __salt__["microk8s.default_storage_class"](name)
    except CommandExecutionError as error:
        ret["comment"] = f"{name} could not be made the default StorageClass: {error}"
        return ret
    ret.update(result=True, changes=changes(done["apply"]), comment=f"{name} is the default StorageClass")
    return ret
