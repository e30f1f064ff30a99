"""
kubectl on API objects other than Nodes, for both fake microk8s programs (this package's
__init__.py names them), as node_objects.py is for Nodes: ``apply -f -``, ``get``, ``annotate``
on a non-Node object. Each fake keeps the objects with its cluster database
(``"objects"``: {"<Kind>/<namespace>/<name>": object}, the namespace empty for a cluster-scoped
kind) and passes that map in; a function returns ``(exit code, stdout, stderr, changed)`` and
changes the map in place, and the fake writes it back when ``changed``.

The record a test reads: every time kubectl changes an object, the fake writes the cluster's
whole map, as above, to ``fake/objects.json`` below the node's $SNAP_DATA
(``record(snap_data, objects)``): on a rehearsal host /var/snap/microk8s/current/fake/objects.json
of the node that ran kubectl (the Kubernetes master, for what Salt applies), in the L4 fake
$FAKE_MICROK8S_DIR/fake/objects.json. ``"Secret/kube-system/cloud-config"`` holds cloud.conf
base64-encoded in ``data``, as the API server keeps it.

Where each behaviour comes from (kubernetes/kubectl, k8s.io/cli-runtime, k8s.io/api):
- ``apply -f -`` (pkg/cmd/apply/apply.go): every document of the YAML or JSON stream on stdin,
  a ``List``'s items one by one (resource.Builder flattens lists); an object kubectl never
  applied is created, carrying its configuration in the annotation
  ``kubectl.kubernetes.io/last-applied-configuration`` (apply.go/util.go CreateApplyAnnotation);
  one whose last applied configuration is the same and whose live fields all still match is
  ``unchanged`` (the three-way patch is empty), any other is ``configured``; each prints
  ``<kind>[.<group>]/<name> <operation>`` (cli-runtime pkg/printers/name.go: the lower-cased
  kind, the API group after a dot unless it is the core group), with ``--dry-run=server`` followed
  by " (server dry run)" and nothing kept (cmdutil.PrintFlagsWithDryRunStrategy); a namespaced
  object without a namespace goes to ``default``;
- a workload (DaemonSet, Deployment, StatefulSet) gets ``metadata.generation`` 1 when created
  and one more whenever its ``spec`` changes (kubernetes pkg/registry/apps/<kind>/strategy.go:
  PrepareForCreate, and PrepareForUpdate's ``!apiequality.Semantic.DeepEqual(new.Spec,
  old.Spec)``). The fakes run no pods: a new ``spec.template`` is what makes the controllers
  replace every pod (pkg/controller/daemon/update.go by the template's controller-revision-hash;
  pkg/controller/deployment/sync.go a new ReplicaSet by its pod-template-hash, both
  controller.ComputeHash of the template), so a test reads a rollout there;
- a Secret's ``stringData`` is merged into ``data``, base64-encoded, and never stored (core/v1
  Secret: "stringData ... is merged into the data field on write ... never output when reading
  from the API"); ``data`` must be base64 (the API server's decoding fails otherwise);
- ``get KIND [NAME] [-n NS] [--ignore-not-found] -o json | -o jsonpath={.a.b}``: one object, or
  ``{"kind": "List", "items": [...]}``; a missing object is `Error from server (NotFound):
  <resource> "<name>" not found`, exit 1 (apimachinery NewNotFound, kubectl helpers.go), or
  nothing with --ignore-not-found; jsonpath prints a string as it is and anything else as JSON,
  and nothing for a missing field (client-go util/jsonpath; kubectl get allows missing keys by
  default, --allow-missing-template-keys=true); only dotted field paths are reproduced;
- ``annotate KIND NAME k=v [k-] [--overwrite]`` as node_objects.annotate does it for Nodes,
  printing ``<kind>[.<group>]/<name> annotated``;
- microk8s' hostpath-storage addon applies the StorageClass ``microk8s-hostpath``, annotated
  ``storageclass.kubernetes.io/is-default-class: "true"`` by default (canonical/
  microk8s-core-addons addons/hostpath-storage/enable DEFAULT_CLASS="true" and storage.yaml,
  commit f689811): ``hostpath_storage_class()``.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from pathlib import Path

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
# The kinds whose metadata.generation the fakes keep (above).
WORKLOADS = {"DaemonSet", "Deployment", "StatefulSet"}
# The kinds the fakes meet that are cluster-scoped (kubectl api-resources: NAMESPACED false).
CLUSTER_SCOPED = {
    "ClusterRole",
    "ClusterRoleBinding",
    "CSIDriver",
    "CustomResourceDefinition",
    "StorageClass",
    "Namespace",
    "Node",
}
# kubectl's names for the kinds (kubectl api-resources: NAME, SHORTNAMES, the kind lower-cased).
RESOURCES = {
    "Secret": ("secrets",),
    "ServiceAccount": ("serviceaccounts", "sa"),
    "ClusterRole": ("clusterroles",),
    "ClusterRoleBinding": ("clusterrolebindings",),
    "DaemonSet": ("daemonsets", "ds"),
    "Deployment": ("deployments", "deploy"),
    "CSIDriver": ("csidrivers",),
    "CustomResourceDefinition": ("customresourcedefinitions", "crd", "crds"),
    "StorageClass": ("storageclasses", "sc"),
    "Endpoints": ("endpoints", "ep"),
}
# What kubectl's flags the fakes read take as a value when given apart (-n kube-system).
VALUED = {"-n", "--namespace", "-o", "--output", "-f", "--filename", "-p", "--patch", "--type"}


def group(api_version: str) -> str:
    """The API group of ``apiVersion``: "" for the core group (``v1``)."""
    return api_version.rsplit("/", 1)[0] if "/" in api_version else ""


def key(obj: dict) -> str:
    """``<Kind>/<namespace>/<name>``, the record's key (the namespace empty when cluster-scoped)."""
    metadata = obj["metadata"]
    return f"{obj['kind']}/{metadata.get('namespace') or ''}/{metadata['name']}"


