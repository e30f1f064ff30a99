"""
Node labels and taints from the pillar (``microk8s:nodes``: each entry's ``labels``, a map, and
``taints``, kubectl's ``key=value:Effect`` or ``key:Effect``), applied with kubectl on a
control-plane node (a --worker node's kubectl refuses to run).

kube-on-os changes only what it set: the keys and taints it manages are kept on the node in two
annotations, ``kube-on-os/managed-labels`` (a JSON list of keys) and ``kube-on-os/managed-taints``
(a JSON list of taints), written in the same step. A label or taint the pillar no longer lists is
removed only when an annotation names it; kubelet's labels (kubernetes.io/hostname, the
node-role and microk8s' own), the cloud controller manager's topology.kubernetes.io/zone and the
node lifecycle controller's node.kubernetes.io/* taints are never touched.

The validation is Kubernetes' own (k8s.io/apimachinery pkg/api/validate/content/kube.go
IsLabelKey and IsLabelValue; kubectl pkg/cmd/taint/utils.go parseTaint): a bad pillar value is an
error naming the node and the value before any kubectl runs, not an API server refusal halfway.
"""

from __future__ import annotations

import json
import re

from salt.exceptions import CommandExecutionError

from . import _cli, _membership, _status

MANAGED_LABELS = "kube-on-os/managed-labels"
MANAGED_TAINTS = "kube-on-os/managed-taints"
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

