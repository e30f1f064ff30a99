"""
Execution module for microk8s, the wiki's "Microk8s Module". Salt loads this package as
``microk8s``; each public function here hands ``__salt__`` (and ``__opts__`` where it needs
them) to the private submodule of its responsibility, which runs microk8s or reads its files and
returns parsed data:

- ``_cli``: running the binary (the one ``cmd.run_all``), errors, redaction, $SNAP_DATA paths;
- ``_status``: the node's status, running or not, worker or not;
- ``_addons``, ``_certs``: addons, and the API certificate's extra SAN;
- ``_membership``: the roles the pillar gives, the members the cluster knows, removing nodes;
- ``_scale``: taking a node out of service (drain) for a roll or for good, and the voter floor;
- ``_labels``: node labels and taints from the pillar, and the annotations that say which
  kube-on-os manages;
- ``_cloud``: the OpenStack cloud integration: the cloud-config Secret from pillar
  ``openstack:cloud`` (never an argument, never in a return), manifests applied with kubectl on
  standard input, each node's providerID, the default StorageClass;
- ``_upgrade``, ``_reboot``: the rolls, a new channel and OS reboots, one node at a time;
- ``_tokens``: the master's side of the join protocol (add-node tokens, the ledger, the mine
  function ``join_tokens``, renewal, which the Salt master's reactor asks for);
- ``_join``: the joiner's side (its published token, ``microk8s join``, failed joins, renewal
  requests, the bounded retry loop);
- ``_constants``.

docs/microk8s-module.md has the whole protocol.
"""

from __future__ import annotations

import importlib

import salt.utils.path

__virtualname__ = "microk8s"


def _sub(name: str):
    """
    A submodule, imported when first used, not at the top: Salt's loader registers this package
    in sys.modules only after running this file, so an import here at load time could not find
    its parent package. The underscores keep an imported submodule from replacing the public
    function of the same name (``status``, ``addons``).
    """
    return importlib.import_module(f"{__name__}.{name}")


def __virtual__():
    binary = _sub("_constants").BINARY
    if salt.utils.path.which(binary):
        return __virtualname__
    return (False, f"the microk8s execution module needs the {binary} binary on PATH")


# The node: status, addons, certificates.


def status() -> dict:
    """
    Parsed ``microk8s status --format yaml``: running, whether this is a worker node, high
    availability with its nodes and roles, and every addon with its status. A worker node has
    no status of its own (microk8s refers to the control plane): ``worker`` is True there and
    ``running`` is None.

    CLI Example: ``salt '*' microk8s.status``
    """
    return _sub("_status").status(__salt__)


def is_worker() -> bool:
    """True on a node that joined a cluster as a worker. CLI Example: ``salt '*' microk8s.is_worker``"""
    return _sub("_status").is_worker(__salt__)


def is_running() -> bool:
    """
    True when microk8s runs: by its status, or on a worker (which has none) by its kubelite
    service. CLI Example: ``salt '*' microk8s.is_running``
    """
    return _sub("_status").is_running(__salt__)


def start() -> str:
    """Starts microk8s. CLI Example: ``salt '*' microk8s.start``"""
    return _sub("_status").start(__salt__)


def wait_ready(timeout: int = 300) -> bool:
    """Blocks until microk8s is ready or ``timeout`` seconds pass (``status --wait-ready``)."""
    return _sub("_status").wait_ready(__salt__, timeout)


def addons() -> dict:
    """Every addon with its status, description and version. CLI Example: ``salt '*' microk8s.addons``"""
    return _sub("_addons").addons(__salt__)


def addon_status(name: str) -> str:
    """``enabled`` or ``disabled``. CLI Example: ``salt '*' microk8s.addon_status dns``"""
    return _sub("_addons").addon_status(__salt__, name)


def enable(name: str, args: list[str] | None = None) -> str:
    """Enables an addon, e.g. ``salt '*' microk8s.enable dns``; returns microk8s' output."""
    return _sub("_addons").enable(__salt__, name, args)


def disable(name: str) -> str:
    """Disables an addon. CLI Example: ``salt '*' microk8s.disable registry``"""
    return _sub("_addons").disable(__salt__, name)


def kubelet_cloud_provider() -> str | None:
    """
    The kubelet's ``--cloud-provider`` in $SNAP_DATA/args/kubelet (``external``), or None
    without one. CLI Example: ``salt '*' microk8s.kubelet_cloud_provider``
    """
    return _sub("_kubelet").cloud_provider(__salt__)


