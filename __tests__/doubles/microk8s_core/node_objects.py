"""
kubectl on Node objects for both fake microk8s programs (this package's __init__.py names
them): a node's labels, annotations and taints, ``get node NAME -o json``, and ``label``,
``taint`` and ``annotate`` as kubectl does them. Each fake keeps the node entries in its
own store ({"name", "address", ...} plus "labels", "annotations", "taints" once written) and
passes one in; a function returns ``(exit code, stdout, stderr, changed)`` and changes the entry
in place, and the fake writes its store back when ``changed``.

Where each behaviour comes from (kubernetes/kubectl, k8s.io/apimachinery):
- a kubelet registers its node with its own labels (kubelet_node_status.go initialNode:
  kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch and their beta.kubernetes.io
  twins) and microk8s' --node-labels (microk8s-resources/default-args/kubelet:
  microk8s.io/cluster=true,node.kubernetes.io/microk8s-controlplane=microk8s-controlplane; a
  worker's, scripts/wrappers/join.py: node.kubernetes.io/microk8s-worker=microk8s-worker);
- ``kubectl label`` (pkg/cmd/label/label.go): the changes come after the resources
  (cmdutil.GetResourcesAndPairs: "all resources must be specified before label changes: X");
  ``key=value`` sets, ``key-`` removes (parseLabels: "invalid label spec", "unknown label spec",
  "can not both modify and remove a label in the same command"); values are checked before the
  node is read ("invalid label value: "k=v": <why>", IsValidLabelValue); a removed label the node
  does not have prints `label "k" not found.` and is no error; without --overwrite a key that has
  another value fails ("'k' already has a value (v), and --overwrite is false",
  validateNoOverwrites; the same value is fine); keys are checked by the API server (core/v1
  ValidateObjectMeta → metav1 validation ValidateLabels, IsLabelKey), which kubectl prints as
  `The Node "n" is invalid: metadata.labels: Invalid value: "k": <why>` (cmdutil checkErr on an
  Invalid StatusError; several causes: that line ending in ": " and one "* <cause>" line each);
  prints node/<n> labeled, unlabeled, modified (both) or not labeled (updateDataChangeMsg);
- ``kubectl taint`` (pkg/cmd/taint/taint.go, utils.go): resources first ("all resources must be
  specified before taint changes: X"); ``key=value:Effect`` or ``key:Effect`` adds (the effect is
  required: "invalid taint spec"), ``key:Effect-`` removes that taint, ``key-`` every taint with
  the key; parse errors are usage errors (parseTaint: "invalid taint effect: E, unsupported taint
  effect", "invalid taint spec: S, <why>", "duplicated taints with the same key and effect",
  followed by "See 'kubectl taint -h' for help and examples"); adding and removing the same key
  and effect in one command fails (Validate: "can not both modify and remove the following
  taint(s) in the same command: k=E"); without --overwrite a taint with the same key and effect
  fails ("node n already has k taint(s) with same effect(s) and --overwrite is false"); with it
  the taint's value is replaced (the new taints first, then the node's others: reorganizeTaints);
  removing a taint the node lacks fails, changing nothing (`taint "k:E" not found`); prints
  node/<n> tainted, untainted or modified (always modified with --overwrite);
- ``kubectl annotate`` (pkg/cmd/annotate/annotate.go): ``key=value`` (split at the first "=",
  cmdutil.ParsePairs, so a value may hold "=") and ``key-``; without --overwrite an annotation
  that has another value fails ("--overwrite is false but found the following declared
  annotation(s): 'k' already has a value (v)"); removing a missing one is no error; the API
  server checks keys (ValidateAnnotations: IsQualifiedName of the lower-cased key); prints
  node/<n> annotated;
- ``kubectl patch node NAME --type=merge -p '{"spec": {"providerID": "..."}}'`` (pkg/cmd/patch/
  patch.go: prints node/<n> patched, or "patched (no change)" when the object stays the same): only
  spec.providerID is reproduced, and the API server lets it change only from "" (kubernetes
  pkg/apis/core/validation/validation.go ValidateNodeUpdate: `The Node "n" is invalid:
  spec.providerID: Forbidden: node updates may not change providerID except from "" to valid`);
- an unknown node: `Error from server (NotFound): nodes "n" not found`, exit 1 (helpers.go
  standardErrorMessage, apimachinery NewNotFound); every error exits 1;
- a Node's InternalIPs (status.addresses), in the order its status lists them: the entry's
  "internal_ips" when it has several, else its "address". A kubelet alone reports the address of
  its default route; a node the OpenStack cloud controller manager initialised lists every fixed
  IP of its ports, port by port, then those of the server's other networks by network name
  (cloud-provider-openstack v1.35.0 pkg/openstack/instances_addresses.go nodeAddresses), reordered
  only by the `address-sort-order` option. ``remove-node`` finds the node given by name or by any
  of its InternalIPs, then its dqlite member by the node's *first* InternalIP (microk8s
  scripts/wrappers/remove_node.py remove_dqlite_node): ``removal_target``;
- ``kubectl drain NODE``, once the node is cordoned (pkg/drain/drain.go GetPodsForDeletion,
  filters.go; pkg/cmd/drain/drain.go RunDrain): the node's pods, the calico-node DaemonSet pod
  microk8s runs on every node and the Pods applied with ``spec.nodeName`` set to it, go through
  kubectl's filters: a DaemonSet's pod stays (fatal without --ignore-daemonsets), a pod with an
  emptyDir volume needs --delete-emptydir-data, and a pod whose ownerReferences name no
  controller needs --force ("cannot delete Pods declare no controller (use --force to override)",
  kubectl 1.28); fatal filters fail the drain before any pod is evicted (`error: unable to drain
  node "n" due to error:<errors>, continuing command...`, then "There are pending nodes to be
  drained:"), the others print "WARNING: <why>: <pods>; ...". Each other pod is evicted ("evicting
  pod ns/name", then "pod/name evicted"), unless a PodDisruptionBudget of its namespace whose
  selector matches its labels allows no disruption (the API server's eviction REST handler,
  pkg/registry/core/pod/storage/eviction.go, and the disruption controller's
  disruptionsAllowed: the matching pods less minAvailable, or maxUnavailable; every pod counted
  healthy): the eviction is refused with 429, which kubectl retries every 5 s (`error when
  evicting pods/"name" -n "ns" (will retry after 5s): Cannot evict pod as it would violate the
  pod's disruption budget.`) until --timeout, then fails (`global timeout reached: <d>`). An
  evicted pod is gone from its node once its kubelet confirms it; the fakes run no controller to
  create its replacement: ``drain_pods``. On a node that is not Ready (its Ready condition Unknown:
  these fakes' only not-Ready) no kubelet confirms: the API server keeps the evicted pod with a
  metadata.deletionTimestamp at the end of its grace period (graceful deletion: drain's
  --grace-period when given, else the pod's terminationGracePeriodSeconds, 30 by default), and
  kubectl polls it every second (drain.go waitForDelete) until --timeout (`error when waiting for
  pod "name" in namespace "ns" to terminate: context deadline exceeded`, wait/loop.go returning
  ctx.Err()), unless --skip-wait-for-delete-timeout=N is over 0: a pod whose deletionTimestamp is
  more than N whole seconds past is no longer waited for (`pod "name" has DeletionTimestamp older
  than N seconds, skipping`, filters.go shouldSkipPod) and, that old before the drain, not evicted
  again (skipDeletedFilter, the first filter). A pod being deleted counts as no healthy pod for a
  PodDisruptionBudget (the disruption controller's countHealthyPods). Not modelled: the kubelet that
  comes back, or the pod garbage collector once the Node is gone, deleting such a pod: it stays
  until the test's fake is reset.
"""