def printed(obj: dict) -> str:
    """name.go: ``<kind>[.<group>]/<name>``."""
    api_group = group(obj["apiVersion"])
    return f"{obj['kind'].lower()}{'.' + api_group if api_group else ''}/{obj['metadata']['name']}"


def _yaml():
    """PyYAML, imported by the commands that read YAML only: its import is a third of the fake's start."""
    import yaml

    return yaml


def documents(text: str) -> list[dict]:
    """The objects of a YAML (or JSON) stream, a List's items in its place; raises ValueError naming the fault."""
    yaml = _yaml()
    found = []
    for document in yaml.safe_load_all(text):
        if document is None:
            continue
        if not isinstance(document, dict) or not document.get("kind") or not document.get("apiVersion"):
            raise ValueError(f"error: unable to decode \"STDIN\": Object 'Kind' is missing in '{json.dumps(document)}'")
        if document["kind"] == "List":
            found.extend(item for item in document.get("items") or [])
            continue
        found.append(document)
    return found


def _normalized(obj: dict) -> dict:
    """The object as the API server stores it: namespace filled in, a Secret's stringData merged into data."""
    obj = copy.deepcopy(obj)
    metadata = obj.setdefault("metadata", {})
    if obj["kind"] not in CLUSTER_SCOPED:
        metadata.setdefault("namespace", "default")
    else:
        metadata.pop("namespace", None)
    if obj["kind"] == "Secret":
        data = obj.get("data") or {}
        for name, value in data.items():
            try:
                base64.b64decode(value, validate=True)
            except (binascii.Error, TypeError):
                raise ValueError(
                    f'Error from server (BadRequest): error when creating "STDIN": Secret in version "v1" cannot be '
                    f"handled as a Secret: illegal base64 data in data[{name}]"
                ) from None
        for name, value in (obj.pop("stringData", None) or {}).items():
            data[name] = base64.b64encode(str(value).encode()).decode()
        obj["data"] = data
    return obj