def set_kubelet_external_cloud_provider(external: bool) -> dict:
    """
    Writes ``--cloud-provider=external`` into the kubelet's arguments (``external``) or removes
    the line, leaving the others; ``{"changed", "old", "new"}``. kubelite reads the file only
    when it starts: restart it (``restart_kubelite``) after a change.
    """
    return _sub("_kubelet").set_external_cloud_provider(__salt__, external)


def apiserver_advertise_address() -> str | None:
    """
    The API server's ``--advertise-address`` in $SNAP_DATA/args/kube-apiserver, or None without
    one. CLI Example: ``salt '*' microk8s.apiserver_advertise_address``
    """
    return _sub("_kubelet").advertise_address(__salt__)


def set_apiserver_advertise_address(address: str) -> dict:
    """
    Writes ``--advertise-address=<address>`` into the API server's arguments, leaving the other
    lines; ``{"changed", "old", "new"}``. kubelite reads the file only when it starts: restart it
    (``restart_kubelite``) after a change.
    """
    return _sub("_kubelet").set_advertise_address(__salt__, address)


def restart_kubelite(timeout: int = 300) -> bool:
    """
    ``snap restart microk8s.daemon-kubelite``, then waits for the node (``status --wait-ready``;
    on a worker, its kubelite service). CLI Example: ``salt '*' microk8s.restart_kubelite``
    """
    return _sub("_kubelet").restart_kubelite(__salt__, timeout)


def refresh_certs(cert: str = "server.crt") -> str:
    """Regenerates a certificate from csr.conf.template (after a SAN change)."""
    return _sub("_certs").refresh_certs(__salt__, cert)


def extra_sans() -> list[str]:
    """
    The extra IP SANs in csr.conf.template's managed lines (``IP.99``, ``IP.98``, ...), in that
    order; [] when there are none. CLI Example: ``salt '*' microk8s.extra_sans``
    """
    return _sub("_certs").extra_sans(__salt__)


def config_set_extra_sans(addresses: list[str]) -> dict:
    """
    Makes csr.conf.template's managed lines list exactly ``addresses`` (IPv4, in order, ``IP.99``
    counting down), idempotently, keeping the ``#MOREIPS`` marker and microk8s' own lines.
    Returns ``{"changed": bool, "sans": ["IP.99 = <address>", ...]}``. Raises on a template without
    the marker, or on anything but distinct IPv4 addresses.
    CLI Example: ``salt '*' microk8s.config_set_extra_sans '[203.0.113.10, 203.0.113.20]'``
    """
    return _sub("_certs").set_extra_sans(__salt__, addresses)


# Membership: who should be in the cluster, who is, and taking nodes out.


def node_roles() -> dict:
    """
    The control plane and the workers, from the pillar (``microk8s:nodes``, ``:master``,
    ``:control_plane``): ``{"master", "control_plane", "workers", "joiners": {id:
    joins_as_worker}, "addresses": {id: address}}``. Raises naming the bad key and value.
    CLI Example: ``salt '*' microk8s.node_roles``
    """
    return _sub("_membership").node_roles(__salt__)


def members() -> list[dict]:
    """The dqlite members (address and role) this node knows."""
    return _sub("_membership").members(__salt__)


def nodes() -> list[dict]:
    """
    The Kubernetes nodes: ``[{"name", "address" (InternalIP), "ready"}]``, from
    ``kubectl get nodes -o json``. CLI Example: ``salt k8s-master.* microk8s.nodes``
    """
    return _sub("_membership").nodes(__salt__)


def node_health() -> list[dict]:
    """
    Each Kubernetes node's readiness for ``npm run repair`` (scripts/repair.js): ``[{"name",
    "addresses", "ready", "unreachable", "not_ready_seconds"}]``, ``not_ready_seconds`` since its
    Ready condition last changed (0 while Ready; None when the condition has no time).
    CLI Example: ``salt k8s-master.* microk8s.node_health``
    """
    return _sub("_membership").health(__salt__)


def issuer() -> str:
    """
    The voter that issues join tokens: the first voter in pillar order (the master first) whose
    membership in the mine (``microk8s.membership``) is a control-plane member of a cluster that
    lists its own address; when none is (a new deployment), the pillar's master. A rebuilt
    master stands alone while the other voters are still in the cluster, so one of them issues
    and the master joins. CLI Example: ``salt k8s-* microk8s.issuer``
    """
    return _sub("_membership").issuer(__salt__)