from __future__ import annotations

import calendar
import hashlib
import json
import re
import time

EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A metav1.Time (a deletionTimestamp, a condition's lastTransitionTime): RFC 3339 in whole
# seconds, as the API server writes it.
TIMESTAMP = "%Y-%m-%dT%H:%M:%SZ"
# k8s.io/apimachinery pkg/api/validate/content/kube.go and dns.go: label keys and values.
_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_VALUE_FMT = f"({_KEY_FMT})?"
_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_KEY_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)
_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
    "and must start and end with an alphanumeric character"
)
_SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
    "and must start and end with an alphanumeric character"
)


def _regex_error(message: str, fmt: str, *examples: str) -> str:
    """validation.go RegexError, its odd spacing included."""
    if not examples:
        return f"{message} (regex used for validation is '{fmt}')"
    listed = " or ".join(f"'{example}', " for example in examples)
    return f"{message} (e.g. {listed}regex used for validation is '{fmt}')"


def key_errors(key: str) -> list[str]:
    """content.IsLabelKey (IsQualifiedName)."""
    errors = []
    parts = key.split("/")
    if len(parts) > 2:
        return [
            "a valid label key "
            + _regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            errors.append("prefix part must be non-empty")
        else:
            if len(prefix) > 253:
                errors.append("prefix part must be no more than 253 characters")
            if not re.fullmatch(_SUBDOMAIN_FMT, prefix):
                errors.append("prefix part " + _regex_error(_SUBDOMAIN_MSG, _SUBDOMAIN_FMT, "example.com"))
    if not name:
        errors.append("name part must be non-empty")
    elif len(name) > 63:
        errors.append("name part must be no more than 63 characters")
    if not re.fullmatch(_KEY_FMT, name):
        errors.append("name part " + _regex_error(_KEY_MSG, _KEY_FMT, "MyName", "my.name", "123-abc"))
    return errors


def value_errors(value: str) -> list[str]:
    """content.IsLabelValue."""
    errors = ["must be no more than 63 characters"] if len(value) > 63 else []
    if not re.fullmatch(_VALUE_FMT, value):
        errors.append(_regex_error(_VALUE_MSG, _VALUE_FMT, "MyValue", "my_value", "12345"))
    return errors


def kubelet_labels(name: str, worker: bool) -> dict:
    """The labels a microk8s node registers with (see the docstring)."""
    role = "node.kubernetes.io/microk8s-worker" if worker else "node.kubernetes.io/microk8s-controlplane"
    return {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "microk8s.io/cluster": "true",
        role: role.rsplit("/", 1)[1],
    }


def metadata(entry: dict) -> dict:
    """
    A Node's metadata: the entry's labels (the kubelet's until written; ``worker`` in the entry
    marks a node joined with --worker), its annotations when it has any.
    """
    labels = entry.get("labels")
    if labels is None:
        labels = kubelet_labels(entry["name"], bool(entry.get("worker")))
    result = {"name": entry["name"], "labels": dict(labels)}
    if entry.get("annotations"):
        result["annotations"] = dict(entry["annotations"])
    return result


def spec(entry: dict) -> dict:
    """A Node's spec: providerID, unschedulable and taints, each left out while unset (core/v1 NodeSpec, omitempty)."""
    result = {}
    if entry.get("providerID"):
        result["providerID"] = entry["providerID"]
    if entry.get("unschedulable"):
        result["unschedulable"] = True
    if entry.get("taints"):
        result["taints"] = [dict(taint) for taint in entry["taints"]]
    return result


def internal_ips(entry: dict) -> list[str]:
    """The node's InternalIPs, in the order its status lists them."""
    return list(entry.get("internal_ips") or [entry["address"]])


def status_addresses(entry: dict) -> list[dict]:
    """A Node's status.addresses: its InternalIPs."""
    return [{"type": "InternalIP", "address": address} for address in internal_ips(entry)]


def observe_ready(entry: dict, status: str, boot_id: str | None = None, now: float | None = None) -> bool:
    """
    Records what the API server keeps of the node's status in ``entry``, True when it changed
    the entry (which the caller writes to the database). ``status`` is the Ready condition's:
    "True", "False" (a kubelet that posts its node not Ready) or "Unknown" (no kubelet posts).

    - ``ready_condition`` (``{"status", "since"}``): the Ready condition, its lastTransitionTime
      moved to ``now`` when its status changes. The kubelet sets it when it posts a new status
      (pkg/kubelet/nodestatus/setters.go, ReadyCondition), the node lifecycle controller when it
      turns the condition Unknown because the kubelet stopped posting
      (pkg/controller/nodelifecycle/node_lifecycle_controller.go, tryUpdateNodeHealth:
      ``LastTransitionTime = nowTimestamp``).
    - ``boot_id``: while a kubelet posts, the boot id it posts (setters.go, MachineInfo); the
      API server keeps the last one posted once the kubelet stops.

    Not modelled: the controller's grace period (node-monitor-grace-period, 40 s) and its monitor
    period (5 s). Here the condition turns Unknown at the first read of the node after its
    kubelet stopped, which may be up to 40 s earlier than the controller would turn it, or later
    when nothing reads the node for a while.
    """
    changed = False
    if (entry.get("ready_condition") or {}).get("status") != status:
        stamp = time.strftime(TIMESTAMP, time.gmtime(time.time() if now is None else now))
        entry["ready_condition"] = {"status": status, "since": stamp}
        changed = True
    if status != "Unknown" and boot_id and entry.get("boot_id") != boot_id:
        entry["boot_id"] = boot_id
        changed = True
    return changed


def item(entry: dict, status: str, kubelet_version: str, boot_id: str) -> dict:
    """
    One Node as the API server returns it: its metadata, spec and status.addresses (above), the
    Ready condition (``status``, observe_ready's) with its lastTransitionTime as ``observe_ready``
    recorded it, and the kubelet's version and its machine's boot id (core/v1 NodeSystemInfo) as
    last posted.
    """
    observe_ready(entry, status, boot_id)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": metadata(entry),
        "spec": spec(entry),
        "status": {
            "addresses": status_addresses(entry),
            "conditions": [
                {
                    "type": "Ready",
                    "status": entry["ready_condition"]["status"],
                    "lastTransitionTime": entry["ready_condition"]["since"],
                }
            ],
            "nodeInfo": {"kubeletVersion": f"v{kubelet_version}", "bootID": boot_id},
        },
    }