def _subset(wanted, live) -> bool:
    """Every field of ``wanted`` has its value in ``live`` (maps compared key by key, lists whole)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(k in live and _subset(v, live[k]) for k, v in wanted.items())
    return wanted == live


def apply(objects: dict, text: str, dry_run: bool) -> tuple[int, str, str, bool]:
    """``kubectl apply -f -`` of ``text`` (see the docstring); ``dry_run``: --dry-run=server."""
    yaml = _yaml()
    try:
        applied = [_normalized(obj) for obj in documents(text)]
    except (ValueError, yaml.YAMLError) as error:
        return 1, "", f"{error}\n", False
    if not applied:
        return 1, "", "error: no objects passed to apply\n", False
    out, changed = [], False
    for obj in applied:
        if not obj["metadata"].get("name"):
            why = "error when retrieving current configuration: resource name may not be empty"
            return 1, "".join(out), f"error: {why}\n", changed
        configuration = json.dumps(obj, sort_keys=True)
        current = objects.get(key(obj))
        if current is None:
            operation = "created"
        else:
            last = (current["metadata"].get("annotations") or {}).get(LAST_APPLIED)
            same = last is not None and json.loads(last) == json.loads(configuration)
            operation = "unchanged" if same and _subset(obj, current) else "configured"
        out.append(f"{printed(obj)} {operation}{' (server dry run)' if dry_run else ''}\n")
        if dry_run or operation == "unchanged":
            continue
        stored = copy.deepcopy(current) if current else {}
        stored.update(copy.deepcopy(obj))
        # The three-way merge keeps live annotations the configuration never named.
        live = (current or {}).get("metadata", {}).get("annotations") or {}
        annotations = {**live, **(obj["metadata"].get("annotations") or {}), LAST_APPLIED: configuration}
        stored["metadata"] = {**(current or {}).get("metadata", {}), **obj["metadata"], "annotations": annotations}
        if obj["kind"] in WORKLOADS:
            generation = (current or {}).get("metadata", {}).get("generation", 0)
            same_spec = current is not None and current.get("spec") == stored.get("spec")
            stored["metadata"]["generation"] = generation if same_spec else generation + 1
        objects[key(obj)] = stored
        changed = True
    return 0, "".join(out), "", changed


def operands(args: list[str]) -> list[str]:
    """The arguments less flags and the values of flags given apart."""
    return [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in VALUED)]


def flag(args: list[str], *names: str) -> str | None:
    """The value of the first of ``names`` (``-n x``, ``--namespace=x`` or ``-ojson``), or None."""
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                return args[i + 1]
            if arg.startswith(f"{name}="):
                return arg.split("=", 1)[1]
            if name == "-o" and arg.startswith("-o") and len(arg) > 2 and not arg.startswith("-o="):
                return arg[2:]
    return None


def kind_of(word: str) -> str | None:
    """The kind kubectl's resource word names (``secret``, ``secrets``, ``sc``, ``storageclass.storage.k8s.io``)."""
    word = word.split(".", 1)[0].lower()
    for kind, names in RESOURCES.items():
        if word == kind.lower() or word in names:
            return kind
    return None


def _jsonpath(template: str, obj) -> str | None:
    """A dotted jsonpath ``{.a.b}`` (``\\.`` escapes a dot in a key); None when it is not one."""
    if not (template.startswith("{.") and template.endswith("}")):
        return None
    path, parts, part = template[2:-1], [], ""
    i = 0
    while i < len(path):
        if path[i] == "\\" and i + 1 < len(path):
            part += path[i + 1]
            i += 2
            continue
        if path[i] == ".":
            parts.append(part)
            part = ""
        elif path[i] in "[]{}$@, ":
            return None
        else:
            part += path[i]
        i += 1
    parts.append(part)
    value = obj
    for name in parts:
        if not isinstance(value, dict) or name not in value:
            return ""
        value = value[name]
    return value if isinstance(value, str) else json.dumps(value)


def get(objects: dict, args: list[str]) -> tuple[int, str, str, bool]:
    """``kubectl get KIND [NAME] ...`` (see the docstring); args after ``get``."""
    names = operands(args)
    kind = kind_of(names[0]) if names else None
    output = flag(args, "-o", "--output")
    if kind is None or len(names) > 2 or output is None or not (output == "json" or output.startswith("jsonpath=")):
        return 2, "", f"fake microk8s: kubectl get {' '.join(args)} is not reproduced\n", False
    namespace = "" if kind in CLUSTER_SCOPED else flag(args, "-n", "--namespace") or "default"
    if len(names) == 1:
        items = [obj for ref, obj in sorted(objects.items()) if ref.startswith(f"{kind}/{namespace}/")]
        shown = {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}
    else:
        shown = objects.get(f"{kind}/{namespace}/{names[1]}")
        if shown is None:
            if "--ignore-not-found" in args or "--ignore-not-found=true" in args:
                return 0, "", "", False
            return 1, "", f'Error from server (NotFound): {RESOURCES[kind][0]} "{names[1]}" not found\n', False
    if output == "json":
        return 0, json.dumps(shown, indent=4) + "\n", "", False
    printed_value = _jsonpath(output.split("=", 1)[1], shown)
    if printed_value is None:
        return 2, "", f"fake microk8s: jsonpath {output} is not reproduced\n", False
    return 0, printed_value, "", False