def membership() -> dict:
    """
    How this node takes part in a cluster: ``{"role": "worker" | "control-plane" | "standalone",
    "members": [addresses of the dqlite members]}``. A node is control plane once dqlite knows
    more members than itself.
    """
    return _sub("_membership").membership(__salt__)


def leave() -> str:
    """Leaves the cluster this node is part of."""
    return _sub("_membership").leave(__salt__)


def remove_node(node: str, force: bool = False) -> str:
    """Removes a departed (or rebuilt) node from the cluster, by name or address."""
    return _sub("_membership").remove_node(__salt__, node, force)


def vacate_node(address: str, timeout: int = 300) -> dict:
    """
    Scale-down's first step, on the master: takes the departing node at private ``address`` out
    of service (cordon, drain within ``timeout`` seconds), unless it is a dqlite voter an HA
    cluster cannot lose (three voters, fewer after). Returns ``{"outcome": "refused" | "absent"
    | "no-node" | "drained" | "gave-up", "node", "member", "seconds", "reason"}``; a drain that
    does not finish in time is reported, not raised, since the machine is deleted anyway.
    CLI Example: ``salt k8s-master.* microk8s.vacate_node 10.1.0.102 300``
    """
    return _sub("_scale").vacate(__salt__, address, timeout)


def forget_node(address: str) -> bool:
    """
    Removes the node at private ``address`` from the cluster, whether it is a dqlite member
    (control plane; forced while it has not left) or only a Kubernetes node (worker, or a member
    that left): the scale-down of a departed node, run on the master after ``vacate_node`` and
    the node's ``leave``, before its machine is deleted. True if something was removed, False if
    the cluster knew no node there. CLI Example: ``salt k8s-master.* microk8s.forget_node 10.1.0.102``
    """
    return _sub("_membership").forget_node(__salt__, address)


def cluster_check(expected_nodes: int | None = None) -> dict:
    """
    Fails (CommandExecutionError) unless ``expected_nodes`` nodes (default: every node in the
    pillar) are Ready in Kubernetes; the orchestration's final step. Returns
    ``{"ready": [names], "expected": N}``.
    """
    return _sub("_membership").cluster_check(__salt__, expected_nodes)


# Node labels and taints: orch.deploy applies the pillar's on the master after the cluster check.


def node_metadata(address: str) -> dict:
    """
    On a control-plane node: the labels and taints of the Kubernetes node of the pillar node at
    private ``address``, and those kube-on-os manages (its annotations): ``{"name", "labels",
    "taints": ["key=value:Effect"], "managed": {"labels": [keys], "taints": [...]}}``.
    CLI Example: ``salt k8s-master.* microk8s.node_metadata 10.1.0.100``
    """
    return _sub("_labels").node_metadata(__salt__, address)


def label_plan() -> dict:
    """
    Read-only, on a control-plane node: for every node of pillar ``microk8s:nodes``, what
    ``label_node`` would change to give it its entry's labels and taints: ``{id: {"address",
    "node", "label", "unlabel", "taint", "untaint", "annotate", "changed", "old", "new"}}``, from
    one ``kubectl get nodes -o json``. Only labels and taints kube-on-os set before (its
    annotations say which) are ever removed. CLI Example: ``salt k8s-master.* microk8s.label_plan``
    """
    return _sub("_labels").plan_all(__salt__)


def label_node(address: str, labels: dict | None = None, taints: list | None = None) -> dict:
    """
    On a control-plane node: gives the node at ``address`` exactly ``labels`` and ``taints``
    (``key=value:Effect`` or ``key:Effect``) among those kube-on-os manages, removing the ones it
    set before and no longer wants, never another's; records them in its annotations.
    ``{"node", "changed", "old", "new"}``. CLI Example:
    ``salt k8s-master.* microk8s.label_node 10.1.0.100 '{kube-on-os/pool: gpu}' '[gpu=true:NoSchedule]'``
    """
    return _sub("_labels").apply(__salt__, address, labels, taints)


# The OpenStack cloud integration: orch.deploy applies it on the master after the node labels.