# content/kube.go: a label key's name part and a label value (at most 63 characters each), and
# content/dns.go IsDNS1123Subdomain for a key's optional prefix (at most 253).
# Matched whole (fullmatch: "$" would let a trailing newline through).
_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def key_problem(key) -> str | None:
    """Why ``key`` is not a Kubernetes label (or taint) key, or None: IsLabelKey's rules."""
    if not isinstance(key, str):
        return "must be a string"
    parts = key.split("/")
    if len(parts) > 2:
        return "may hold at most one '/', after a DNS subdomain prefix (e.g. 'example.com/MyName')"
    name = parts[-1]
    if len(parts) == 2 and not (parts[0] and len(parts[0]) <= 253 and _SUBDOMAIN.fullmatch(parts[0])):
        return "prefix part must be a lower-case DNS subdomain of at most 253 characters (e.g. 'example.com')"
    if not name or len(name) > 63 or not _NAME.fullmatch(name):
        return (
            "name part must be 1 to 63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def value_problem(value) -> str | None:
    """Why ``value`` is not a Kubernetes label (or taint) value, or None: IsLabelValue's rules."""
    if not isinstance(value, str):
        return "must be a string (quote it in YAML)"
    if len(value) > 63 or not _VALUE.fullmatch(value):
        return (
            "must be empty or at most 63 alphanumeric characters, '-', '_' or '.', "
            "starting and ending with an alphanumeric character"
        )
    return None


def parse_taint(text) -> dict:
    """
    ``{"key", "value", "effect"}`` from kubectl's ``key=value:Effect`` or ``key:Effect``
    (parseTaint; the effect is required to add a taint). Raises CommandExecutionError saying why.
    """
    if not isinstance(text, str):
        raise CommandExecutionError(f"a taint must be a string key=value:Effect or key:Effect, got {text!r}")
    head, colon, effect = text.rpartition(":")
    if not colon or ":" in head:
        raise CommandExecutionError(f"taint {text!r} must be key=value:Effect or key:Effect")
    if effect not in EFFECTS:
        raise CommandExecutionError(f"taint {text!r} has effect {effect!r}; it must be one of {', '.join(EFFECTS)}")
    key, equals, value = head.partition("=")
    if "=" in value:
        raise CommandExecutionError(f"taint {text!r} must be key=value:Effect or key:Effect")
    problem = key_problem(key) or (value_problem(value) if equals else None)
    if problem:
        raise CommandExecutionError(f"taint {text!r}: {'key' if key_problem(key) else 'value'} {problem}")
    return {"key": key, "value": value, "effect": effect}


def _read_taint(text: str) -> dict:
    """A taint already on a node, in kubectl's form (its key, value and effect need no checking)."""
    head, _, effect = text.rpartition(":")
    key, _, value = head.partition("=")
    return {"key": key, "value": value, "effect": effect}


def taint_text(taint: dict) -> str:
    """kubectl's form of a taint (core/v1 Taint.ToString): ``key=value:Effect``, or ``key:Effect`` without a value."""
    value = taint.get("value") or ""
    return f"{taint['key']}{'=' + value if value else ''}:{taint['effect']}"


def _identity(taint: dict) -> tuple[str, str]:
    # A node holds one taint per key and effect (kubectl's MatchTaint; --overwrite replaces its value).
    return (taint["key"], taint["effect"])


def wanted(labels, taints, where: str) -> dict:
    """
    ``{"labels": {key: value}, "taints": [kubectl form]}`` checked: ``labels`` a map and ``taints``
    a list, None meaning none (a pillar older than the keys). Raises naming ``where`` (the node)
    and the bad key or value.
    """
    labels = {} if labels is None else labels
    taints = [] if taints is None else taints
    if not isinstance(labels, dict):
        raise CommandExecutionError(f"{where}: labels must be a map of label keys to values, got {labels!r}")
    if not isinstance(taints, list):
        raise CommandExecutionError(f"{where}: taints must be a list of key=value:Effect, got {taints!r}")
    for key, value in labels.items():
        problem = key_problem(key)
        if problem:
            raise CommandExecutionError(f"{where}: label key {key!r} {problem}")
        problem = value_problem(value)
        if problem:
            raise CommandExecutionError(f"{where}: label {key}'s value {value!r} {problem}")
    parsed = []
    for text in taints:
        try:
            taint = parse_taint(text)
        except CommandExecutionError as error:
            raise CommandExecutionError(f"{where}: {error}") from None
        if any(_identity(taint) == _identity(other) for other in parsed):
            # parseTaints: "duplicated taints with the same key and effect".
            raise CommandExecutionError(f"{where}: two taints with key {taint['key']} and effect {taint['effect']}")
        parsed.append(taint)
    return {"labels": dict(labels), "taints": [taint_text(taint) for taint in parsed]}


def pillar_nodes(salt: dict) -> dict:
    """
    ``{id: {"address", "labels", "taints"}}`` for every node of pillar ``microk8s:nodes``, in
    order, validated (``_membership.parse_roles`` for ids and addresses, ``wanted`` for the rest).
    """
    settings = salt["pillar.get"]("microk8s", {})
    addresses = _membership.parse_roles(settings)["addresses"]
    return {
        str(node["id"]): {
            "address": addresses[str(node["id"])],
            **wanted(node.get("labels"), node.get("taints"), f"pillar microk8s:nodes entry {node['id']}"),
        }
        for node in settings["nodes"]
    }


def _managed(annotations: dict, key: str, name: str) -> list[str]:
    text = annotations.get(key)
    if text is None:
        return []
    try:
        value = json.loads(text)
    except ValueError:
        value = None
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise CommandExecutionError(
            f"node {name}'s annotation {key} is not a JSON list of strings: {text[:200]!r}; "
            f"remove it (kubectl annotate node {name} {key}-) and apply again"
        )
    return value


def parse_node(text: str) -> dict:
    """
    ``{"name", "labels", "taints" [kubectl form], "managed": {"labels": [keys], "taints": [kubectl
    form]}}`` from ``kubectl get node NAME -o json`` (a core/v1 Node). A --worker node's kubectl
    prints a sentence instead (exit 0): that, and anything else that is not a Node, is a
    CommandExecutionError.
    """
    if _status.is_worker_message(text):
        raise CommandExecutionError("this node joined with --worker and cannot read nodes; ask a control-plane node")
    try:
        node = json.loads(text or "null")
        if not isinstance(node, dict) or node.get("kind") != "Node":
            raise ValueError("not a Node")
    except ValueError as error:
        raise CommandExecutionError(f"kubectl get node printed no Node ({error!r}): {text[:200]!r}") from None
    return _node(node, text)


def _node(node: dict, text: str) -> dict:
    """``parse_node``'s result for one Node (or an item of a NodeList), ``text`` the output it came from."""
    try:
        metadata = node.get("metadata") or {}
        name = metadata["name"]
        labels = metadata.get("labels") or {}
        annotations = metadata.get("annotations") or {}
        taints = [taint_text(taint) for taint in (node.get("spec") or {}).get("taints") or []]
        if not isinstance(name, str) or not isinstance(labels, dict) or not isinstance(annotations, dict):
            raise ValueError("metadata of the wrong types")
    except (ValueError, AttributeError, KeyError, TypeError) as error:
        raise CommandExecutionError(f"kubectl get node printed no Node ({error!r}): {text[:200]!r}") from None
    return {
        "name": name,
        "labels": dict(labels),
        "taints": taints,
        "managed": {
            "labels": _managed(annotations, MANAGED_LABELS, name),
            "taints": _managed(annotations, MANAGED_TAINTS, name),
        },
    }


def parse_node_list(text: str) -> tuple[list[dict], dict]:
    """
    From ``kubectl get nodes -o json``: ``_membership.parse_nodes``' list (names, addresses), and
    ``{name: parse_node's result}`` for every node. Errors as those two raise them.
    """
    known = _membership.parse_nodes(text)
    return known, {item["metadata"]["name"]: _node(item, text) for item in json.loads(text).get("items") or []}


def read(salt: dict, name: str) -> dict:
    return parse_node(_cli.run(salt, "kubectl", "get", "node", name, "-o", "json"))


def node_metadata(salt: dict, address: str) -> dict:
    """``parse_node`` of the Kubernetes node of the pillar node at ``address`` (``known_node_at``)."""
    return read(salt, _membership.known_node_at(salt, address)["name"])


def diff(current: dict, labels: dict, taints: list[str]) -> dict:
    """
    What ``apply`` changes on a node read by ``parse_node`` to give it ``labels`` and ``taints``
    (``wanted``'s): ``{"node", "label": {key: value}, "unlabel": [keys], "taint": [taints],
    "untaint": [key:Effect], "annotate": {annotation: JSON or None (removed)}, "changed": bool,
    "old": {"labels", "taints"}, "new": {"labels", "taints"}}``. Only labels and taints kube-on-os manages (by
    the annotations) are removed, and only while the node has them; ``old`` shows the node's
    labels and taints that kube-on-os manages or wants, ``new`` the wanted ones.
    """
    wanted_taints = [parse_taint(text) for text in taints]
    present = [_read_taint(text) for text in current["taints"]]
    wanted_ids = {_identity(taint) for taint in wanted_taints}
    managed_ids = {_identity(_read_taint(text)) for text in current["managed"]["taints"]}
    keys = set(current["managed"]["labels"]) | set(labels)
    annotations = {
        MANAGED_LABELS: json.dumps(sorted(labels)) if labels else None,
        MANAGED_TAINTS: json.dumps(sorted(taints)) if taints else None,
    }
    recorded = {
        MANAGED_LABELS: current["managed"]["labels"],
        MANAGED_TAINTS: current["managed"]["taints"],
    }
    step = {
        "node": current["name"],
        "label": {key: value for key, value in labels.items() if current["labels"].get(key) != value},
        "unlabel": sorted(
            key for key in current["managed"]["labels"] if key not in labels and key in current["labels"]
        ),
        "taint": [taint_text(t) for t in wanted_taints if taint_text(t) not in current["taints"]],
        "untaint": sorted(
            f"{key}:{effect}" for key, effect in {_identity(t) for t in present} & (managed_ids - wanted_ids)
        ),
        "annotate": {
            key: text for key, text in annotations.items() if (json.loads(text) if text else []) != recorded[key]
        },
        "old": {
            "labels": {key: current["labels"][key] for key in sorted(keys) if key in current["labels"]},
            "taints": sorted(taint_text(t) for t in present if _identity(t) in managed_ids | wanted_ids),
        },
        "new": {"labels": dict(sorted(labels.items())), "taints": sorted(taints)},
    }
    step["changed"] = any(step[part] for part in ("label", "unlabel", "taint", "untaint", "annotate"))
    return step


def plan_all(salt: dict) -> dict:
    """
    ``{id: {"address", **diff}}`` for every node of pillar ``microk8s:nodes`` (``pillar_nodes``),
    from one ``kubectl get nodes -o json``: a run that changes nothing costs one kubectl call,
    whatever the number of nodes. A pillar node Kubernetes does not know is an error naming it.
    """
    wanted_nodes = pillar_nodes(salt)
    known, read_nodes = parse_node_list(_cli.run(salt, "kubectl", "get", "nodes", "-o", "json"))
    plans = {}
    for node_id, want in wanted_nodes.items():
        found = _membership.node_of(known, node_id, want["address"])
        if found is None:
            raise CommandExecutionError(f"Kubernetes has no node at {want['address']} ({node_id})")
        plans[node_id] = {"address": want["address"], **diff(read_nodes[found["name"]], want["labels"], want["taints"])}
    return plans


def plan(salt: dict, address: str, labels: dict | None = None, taints: list | None = None) -> dict:
    """``diff`` for the node at ``address``, after ``wanted`` checked ``labels`` and ``taints``."""
    want = wanted(labels, taints, f"the node at {address}")
    return diff(node_metadata(salt, address), want["labels"], want["taints"])


def apply(salt: dict, address: str, labels: dict | None = None, taints: list | None = None) -> dict:
    """
    Gives the node at ``address`` ``labels`` and ``taints`` and records them as managed:
    ``kubectl label --overwrite`` (``key-`` removes), ``kubectl taint --overwrite`` (``key:Effect-``
    removes), ``kubectl annotate --overwrite``, each only when it has something to do. Returns
    ``{"node", "changed", "old", "new"}`` (``diff``'s). A failing kubectl raises Microk8sError
    naming the command; running again finishes the job, since the plan is read afresh.
    """
    step = plan(salt, address, labels, taints)
    name = step["node"]
    if step["label"] or step["unlabel"]:
        pairs = [f"{key}={value}" for key, value in sorted(step["label"].items())]
        _cli.run(salt, "kubectl", "label", "node", name, *pairs, *(f"{key}-" for key in step["unlabel"]), "--overwrite")
    if step["taint"] or step["untaint"]:
        _cli.run(
            salt, "kubectl", "taint", "node", name, *step["taint"], *(f"{t}-" for t in step["untaint"]), "--overwrite"
        )
    if step["annotate"]:
        notes = [f"{key}={text}" if text is not None else f"{key}-" for key, text in sorted(step["annotate"].items())]
        _cli.run(salt, "kubectl", "annotate", "node", name, *notes, "--overwrite")
    return {"node": name, "changed": step["changed"], "old": step["old"], "new": step["new"]}