def removal_target(entries: list[dict], target: str) -> tuple[dict | None, str]:
    """
    remove_node.py remove_dqlite_node: the node named ``target``, or the first whose InternalIPs
    include it, and the address its dqlite member is looked up by: that node's first InternalIP
    (``target`` itself when no node is found, as its CalledProcessError path does).
    """
    found = next((e for e in entries if e["name"] == target), None)
    found = found or next((e for e in entries if target in internal_ips(e)), None)
    return found, internal_ips(found)[0] if found else target


def not_found(name: str) -> tuple[int, str, str, bool]:
    return 1, "", f'Error from server (NotFound): nodes "{name}" not found\n', False


def _fail(message: str) -> tuple[int, str, str, bool]:
    return 1, "", f"{message}\n", False


def _usage(message: str, command: str) -> tuple[int, str, str, bool]:
    return _fail(f"error: {message}\nSee 'kubectl {command} -h' for help and examples")


def _invalid(name: str, causes: list[tuple[str, str, str]]) -> tuple[int, str, str, bool]:
    """checkErr on an Invalid StatusError: one cause on the line, several as "* " lines."""
    lines = [f'{field}: Invalid value: "{value}": {why}' for field, value, why in causes]
    head = f'The Node "{name}" is invalid: '
    if len(lines) == 1:
        return _fail(head + lines[0])
    return _fail("\n".join([head, *(f"* {line}" for line in lines)]))