def cloud_config_plan(options: dict | None = None) -> dict:
    """
    On the master: whether the Secret kube-system/cloud-config holds the cloud.conf that pillar
    ``openstack:cloud`` renders (and its CA): ``{"secret", "old", "new", "changed"}``, ``old`` and
    ``new`` the SHA-256 of the content applied before (the Secret's annotation; None without one)
    and of today's. ``options``: ``ignore_volume_az``, ``metadata_search_order``. Never returns the
    credential. CLI Example: ``salt k8s-master.* microk8s.cloud_config_plan``
    """
    return _sub("_cloud").secret_plan(__salt__, options)


def cloud_config_apply(options: dict | None = None) -> dict:
    """
    On the master: applies the Secret kube-system/cloud-config (key cloud.conf, and ca.crt with a
    private CA) with ``kubectl apply -f -``, the manifest on standard input, nothing of it
    logged: ``cloud_config_plan``'s map with kubectl's ``operation``.
    """
    return _sub("_cloud").apply_secret(__salt__, options)


def manifests_apply(sources: list[str], dry_run: bool = False) -> dict:
    """
    On the master: ``kubectl apply -f -`` of the manifests at ``sources`` (salt:// URLs), in
    order, as one stream: ``{"<kind>[.<group>]/<name>": "created" | "configured" | "unchanged"}``.
    ``dry_run``: the API server's dry run, nothing kept. CLI Example:
    ``salt k8s-master.* microk8s.manifests_apply '[salt://microk8s/files/cloud-provider/csi-cinder-driver.yaml]' True``
    """
    cloud = _sub("_cloud")
    return cloud.apply(__salt__, cloud.manifests(__salt__, sources), dry_run=dry_run)


def provider_id_plan() -> dict:
    """
    On the master: for every node of pillar ``microk8s:nodes``, its providerID now and the one
    its ``instance_id`` gives (``openstack:///<instance_id>``): ``{id: {"node", "old", "new",
    "changed"}}``. Raises naming the node when it already has another one.
    CLI Example: ``salt k8s-master.* microk8s.provider_id_plan``
    """
    return _sub("_cloud").provider_id_plan(__salt__)


def set_provider_id(node: str, provider_id: str) -> str:
    """On the master: sets Kubernetes node ``node``'s spec.providerID (only ever from ""); kubectl's line."""
    return _sub("_cloud").set_provider_id(__salt__, node, provider_id)


def initialization_plan() -> dict:
    """
    Whether the cloud controller manager initialized each node of pillar ``microk8s:nodes``:
    ``{id: {"node", "state", "labels"}}``, ``state`` one of initialized, pending, never.

    CLI Example: ``salt k8s-master.* microk8s.initialization_plan``
    """
    return _sub("_cloud").initialization_plan(__salt__)


def wait_initialized(timeout: float = 300, interval: float = 5) -> dict:
    """``initialization_plan`` once no node is left pending, or after ``timeout`` seconds: the last one read."""
    return _sub("_cloud").wait_initialized(__salt__, timeout, interval)


def mark_uninitialized(node: str, marked: bool = True) -> str:
    """Adds (or with ``marked=False`` removes) the uninitialized taint on Kubernetes node ``node``."""
    return _sub("_cloud").mark_uninitialized(__salt__, node, marked)


def storage_class_plan(name: str) -> dict:
    """
    On the master: what makes the Cinder StorageClass ``name`` the cluster's one default:
    ``{"apply": {ref: operation} (a server dry run), "undefault": [other default classes], "changed"}``.
    """
    return _sub("_cloud").storage_class_plan(__salt__, name)


def default_storage_class(name: str) -> dict:
    """On the master: applies ``storage_class_plan(name)``; returns it, ``apply`` as kubectl applied it."""
    return _sub("_cloud").make_default_storage_class(__salt__, name)


# The master's side of the join protocol.


def add_node(token: str | None = None, ttl: int = -1) -> dict:
    """
    Issues a join token and returns ``{"token", "urls"}``. ``ttl=-1`` (the default, as in
    microk8s) makes it single-use; a positive ttl makes it reusable for that many seconds.

    CLI Example: ``salt k8s-master.* microk8s.add_node ttl=600``
    """
    return _sub("_tokens").add_node(__salt__, token, ttl)


def join_tokens() -> dict:
    """
    The mine function of the join protocol: ``{joiner_id: {"urls", "serial", "worker",
    "expires"}}``, the tokens this master issued and not yet withdrawn. The URLs carry the
    tokens; the pillar limits who may read them from the mine.
    """
    return _sub("_tokens").join_tokens(__opts__)


