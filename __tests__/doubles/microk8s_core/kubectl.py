"""
``microk8s kubectl`` as both fakes answer it, around node_objects.py (Nodes) and kube_objects.py
(every other object); each fake reads and writes the cluster's database its own way.
- microk8s-kubectl.wrapper on a node joined with --worker (1.28 and 1.35 alike): that the node is
  part of a cluster and to use the master's kubectl, exit 0 (before its exit_if_stopped);
- a refused connection while kubelite restarts (after a snap refresh, a `snap restart`, a boot):
  kubectl pkg/cmd/util/helpers.go standardErrorMessage, "The connection to the server
  127.0.0.1:16443 was refused - did you specify the right host or port?", exit 1;
- without the datastore's quorum, the API server's 504 naming what was asked (dqlite.timed_out),
  exit 1; an addon's enable or disable script gets it from its kubectl too;
- ``get nodes -o json``: a List of the Nodes (node_objects.item), and ``get node NAME -o json``
  one Node, or NotFound; label, taint, annotate and patch of a node (node_objects.py);
- ``cordon``, ``uncordon`` and ``drain`` (pkg/cmd/drain/drain.go RunCordonOrUncordon, RunDrain):
  "node/<n> cordoned", "already cordoned", "uncordoned", "already uncordoned", then drain's pods
  (node_objects.drain_pods); an unknown node is `Error from server (NotFound): nodes "<n>" not
  found`, exit 1 (helpers.go standardErrorMessage, apimachinery's NewNotFound);
- ``apply -f -`` (the manifest on stdin, ``--dry-run=server`` too), ``get`` and ``annotate`` of
  other objects (kube_objects.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from . import dqlite, kube_objects, node_objects
from .cli import emit

API_PORT = 16443
WORKER = "This MicroK8s deployment is acting as a node in a cluster. Please use the microk8s kubectl on the master."
API_DOWN = f"The connection to the server 127.0.0.1:{API_PORT} was refused - did you specify the right host or port?"
NODE_WORDS = ("node", "nodes", "no")
# The flags whose value may follow as the next argument (--timeout 5m).
VALUED = {"--timeout", "--grace-period", "--pod-selector", "--selector", "-l", "--chunk-size", "-o", "--output"}


def operands(args: list[str]) -> list[str]:
    """kubectl's arguments less its flags, and less the values of flags given apart."""
    return [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in VALUED)]


def node_word(args: list[str]) -> bool:
    """Whether kubectl's first operand names Nodes (node, nodes, no, node/NAME)."""
    names = operands(args)
    return bool(names) and names[0].split("/", 1)[0] in NODE_WORDS


def not_reproduced(args: list[str]) -> int:
    print(f"fake microk8s: kubectl {' '.join(args)} is not reproduced", file=sys.stderr)
    return 2


def unavailable(args: list[str]) -> int:
    """``kubectl ARGS`` when the API server's datastore does not answer: its 504."""
    print(dqlite.timed_out(args, operands(args[1:])), file=sys.stderr)
    return 1


def addon_timed_out() -> int:
    """An addon's enable or disable when its kubectl gets the API server's 504."""
    print(f"Error from server (Timeout): {dqlite.TIMED_OUT}", file=sys.stderr)
    return 1


def get_nodes(nodes: list[dict], item: Callable[[dict], dict]) -> int:
    """``get nodes -o json``: ``item`` makes each entry's Node (node_objects.item)."""
    items = []
    for entry in nodes:
        node = item(entry)
        del node["apiVersion"], node["kind"]
        items.append(node)
    print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return 0


def get_node(nodes: list[dict], name: str, item: Callable[[dict], dict]) -> int:
    """``get node NAME -o json``: the Node object, or NotFound."""
    found = next((n for n in nodes if n["name"] == name), None)
    if found is None:
        return emit(node_objects.not_found(name))
    print(json.dumps(item(found)))
    return 0


def edit(nodes: list[dict], verb: str, args: list[str]) -> tuple[str | None, tuple[int, str, str, bool]]:
    """label, taint, annotate or patch of one node (node_objects.py), changed in place: its name, the answer."""
    if verb == "patch":
        name = node_objects.patched_node(args)
    else:
        names = operands(args)
        name = names[1] if names[:1] and names[0] in NODE_WORDS and len(names) > 1 else None
        if names[:1] and "/" in names[0]:
            name = names[0].split("/", 1)[1]
    found = next((n for n in nodes if n["name"] == name), None)
    change = {
        "label": node_objects.label,
        "taint": node_objects.taint,
        "annotate": node_objects.annotate,
        "patch": node_objects.patch,
    }[verb]
    return name, change(found, args)


def schedule(nodes: list[dict], verb: str, args: list[str]) -> tuple[dict | None, tuple[int, str, str, bool]]:
    """cordon, uncordon, or drain's cordon: the node, changed in place (None when unknown), and the answer."""
    names = operands(args)
    found = next((n for n in nodes if names and n["name"] == names[0]), None)
    if found is None:
        return None, (1, "", f'Error from server (NotFound): nodes "{names[0] if names else ""}" not found\n', False)
    name, desired = found["name"], verb != "uncordon"
    already = bool(found.get("unschedulable")) == desired
    found["unschedulable"] = desired
    done = f"{'already ' if already else ''}{'cordoned' if desired else 'uncordoned'}"
    return found, (0, f"node/{name} {done}\n", "", True)


def drain(objects: dict, name: str, args: list[str], posting: bool = True) -> tuple[int, str, str, bool]:
    """
    drain's pods, once the node is cordoned (node_objects.drain_pods); a node whose kubelet is no
    longer ``posting`` (Ready Unknown) confirms no deletion.
    """
    return node_objects.drain_pods(objects, name, args, node_objects.calico_pod(name), posting)


def objects(stored: dict, verb: str, args: list[str], manifest: Callable[[], str]) -> tuple[int, str, str, bool]:
    """apply -f - (``manifest``, read only then), get or annotate of objects other than Nodes (kube_objects.py)."""
    if verb == "apply":
        if args[:2] != ["-f", "-"] or any(a not in ("-f", "-", "--dry-run=server") for a in args):
            return 2, "", f"fake microk8s: kubectl apply {' '.join(args)} is not reproduced\n", False
        return kube_objects.apply(stored, manifest(), "--dry-run=server" in args)
    if verb == "get":
        return kube_objects.get(stored, args)
    return kube_objects.annotate(stored, args)