def _split(args: list[str], pair, what: str):
    """The resource words, the change words and the flags; or an error for a resource after a change."""
    flags = [a for a in args if a.startswith("--")]
    resources, changes = [], []
    for word in (a for a in args if not a.startswith("--")):
        if pair(word):
            changes.append(word)
        elif changes:
            return None, None, flags, f"error: all resources must be specified before {what} changes: {word}"
        else:
            resources.append(word)
    return resources, changes, flags, None


def _node_name(resources: list[str]) -> str | None:
    """``node NAME``, ``nodes NAME``, ``no NAME`` or ``node/NAME``: the one node these fakes handle."""
    if len(resources) == 1 and resources[0].split("/", 1)[0] in ("node", "nodes", "no") and "/" in resources[0]:
        return resources[0].split("/", 1)[1]
    if len(resources) == 2 and resources[0] in ("node", "nodes", "no"):
        return resources[1]
    return None


def _overwrite(flags: list[str]) -> bool | None:
    """--overwrite or --overwrite=true|false; None for a flag the fakes do not reproduce."""
    overwrite = False
    for flag in flags:
        if flag in ("--overwrite", "--overwrite=true"):
            overwrite = True
        elif flag != "--overwrite=false":
            return None
    return overwrite


def label(entry: dict | None, args: list[str]) -> tuple[int, str, str, bool]:
    """``kubectl label node NAME k=v k- [--overwrite]`` on ``entry`` (None: no such node)."""
    resources, pairs, flags, error = _split(
        args, lambda w: ("=" in w and w[0] != "=") or (w.endswith("-") and w != "-"), "label"
    )
    if error:
        return _fail(error)
    overwrite = _overwrite(flags)
    name = _node_name(resources)
    if overwrite is None or name is None:
        return 2, "", f"fake microk8s: kubectl label {' '.join(args)} is not reproduced\n", False
    new, remove = {}, []
    for spec_ in pairs:
        if "=" in spec_:
            parts = spec_.split("=")
            if len(parts) != 2:
                return _fail(f"error: invalid label spec: {spec_}")
            errors = value_errors(parts[1])
            if errors:
                return _fail(f'error: invalid label value: "{spec_}": {";".join(errors)}')
            new[parts[0]] = parts[1]
        else:
            remove.append(spec_[:-1])
    if any(key in new for key in remove):
        return _fail("error: can not both modify and remove a label in the same command")
    if not new and not remove:
        return _fail("error: at least one label update is required")
    if entry is None:
        return not_found(name)
    labels = metadata(entry)["labels"]
    out = "".join(f'label "{key}" not found.\n' for key in remove if key not in labels)
    if not overwrite:
        taken = [
            f"'{k}' already has a value ({labels[k]}), and --overwrite is false"
            for k, v in new.items()
            if k in labels and labels[k] != v
        ]
        if taken:
            return 1, out, ("error: " + taken[0] if len(taken) == 1 else "\n".join(taken)) + "\n", False
    causes = [("metadata.labels", key, why) for key in new for why in key_errors(key)]
    if causes:
        return 1, out, _invalid(entry["name"], causes)[2], False
    added = [k for k, v in new.items() if labels.get(k) != v]
    removed = [k for k in remove if k in labels]
    labels.update(new)
    for key in removed:
        del labels[key]
    message = "modified" if added and removed else "labeled" if added else "unlabeled" if removed else "not labeled"
    if added or removed:
        entry["labels"] = labels
    return 0, f"{out}node/{entry['name']} {message}\n", "", bool(added or removed)