def pending_joiners() -> list[str]:
    """The nodes that would join through this node's tokens whose address the cluster does not know yet, in order."""
    return _sub("_tokens").pending_joiners(__salt__, __opts__)


def join_token_plan(ttl: int = -1) -> dict:
    """
    What ``join_tokens_published`` would do, without doing it: ``{"issuer", "issue": [joiners without a
    usable token: none, spent, expiring, or published with an older server.crt's fingerprint],
    "withdraw": [joiners holding a token who need none], "serials": {joiner: serial}}``. On a
    node that is not the issuer, nothing to issue and every token it holds to withdraw.
    Read-only; raises when ``ttl`` is neither -1 nor at least 300 seconds.
    """
    return _sub("_tokens").join_token_plan(__salt__, __opts__, ttl)


def issue_join_tokens(joiners: list[str], withdraw: list[str] | None = None, ttl: int = -1) -> dict:
    """
    Issues a fresh token for each of ``joiners`` and withdraws the tokens of ``withdraw``;
    returns ``{joiner: serial or None (withdrawn)}``. The caller publishes them (mine.update).
    """
    return _sub("_tokens").issue_join_tokens(__salt__, __opts__, joiners, withdraw, ttl)


def renew_join_token(joiner: str, reason: str, serial: int | None = None) -> dict:
    """
    Called on the issuer by the Salt master's reactor, with the minion id that fired the event,
    when ``joiner`` has no usable token (``reason``: no-token, invalid-token, already-known,
    hostname-unresolved, dqlite-unavailable, fingerprint-mismatch): removes a stale member (never
    a Ready one) at the joiner's pillar address or refreshes core.hosts as the reason needs, then
    issues a new token, or republishes an unspent one with today's certificate fingerprint,
    unless the report is a duplicate.
    Returns ``{"joiner", "serial", "renewed", "forgot", "hosts"}``.
    """
    return _sub("_tokens").renew_join_token(__salt__, __opts__, joiner, reason, serial)


# The joiner's side of the join protocol.


def join(url: str, worker: bool = False) -> str:
    """Joins the cluster at ``url`` (``ip:port/token/check``), as a worker when asked."""
    return _sub("_join").join(__salt__, url, worker)


def classify_error(message: str) -> dict:
    """
    What a failed join means and what to do about it: ``{"kind", "action"}``, where action is
    ``renew`` (the token is spent or its URL stale: ask the master), ``wait`` (the master is
    not ready: retry later) or ``fail`` (retrying cannot help).
    """
    return _sub("_join").classify_error(message)


def published_token(master: str, master_address: str | None = None) -> dict | None:
    """
    This node's entry in ``master``'s published join tokens (the mine), with the URL that
    reaches the master at ``master_address``: ``{"url", "serial", "worker"}``, or None while the
    master has published nothing for this node.
    """
    return _sub("_join").published_token(__salt__, __opts__, master, master_address)


def request_token_renewal(master: str, reason: str, serial: int) -> bool:
    """
    Asks ``master`` for a new join token after a failed join of kind ``reason``: an event the
    Salt master's reactor turns into ``renew_join_token`` on the master, with this minion's id.
    Publishes this node's addresses first, so a master refreshing its hosts file can find them.
    """
    return _sub("_join").request_token_renewal(__salt__, master, reason, serial)


def join_cluster(
    master: str,
    master_address: str | None,
    worker: bool,
    attempts: int,
    interval: float,
    max_interval: float,
) -> dict:
    """
    Joins ``master``'s cluster with the token it published for this node, as a worker or a
    control-plane voter, reaching the master at ``master_address``: at most ``attempts`` joins,
    waiting ``interval`` seconds before the second and doubling up to ``max_interval``. A spent
    token is renewed through the master, an unready master is waited for. Returns
    ``{"attempts", "serial", "membership"}`` once the membership shows the join (read again
    while microk8s restarts its services); raises CommandExecutionError saying why it gave up. The state
    ``microk8s.cluster_joined`` calls it with the pillar's ``microk8s:join``.

    CLI Example: ``salt k8s-worker-0.* microk8s.join_cluster k8s-master.example 10.1.0.10 True 8 5 60``
    """
    join = _sub("_join")
    return join.join_cluster(
        __salt__, __opts__, master, master_address, worker, join.Backoff(attempts, interval, max_interval)
    )


# Rolling upgrades: orch.upgrade runs these one node at a time.