def annotate(objects: dict, args: list[str]) -> tuple[int, str, str, bool]:
    """``kubectl annotate KIND NAME k=v k- [--overwrite]`` on a non-Node object."""
    names = operands(args)
    kind = kind_of(names[0]) if names else None
    pairs = names[2:]
    if kind is None or len(names) < 3 or any(not ("=" in p or p.endswith("-")) for p in pairs):
        return 2, "", f"fake microk8s: kubectl annotate {' '.join(args)} is not reproduced\n", False
    namespace = "" if kind in CLUSTER_SCOPED else flag(args, "-n", "--namespace") or "default"
    obj = objects.get(f"{kind}/{namespace}/{names[1]}")
    if obj is None:
        return 1, "", f'Error from server (NotFound): {RESOURCES[kind][0]} "{names[1]}" not found\n', False
    annotations = dict(obj["metadata"].get("annotations") or {})
    new = dict(pair.split("=", 1) for pair in pairs if "=" in pair)
    if "--overwrite" not in args:
        taken = [f"'{k}' already has a value ({annotations[k]})" for k, v in new.items() if annotations.get(k, v) != v]
        if taken:
            why = f"--overwrite is false but found the following declared annotation(s): {'; '.join(taken)}"
            return 1, "", f"error: {why}\n", False
    annotations.update(new)
    for pair in pairs:
        if "=" not in pair:
            annotations.pop(pair[:-1], None)
    changed = annotations != (obj["metadata"].get("annotations") or {})
    obj["metadata"]["annotations"] = annotations
    return 0, f"{printed(obj)} annotated\n", "", changed


def hostpath_storage_class() -> dict:
    """The StorageClass microk8s' hostpath-storage addon applies (see the docstring), as the API server keeps it."""
    obj = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {
            "name": "microk8s-hostpath",
            "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
        },
        "provisioner": "microk8s.io/hostpath",
        "reclaimPolicy": "Delete",
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    obj["metadata"]["annotations"][LAST_APPLIED] = json.dumps(obj, sort_keys=True)
    return obj


def record(snap_data: Path, objects: dict) -> None:
    """Writes the record (see the docstring): ``fake/objects.json`` below ``snap_data``."""
    path = snap_data / "fake" / "objects.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(".objects.json.tmp")
    tmp.write_text(json.dumps(objects, indent=1, sort_keys=True))
    tmp.replace(path)


# microk8s-resources/default-args/kube-apiserver's lines the fakes need (the install hook copies
# default-args to $SNAP_DATA/args): no --advertise-address and no --bind-address.
DEFAULT_APISERVER_ARGS = (
    "--cert-dir=${SNAP_DATA}/certs\n"
    "--service-cluster-ip-range=10.152.183.0/24\n"
    "--tls-cert-file=${SNAP_DATA}/certs/server.crt\n"
    "--tls-private-key-file=${SNAP_DATA}/certs/server.key\n"
    "--secure-port=16443\n"
)
SECURE_PORT = 16443


def _argument(args_text: str, flag: str) -> str | None:
    """The value of ``flag``'s first line (``--flag=value`` or ``--flag value``) in an arguments file."""
    for line in args_text.splitlines():
        parts = line.strip().replace("=", " ", 1).split(None, 1)
        if parts and parts[0] == flag:
            return parts[1].strip().strip("\"'") if len(parts) > 1 else ""
    return None


def advertised_address(args_text: str, route_address: str) -> str:
    """
    The address kube-apiserver advertises as it starts, from its arguments: --advertise-address;
    else --bind-address unless unspecified; else the address of the default route's interface
    (k8s.io/apiserver pkg/server/options server_run_options.go DefaultAdvertiseAddress, through
    serving.go DefaultExternalAddress and k8s.io/apimachinery pkg/util/net ResolveBindAddress,
    ChooseHostInterface), ``route_address``.
    """
    for flag in ("--advertise-address", "--bind-address"):
        value = _argument(args_text, flag)
        if value and value not in ("0.0.0.0", "::"):
            return value
    return route_address


def kubernetes_endpoints(addresses: list[str]) -> dict:
    """
    default/kubernetes as the API servers' endpoint reconciler keeps it (the default lease
    reconciler, kubernetes pkg/controlplane/reconcilers/lease.go: each API server's advertised
    address while its lease lives, sorted), with the secure port as "https".
    """
    return {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {
            "name": "kubernetes",
            "namespace": "default",
            "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"},
        },
        "subsets": [
            {
                "addresses": [{"ip": ip} for ip in sorted(set(addresses))],
                "ports": [{"name": "https", "port": SECURE_PORT, "protocol": "TCP"}],
            }
        ],
    }