def _taint_text(taint: dict) -> str:
    """core/v1 Taint.ToString."""
    value = taint.get("value") or ""
    if not taint.get("effect"):
        return f"{taint['key']}={value}:" if value else taint["key"]
    return f"{taint['key']}={value}:{taint['effect']}" if value else f"{taint['key']}:{taint['effect']}"


def _parse_taint(text: str) -> tuple[dict | None, str | None]:
    """utils.go parseTaint: ``({"key", "value", "effect"}, None)`` or ``(None, why)``."""
    parts = text.split(":")
    value, effect = "", ""
    if len(parts) == 1:
        key = parts[0]
    elif len(parts) == 2:
        effect = parts[1]
        if effect not in EFFECTS:
            return None, f"invalid taint effect: {effect}, unsupported taint effect"
        key_value = parts[0].split("=")
        if len(key_value) > 2:
            return None, f"invalid taint spec: {text}"
        key = key_value[0]
        if len(key_value) == 2:
            value = key_value[1]
            errors = value_errors(value)
            if errors:
                return None, f"invalid taint spec: {text}, {'; '.join(errors)}"
    else:
        return None, f"invalid taint spec: {text}"
    errors = key_errors(key)
    if errors:
        return None, f"invalid taint spec: {text}, {'; '.join(errors)}"
    return {"key": key, "value": value, "effect": effect}, None


def taint(entry: dict | None, args: list[str]) -> tuple[int, str, str, bool]:
    """``kubectl taint node NAME k=v:E k:E- k- [--overwrite]`` on ``entry`` (None: no such node)."""
    resources, specs, flags, error = _split(args, lambda w: "=" in w or ":" in w or w.endswith("-"), "taint")
    if error:
        return _fail(error)
    overwrite = _overwrite(flags)
    name = _node_name(resources)
    if overwrite is None or name is None:
        return 2, "", f"fake microk8s: kubectl taint {' '.join(args)} is not reproduced\n", False
    if not specs:
        return _fail("error: at least one taint update is required")
    add, remove, seen = [], [], set()
    for text in specs:
        parsed, why = _parse_taint(text[:-1] if text.endswith("-") else text)
        if why:
            return _usage(why, "taint")
        if text.endswith("-"):
            remove.append({"key": parsed["key"], "effect": parsed["effect"]})
            continue
        if not parsed["effect"]:
            return _usage(f"invalid taint spec: {text}", "taint")
        if (parsed["key"], parsed["effect"]) in seen:
            return _usage(f"duplicated taints with the same key and effect: {parsed}", "taint")
        seen.add((parsed["key"], parsed["effect"]))
        add.append(parsed)
    conflicts = [
        f"{r['key']}={r['effect']}"
        for a in add
        for r in remove
        if a["key"] == r["key"] and (not r["effect"] or a["effect"] == r["effect"])
    ]
    if conflicts:
        return _fail(
            f"error: can not both modify and remove the following taint(s) in the same command: {', '.join(conflicts)}"
        )
    if entry is None:
        return not_found(name)
    old = [dict(t) for t in entry.get("taints") or []]
    if not overwrite:
        exists = [a["key"] for a in add for o in old if a["key"] == o["key"] and a["effect"] == o["effect"]]
        if exists:
            taints = ",".join(exists)
            why = "taint(s) with same effect(s) and --overwrite is false"
            return _fail(f"error: node {entry['name']} already has {taints} {why}")
    # reorganizeTaints: the new taints, then the node's others (matched by key and effect).
    new = [{k: v for k, v in a.items() if v} for a in add]
    new += [o for o in old if not any(o["key"] == a["key"] and o["effect"] == a["effect"] for a in add)]
    added = len(old) != len(new)
    errors, deleted = [], False
    for r in remove:
        kept = [t for t in new if not (t["key"] == r["key"] and (not r["effect"] or t["effect"] == r["effect"]))]
        deleted = len(kept) != len(new)
        if not deleted:
            errors.append(f'taint "{_taint_text(r)}" not found')
        new = kept
    if errors:
        return _fail("error: " + errors[0] if len(errors) == 1 else "\n".join(errors))
    message = "modified" if (added and deleted) or overwrite else "tainted" if added else "untainted"
    changed = new != old
    entry["taints"] = new
    return 0, f"node/{entry['name']} {message}\n", "", changed