def upgrade_plan(channel: str | None = None, one_minor: bool = False) -> dict:
    """
    The roll ``channel`` needs, run on a control-plane node: ``{"channel", "minor", "roll":
    [ids, control plane first], "current": {id: kubelet version}, "steps": [{"channel", "roll"}]}``,
    a step per minor release from the oldest node's up. No ``channel`` (microk8s_channel unset)
    keeps the channel this node tracks. Raises naming the node when ``channel`` would downgrade
    one, or with ``one_minor`` when it would skip a minor release. CLI Example:
    ``salt k8s-master.* microk8s.upgrade_plan 1.35/stable``
    """
    return _sub("_upgrade").plan(__salt__, channel, one_minor)


def release_check(channel: str | None = None) -> dict:
    """
    Fails (naming the nodes) while the cluster runs a minor other than ``channel``'s (unset: the
    channel this node tracks): orch.deploy checks it before new nodes install it; the roll
    (the chain's Upgrade step, or orch.upgrade) comes first.
    """
    return _sub("_upgrade").release_check(__salt__, channel)


def installed() -> dict | None:
    """The microk8s snap's ``{"version", "tracking"}`` (``snap list``), or None when it is not installed."""
    return _sub("_upgrade").installed(__salt__)


def refresh(channel: str) -> dict:
    """``snap refresh microk8s --channel=CHANNEL`` on this node: ``{"old", "new"}`` tracking."""
    return _sub("_upgrade").refresh(__salt__, channel)


def refreshes_held() -> bool:
    """Whether snapd's own refreshes of microk8s are held on this node (``snap list``'s notes)."""
    return _sub("_upgrade").refreshes_held(__salt__)


def hold_refreshes() -> None:
    """``snap refresh --hold microk8s``: only a refresh asked for by name (the roll's) refreshes it."""
    return _sub("_upgrade").hold_refreshes(__salt__)


def drain_node(address: str, channel: str, timeout: int = 300) -> dict:
    """
    On a control-plane node: cordons and drains the node at private ``address`` for the roll to
    ``channel``, unless it already runs that minor. ``{"node", "drained"}``.
    """
    return _sub("_upgrade").drain(__salt__, address, channel, timeout)


def uncordon_node(address: str) -> str:
    """On a control-plane node: makes the node at ``address`` schedulable again; returns its name."""
    return _sub("_upgrade").uncordon(__salt__, address)


def wait_node_ready(address: str, channel: str, timeout: int = 600, interval: float = 2) -> dict:
    """On a control-plane node: waits until the node at ``address`` is Ready at ``channel``'s minor."""
    return _sub("_upgrade").wait_node(__salt__, address, channel, timeout, interval)


def drain_for_reboot(address: str, timeout: int = 300) -> dict:
    """
    On a control-plane node: notes the boot id of the node at private ``address`` (for
    ``wait_node_rebooted``) and cordons and drains it before it reboots. ``{"node", "boot_id"}``.
    CLI Example: ``salt k8s-master.* microk8s.drain_for_reboot 10.1.0.101 300``
    """
    return _sub("_reboot").drain(__salt__, __opts__, address, timeout)


def drain_for_replacement(address: str, timeout: int = 300) -> dict:
    """
    On a control-plane node: notes the boot id of the node at private ``address`` and cordons and
    drains it before its machine is replaced (the chain's destroy-time hook,
    provisioners/drain-node.sh); ``uncordon_replaced`` puts it back in service once the new
    machine is Ready. ``{"node", "boot_id"}``.
    CLI Example: ``salt k8s-master.* microk8s.drain_for_replacement 10.1.0.101 300``
    """
    return _sub("_reboot").drain(__salt__, __opts__, address, timeout, _sub("_reboot").REPLACEMENTS)


def uncordon_replaced() -> dict:
    """
    On a control-plane node, in orch.deploy: uncordons each node it drained for a replacement
    (``drain_for_replacement``) that is Ready again with another boot id, its new machine's.
    ``{"uncordoned", "waiting", "dropped"}`` (node names; waiting: still the old machine).
    """
    return _sub("_reboot").uncordon_replaced(__salt__, __opts__)


def wait_node_rebooted(address: str, timeout: int = 600, interval: float = 2) -> dict:
    """
    On the control-plane node that drained it: waits until the node at ``address`` is Ready with
    a boot id other than the one ``drain_for_reboot`` noted. ``{"node", "boot_id"}``.
    """
    return _sub("_reboot").wait(__salt__, __opts__, address, timeout, interval)