def annotate(entry: dict | None, args: list[str]) -> tuple[int, str, str, bool]:
    """``kubectl annotate node NAME k=v k- [--overwrite]`` on ``entry`` (None: no such node)."""
    resources, pairs, flags, error = _split(
        args, lambda w: ("=" in w and w[0] != "=") or (w.endswith("-") and w != "-"), "annotation"
    )
    if error:
        return _fail(error)
    overwrite = _overwrite(flags)
    name = _node_name(resources)
    if overwrite is None or name is None:
        return 2, "", f"fake microk8s: kubectl annotate {' '.join(args)} is not reproduced\n", False
    new = dict(pair.split("=", 1) for pair in pairs if "=" in pair and pair[0] != "=")
    remove = [pair[:-1] for pair in pairs if not ("=" in pair and pair[0] != "=")]
    both = [key for key in remove if key in new]
    if both:
        return _fail(
            f"error: can not both modify and remove the following annotation(s) in the same command: {', '.join(both)}"
        )
    if not new and not remove:
        return _fail("error: at least one annotation update is required")
    if entry is None:
        return not_found(name)
    annotations = dict(entry.get("annotations") or {})
    if not overwrite:
        taken = [
            f"'{k}' already has a value ({annotations[k]})"
            for k, v in new.items()
            if k in annotations and annotations[k] != v
        ]
        if taken:
            return _fail(
                f"error: --overwrite is false but found the following declared annotation(s): {'; '.join(taken)}"
            )
    causes = [("metadata.annotations", key, why) for key in new for why in key_errors(key.lower())]
    if causes:
        return _invalid(entry["name"], causes)
    annotations.update(new)
    for key in remove:
        annotations.pop(key, None)
    changed = annotations != (entry.get("annotations") or {})
    entry["annotations"] = annotations
    return 0, f"node/{entry['name']} annotated\n", "", changed


def patch(entry: dict | None, args: list[str]) -> tuple[int, str, str, bool]:
    """``kubectl patch node NAME --type=merge -p JSON`` on ``entry`` (None: no such node); spec.providerID only."""
    body = next((args[i + 1] for i, a in enumerate(args[:-1]) if a in ("-p", "--patch")), None)
    body = body or next((a.split("=", 1)[1] for a in args if a.startswith("--patch=")), None)
    name = patched_node(args)
    merge = "--type=merge" in args or ("--type" in args and args[args.index("--type") + 1 :][:1] == ["merge"])
    try:
        document = json.loads(body) if body else None
    except ValueError:
        document = None
    if name is None or not merge or not isinstance(document, dict) or set(document) != {"spec"}:
        return 2, "", f"fake microk8s: kubectl patch {' '.join(args)} is not reproduced\n", False
    if set(document["spec"]) != {"providerID"} or not isinstance(document["spec"]["providerID"], str):
        return 2, "", f"fake microk8s: kubectl patch {' '.join(args)} is not reproduced\n", False
    if entry is None:
        return not_found(name)
    old, new = entry.get("providerID") or "", document["spec"]["providerID"]
    if old and old != new:
        why = 'node updates may not change providerID except from "" to valid'
        return _invalid_forbidden(entry["name"], "spec.providerID", why)
    if old == new:
        return 0, f"node/{entry['name']} patched (no change)\n", "", False
    entry["providerID"] = new
    return 0, f"node/{entry['name']} patched\n", "", True


def patched_node(args: list[str]) -> str | None:
    """The node ``kubectl patch ARGS`` names (``node NAME`` or ``node/NAME``), or None."""
    valued = ("-p", "--patch", "--type")
    words = [a for i, a in enumerate(args) if not a.startswith("-") and (i == 0 or args[i - 1] not in valued)]
    return _node_name(words)


def _invalid_forbidden(name: str, field: str, why: str) -> tuple[int, str, str, bool]:
    """checkErr on an Invalid StatusError with one Forbidden cause (field.Forbidden)."""
    return _fail(f'The Node "{name}" is invalid: {field}: Forbidden: {why}')


DAEMONSET_FATAL = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)"
DAEMONSET_WARNING = "ignoring DaemonSet-managed Pods"
LOCAL_STORAGE_FATAL = "Pods with local storage (use --delete-emptydir-data to override)"
LOCAL_STORAGE_WARNING = "deleting Pods with local storage"
UNMANAGED_FATAL = "Pods declare no controller (use --force to override)"
UNMANAGED_WARNING = "deleting Pods that declare no controller"
DISRUPTION_BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."
EVICTION_RETRY_SECONDS = 5
# drain.go waitForDelete: how often kubectl reads a pod it waits for.
DELETE_POLL_SECONDS = 1
SKIP_MESSAGE = 'pod "{name}" has DeletionTimestamp older than {seconds} seconds, skipping'


def _timeout_seconds(args: list[str]) -> float:
    """drain's --timeout (a Go duration: 300s, 5m, 1m30s); 0, the default, waits for ever."""
    value = next((a.split("=", 1)[1] for a in args if a.startswith("--timeout=")), "0s")
    units = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    return sum(float(n) * units[u] for n, u in re.findall(r"([0-9.]+)(ms|h|m|s)", value))


def _grace_seconds(args: list[str], pod: dict) -> int:
    """An eviction's grace period: drain's --grace-period when 0 or more, else the pod's own (30 s by default)."""
    given = int(next((a.split("=", 1)[1] for a in args if a.startswith("--grace-period=")), "-1"))
    return given if given >= 0 else int(pod.get("spec", {}).get("terminationGracePeriodSeconds", 30))


def _skip_seconds(args: list[str]) -> int:
    """drain's --skip-wait-for-delete-timeout (whole seconds; 0, the default, never skips)."""
    return int(next((a.split("=", 1)[1] for a in args if a.startswith("--skip-wait-for-delete-timeout=")), "0"))


def _deleted_at(pod: dict) -> float | None:
    """The epoch second of a pod's metadata.deletionTimestamp (RFC 3339, whole seconds), or None."""
    stamp = pod["metadata"].get("deletionTimestamp")
    return None if stamp is None else calendar.timegm(time.strptime(stamp, TIMESTAMP))


def _skipped(pod: dict, skip: int, now: float) -> bool:
    """filters.go shouldSkipPod: skip is over 0 and the pod's deletionTimestamp is more than skip whole seconds past."""
    deleted = _deleted_at(pod)
    return skip > 0 and deleted is not None and int(now - deleted) > skip


def _go_duration(seconds: float) -> str:
    """A whole number of seconds as Go's time.Duration prints it (20s, 1m30s, 1h0m0s)."""
    hours, rest = divmod(int(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def _controller(pod: dict) -> dict | None:
    return next((ref for ref in pod["metadata"].get("ownerReferences") or [] if ref.get("controller")), None)


def _budget_allows(objects: dict, pod: dict) -> bool:
    """Whether the PodDisruptionBudgets selecting ``pod`` allow one more disruption (see the docstring)."""
    namespace, labels = pod["metadata"].get("namespace", "default"), pod["metadata"].get("labels") or {}
    pods = [
        o
        for o in objects.values()
        if o.get("kind") == "Pod"
        and o["metadata"].get("namespace", "default") == namespace
        and "deletionTimestamp" not in o["metadata"]
    ]
    for budget in objects.values():
        if budget.get("kind") != "PodDisruptionBudget" or budget["metadata"].get("namespace", "default") != namespace:
            continue
        selector = (budget.get("spec", {}).get("selector") or {}).get("matchLabels") or {}
        if not selector or any(labels.get(k) != v for k, v in selector.items()):
            continue
        healthy = sum(
            1 for o in pods if all((o["metadata"].get("labels") or {}).get(k) == v for k, v in selector.items())
        )
        spec = budget["spec"]
        allowed = (
            int(spec["maxUnavailable"]) if "maxUnavailable" in spec else healthy - int(spec.get("minAvailable", 0))
        )
        if allowed <= 0:
            return False
    return True


def _drain_failed(node: str, why: str) -> str:
    """RunDrain's stderr once a pod's eviction or wait failed with ``why`` (pkg/cmd/drain/drain.go)."""
    return (
        f'There are pending pods in node "{node}" when an error occurred: {why}\n'
        f'error: unable to drain node "{node}" due to error:{why}, continuing command...\n'
        f"There are pending nodes to be drained:\n {node}\n{why}\n"
    )


def calico_pod(node: str) -> str:
    """The calico-node DaemonSet's pod on a node (reconcile.d/90-calico-apply applies Calico's manifest)."""
    return f"kube-system/calico-node-{hashlib.sha256(node.encode()).hexdigest()[:5]}"


def drain_pods(
    objects: dict, node: str, args: list[str], calico: str, posting: bool = True
) -> tuple[int, str, str, bool]:
    """
    ``kubectl drain`` of the cordoned ``node`` (see the docstring): ``calico`` is its calico-node
    pod, ``objects`` the cluster's API objects (kube_objects.py), whose evicted Pods go, or, on a
    node whose kubelet no longer ``posting`` (Ready Unknown: no kubelet confirms a deletion), stay
    with a deletionTimestamp.
    """
    skip = _skip_seconds(args)
    pods = {calico: {"kind": "DaemonSet"}}
    for ref, obj in sorted(objects.items()):
        if obj.get("kind") == "Pod" and obj.get("spec", {}).get("nodeName") == node:
            if _skipped(obj, skip, time.time()):
                continue
            pods[f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}"] = {"pod": ref, "obj": obj}
    fatal: dict[str, list[str]] = {}
    warnings: dict[str, list[str]] = {}
    evict = []
    for name, pod in pods.items():
        if pod.get("kind") == "DaemonSet" or (_controller(pod["obj"]) or {}).get("kind") == "DaemonSet":
            if "--ignore-daemonsets" in args:
                warnings.setdefault(DAEMONSET_WARNING, []).append(name)
            else:
                fatal.setdefault(DAEMONSET_FATAL, []).append(name)
            continue
        obj, ok = pod["obj"], True
        if any("emptyDir" in volume for volume in obj.get("spec", {}).get("volumes") or []):
            if "--delete-emptydir-data" in args:
                warnings.setdefault(LOCAL_STORAGE_WARNING, []).append(name)
            else:
                fatal.setdefault(LOCAL_STORAGE_FATAL, []).append(name)
                ok = False
        if _controller(obj) is None:
            if "--force" in args:
                warnings.setdefault(UNMANAGED_WARNING, []).append(name)
            else:
                fatal.setdefault(UNMANAGED_FATAL, []).append(name)
                ok = False
        if ok:
            evict.append((name, pod["pod"]))
    if fatal:
        errors = [f"cannot delete {why}: {', '.join(names)}" for why, names in sorted(fatal.items())]
        shown = errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]"
        err = f'error: unable to drain node "{node}" due to error:{shown}, continuing command...\n'
        return (
            1,
            "",
            err + f"There are pending nodes to be drained:\n {node}\n" + "".join(f"{e}\n" for e in errors),
            False,
        )
    err = (
        "WARNING: " + "; ".join(f"{why}: {', '.join(names)}" for why, names in warnings.items()) + "\n"
        if warnings
        else ""
    )
    out, changed = "", False
    timeout = _timeout_seconds(args)
    deadline = time.time() + timeout if timeout else float("inf")
    terminating = []
    for name, ref in evict:
        namespace, pod_name = name.split("/", 1)
        out += f"evicting pod {name}\n"
        while not _budget_allows(objects, objects[ref]):
            err += (
                f'error when evicting pods/"{pod_name}" -n "{namespace}" (will retry after 5s): {DISRUPTION_BUDGET}\n'
            )
            if time.time() + EVICTION_RETRY_SECONDS <= deadline:
                time.sleep(EVICTION_RETRY_SECONDS)
                continue
            time.sleep(max(0.0, deadline - time.time()))
            reached = f"global timeout reached: {_go_duration(timeout)}"
            why = f'error when evicting pods/"{pod_name}" -n "{namespace}": {reached}'
            return 1, out, err + _drain_failed(node, why), changed
        changed = True
        if posting:
            del objects[ref]
            out += f"pod/{pod_name} evicted\n"
        else:
            metadata = objects[ref]["metadata"]
            ends = time.gmtime(time.time() + _grace_seconds(args, objects[ref]))
            metadata.setdefault("deletionTimestamp", time.strftime(TIMESTAMP, ends))
            terminating.append((name, ref))
    # No kubelet confirms a deletion on a node whose kubelet stopped: kubectl waits for each pod, every
    # pod at once (a goroutine each), until it may skip it or --timeout ends the wait.
    while terminating:
        now = time.time()
        for name, ref in [t for t in terminating if _skipped(objects[t[1]], skip, now)]:
            out += SKIP_MESSAGE.format(name=name.split("/", 1)[1], seconds=skip) + "\n"
            terminating.remove((name, ref))
        if not terminating:
            break
        if now + DELETE_POLL_SECONDS > deadline:
            time.sleep(max(0.0, deadline - now))
            namespace, pod_name = terminating[0][0].split("/", 1)
            why = (
                f'error when waiting for pod "{pod_name}" in namespace "{namespace}" to terminate: '
                "context deadline exceeded"
            )
            return 1, out, err + _drain_failed(node, why), changed
        time.sleep(DELETE_POLL_SECONDS)
    return 0, out + f"node/{node} drained\n", err, changed
