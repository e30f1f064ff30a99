"""
The OpenStack cloud integration, applied with kubectl on the Kubernetes master: the Secret
``kube-system/cloud-config`` (key ``cloud.conf``, and ``ca.crt`` with a private CA's
certificates) that openstack-cloud-controller-manager and the Cinder CSI driver both read
(kubernetes/cloud-provider-openstack v1.35.0, the ``cloud-config-volume`` and
``secret-cinderplugin`` volumes of their manifests, both at /etc/config), their manifests, each
node's ``spec.providerID``, and a Cinder StorageClass as the cluster's default.

The credential comes from pillar ``openstack:cloud`` (pillar/_cloud.sls, the master's only) and
is read here, never passed as an argument: a state or a function argument is logged and returned
by Salt, so the application credential's secret would be too. It reaches kubectl on standard
input (``_cli.run(stdin=...)``, which Salt runs with ``output_loglevel="quiet"``); what the states
report is the SHA-256 of the rendered cloud.conf (and of the CA, when there is one), which the
Secret carries in its annotation ``kube-on-os/cloud-conf-sha256`` so that the next run compares
it without reading the Secret.
The pod templates of the workloads that mount the Secret carry the same annotation: both read
cloud.conf only when they start, so a rotated credential gives them a new template, and their
controllers replace every pod.

Tolerations: kube_node_taints taints the default pool, whose first nodes are the control plane,
and the cloud controller manager runs on control-plane nodes alone. Every workload of the
manifests that does not already tolerate every taint (upstream's Cinder node plugin does) gets a
toleration for each taint the pillar gives a control-plane node, so a taint meant to keep
workloads off the control plane keeps the cloud integration's own there (docs/decisions.md).

ProviderIDs: CPO's InstancesV2 names a server ``openstack:///<server id>`` (pkg/openstack/
instances.go makeInstanceID, without OS_CCM_REGIONAL), and the API server lets a node's
providerID change only from "" (kubernetes pkg/apis/core/validation ValidateNodeUpdate: "node
updates may not change providerID except from \\"\\" to valid"). They are set before the CCM runs:
its node lifecycle controller (k8s.io/cloud-provider controllers/nodelifecycle, MonitorNodes)
deletes a node that is not Ready and whose instance the cloud does not know, and without a
providerID it looks the instance up by node name.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import time
import uuid

import yaml
from salt.exceptions import CommandExecutionError

from . import _cli, _labels, _membership

NAMESPACE = "kube-system"
SECRET = "cloud-config"
SECRET_KEY = "cloud.conf"
# A private CA's certificates (pillar openstack:cloud:ca_certificate) are the Secret's second key:
# both workloads mount the Secret at /etc/config (CPO v1.35.0 manifests: cloud-config-volume,
# secret-cinderplugin), where cloud.conf's [Global] ca-file names it.
CA_KEY = "ca.crt"
CA_FILE = f"/etc/config/{CA_KEY}"
CHECKSUM = "kube-on-os/cloud-conf-sha256"
PROVIDER = "openstack"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
CINDER = "cinder.csi.openstack.org"
# The taint a kubelet with --cloud-provider=external registers its Node with, which the cloud
# controller manager removes once it has initialized the Node (kubernetes
# pkg/kubelet/kubelet_node_status.go initialNode; k8s.io/cloud-provider controllers/node
# syncNode), and the labels it sets then (getNodeModifiersFromCloudProvider): the region's on
# every node, the other two where the server has a flavor name and a zone.
UNINITIALIZED = "node.cloudprovider.kubernetes.io/uninitialized"
INITIALIZED_LABEL = "topology.kubernetes.io/region"
CLOUD_LABELS = ("topology.kubernetes.io/zone", INITIALIZED_LABEL, "node.kubernetes.io/instance-type")
REQUIRED = ("auth_url", "region", "application_credential_id", "application_credential_secret")
# [LoadBalancer] options, each written as its name with '-' for '_' (lb-provider, lb-method).
OPTIONAL = ("floating_network_id", "subnet_id", "member_subnet_id", "lb_provider", "lb_method")
# How a PEM certificate starts (RFC 7468 section 5). The whole rule is the variable's
# (config/parameters.ts, openstack_ca_certificate), which synth and plan check: this one only
# catches a pillar written by other hands.
PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----\n"
# The kinds whose pods may mount the Secret, and YAML's document separator on a line of its own.
WORKLOADS = ("DaemonSet", "Deployment", "StatefulSet")
_DOCUMENT_SEPARATOR = re.compile(r"^---[ \t]*\n", re.MULTILINE)
# kubectl's name printer (k8s.io/cli-runtime pkg/printers/name.go): <kind>[.<group>]/<name>, then
# the operation kubectl apply names (pkg/cmd/apply/apply.go: created, configured, unchanged), and
# " (server dry run)" with --dry-run=server (cmdutil.PrintFlagsWithDryRunStrategy).
_APPLIED = re.compile(r"^(?P<ref>\S+/\S+) (?P<operation>created|configured|unchanged)( \(server dry run\))?$")


def settings(salt: dict) -> dict | None:
    """
    Pillar ``openstack:cloud`` checked: None when it is absent or empty (no cloud integration);
    else its strings, ``load_balancer`` a bool (default true), and ``ca_certificate`` (PEM
    certificates) when not empty. A missing or malformed key is an error naming the key, never
    quoting the secret, nor a certificate (it may be a private key pasted by mistake).
    """
    cloud = salt["pillar.get"]("openstack:cloud", None)
    if not cloud:
        return None
    if not isinstance(cloud, dict):
        raise CommandExecutionError("pillar openstack:cloud must be a map")
    checked = {}
    for key in REQUIRED + OPTIONAL:
        value = cloud.get(key)
        if value is None or value == "":
            if key in REQUIRED:
                raise CommandExecutionError(f"pillar openstack:cloud:{key} is missing")
            continue
        if not isinstance(value, str) or any(ord(c) < 32 or ord(c) == 127 for c in value):
            shown = "" if key == "application_credential_secret" else f": {value!r}"
            raise CommandExecutionError(f"pillar openstack:cloud:{key} must be a string on one line{shown}")
        checked[key] = value
    load_balancer = cloud.get("load_balancer", True)
    if not isinstance(load_balancer, bool):
        raise CommandExecutionError(f"pillar openstack:cloud:load_balancer must be true or false: {load_balancer!r}")
    checked["load_balancer"] = load_balancer
    ca_certificate = cloud.get("ca_certificate")
    if ca_certificate is not None and ca_certificate != "":
        if not isinstance(ca_certificate, str) or not ca_certificate.startswith(PEM_CERTIFICATE):
            raise CommandExecutionError(
                "pillar openstack:cloud:ca_certificate must be PEM certificates (-----BEGIN CERTIFICATE----- ...)"
            )
        checked["ca_certificate"] = ca_certificate
    return checked


def _quoted(value: str) -> str:
    """
    A gcfg string (cloud.conf is read with gopkg.in/gcfg.v1): quoted, so that ``;`` and ``#``
    start no comment, with ``\\`` and ``"`` escaped (gcfg read.go unquote). Python has no gcfg
    writer, and configparser's quoting is not gcfg's, hence by hand.
    """
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def cloud_conf(cloud: dict, private_cidr: str | None = None, options: dict | None = None) -> str:
    """
    cloud.conf for openstack-cloud-controller-manager and the Cinder CSI driver, from
    ``settings``' map; option names as CPO v1.35.0 documents them
    (docs/openstack-cloud-controller-manager/using-openstack-cloud-controller-manager.md,
    docs/cinder-csi-plugin/using-cinder-csi-plugin.md). ``private_cidr`` sorts the nodes' private
    addresses first ([Networking] address-sort-order); ``options``: ``ignore_volume_az`` and
    ``metadata_search_order`` (defaults.yaml's cloud_provider). Settings left out (a CA,
    lb_provider, lb_method) write no line: the text, and so its checksum, is what it was before
    they existed.
    """
    options = options or {}
    lines = [
        "[Global]",
        f"auth-url = {_quoted(cloud['auth_url'])}",
        # A Keystone behind a private CA: the certificates are the Secret's second key.
        *([f"ca-file = {_quoted(CA_FILE)}"] if "ca_certificate" in cloud else []),
        f"region = {_quoted(cloud['region'])}",
        f"application-credential-id = {_quoted(cloud['application_credential_id'])}",
        f"application-credential-secret = {_quoted(cloud['application_credential_secret'])}",
    ]
    if private_cidr:
        lines += ["", "[Networking]", f"address-sort-order = {_quoted(private_cidr)}"]
    lines += ["", "[LoadBalancer]", f"enabled = {'true' if cloud['load_balancer'] else 'false'}"]
    if cloud["load_balancer"]:
        for key in OPTIONAL:
            if key in cloud:
                lines.append(f"{key.replace('_', '-')} = {_quoted(cloud[key])}")
        lines.append("create-monitor = true")
    lines += ["", "[BlockStorage]", f"ignore-volume-az = {'true' if options.get('ignore_volume_az') else 'false'}"]
    if options.get("metadata_search_order"):
        # Left out, CPO's own default applies (configDrive,metadataService).
        lines += ["", "[Metadata]", f"search-order = {_quoted(options['metadata_search_order'])}"]
    return "\n".join(lines) + "\n"


def checksum(conf: str, ca_certificate: str | None = None) -> str:
    """
    The SHA-256 of what the Secret holds: cloud.conf's alone without a CA (as before there could
    be one, so that a cluster without a CA rolls nothing), else of cloud.conf, a NUL and the CA.
    """
    digest = hashlib.sha256(conf.encode())
    if ca_certificate:
        digest.update(b"\0" + ca_certificate.encode())
    return digest.hexdigest()


def secret_manifest(conf: str, ca_certificate: str | None = None) -> str:
    """
    The Secret both read, as JSON (kubectl apply reads JSON as well as YAML): cloud.conf, the CA
    when there is one, and their checksum annotated.
    """
    data = {SECRET_KEY: conf, **({CA_KEY: ca_certificate} if ca_certificate else {})}
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": SECRET,
                "namespace": NAMESPACE,
                "annotations": {CHECKSUM: checksum(conf, ca_certificate)},
            },
            "type": "Opaque",
            "data": {key: base64.b64encode(text.encode()).decode() for key, text in data.items()},
        }
    )


def rendered(salt: dict, options: dict | None = None) -> str | None:
    """``cloud_conf`` from the pillar (``openstack:cloud``, ``network:private_cidr``), or None without a cloud."""
    cloud = settings(salt)
    if cloud is None:
        return None
    return cloud_conf(cloud, salt["pillar.get"]("network:private_cidr", None), options)


def _secret_content(salt: dict, options: dict | None) -> tuple[dict, str]:
    """``settings`` and the cloud.conf they render, the pillar read once; raises without pillar openstack:cloud."""
    cloud = settings(salt)
    if cloud is None:
        raise CommandExecutionError("pillar openstack:cloud is absent: there is no cloud.conf to apply")
    return cloud, cloud_conf(cloud, salt["pillar.get"]("network:private_cidr", None), options)


def parse_applied(text: str) -> dict:
    """``{ref: operation}`` from what kubectl apply printed, one ``<kind>[.<group>]/<name> <operation>`` a line."""
    applied = {}
    for line in (line.strip() for line in text.splitlines()):
        match = _APPLIED.match(line)
        if not match:
            if line:
                raise CommandExecutionError(f"kubectl apply printed a line it never prints: {line[:200]!r}")
            continue
        applied[match["ref"]] = match["operation"]
    return applied


def apply(salt: dict, manifest: str, dry_run: bool = False, hide: tuple[str, ...] = ()) -> dict:
    """
    ``kubectl apply -f -`` with ``manifest`` on standard input (``--dry-run=server``: the API
    server says what would change and keeps nothing). ``{ref: created | configured | unchanged}``.
    """
    args = ["kubectl", "apply", "-f", "-"] + (["--dry-run=server"] if dry_run else [])
    return parse_applied(_cli.run(salt, *args, stdin=manifest, hide=hide))


def secret_checksum(salt: dict) -> str | None:
    """The checksum annotated on the Secret, or None without a Secret (or annotation); its data is never read."""
    path = "{.metadata.annotations." + CHECKSUM + "}"
    out = _cli.run(
        salt, "kubectl", "get", "secret", SECRET, "-n", NAMESPACE, "--ignore-not-found", "-o", f"jsonpath={path}"
    )
    return out.strip() or None


def secret_plan(salt: dict, options: dict | None = None) -> dict:
    """
    ``{"secret", "old", "new" (``checksum``s of the Secret's content: cloud.conf, and the CA),
    "changed"}``; raises without pillar openstack:cloud.
    """
    return _plan(salt, *_secret_content(salt, options))


def _plan(salt: dict, cloud: dict, conf: str) -> dict:
    """``secret_plan``'s map for the Secret's content (``_secret_content``)."""
    old = secret_checksum(salt)
    new = checksum(conf, cloud.get("ca_certificate"))
    return {"secret": f"{NAMESPACE}/{SECRET}", "old": old, "new": new, "changed": old != new}


def apply_secret(salt: dict, options: dict | None = None) -> dict:
    """Applies the Secret (``secret_plan``'s, with its ``operation``); what kubectl says is checked, never printed."""
    cloud, conf = _secret_content(salt, options)
    plan = _plan(salt, cloud, conf)
    hidden = (cloud["application_credential_secret"], base64.b64encode(conf.encode()).decode())
    applied = apply(salt, secret_manifest(conf, cloud.get("ca_certificate")), hide=hidden)
    if list(applied) != [f"secret/{SECRET}"]:
        raise CommandExecutionError(f"kubectl apply of the cloud-config Secret applied {sorted(applied)}")
    return {**plan, "operation": applied[f"secret/{SECRET}"]}


def _pod(document) -> dict | None:
    """The pod template's spec of a workload document (itself, to change), or None for any other document."""
    if not isinstance(document, dict) or document.get("kind") not in WORKLOADS:
        return None
    pod = ((document.get("spec") or {}).get("template") or {}).get("spec")
    return pod if isinstance(pod, dict) else None


def reads_secret(document) -> bool:
    """Whether ``document`` is a workload whose pods mount the cloud-config Secret."""
    pod = _pod(document)
    return pod is not None and any(
        (volume.get("secret") or {}).get("secretName") == SECRET for volume in pod.get("volumes") or []
    )


def toleration(taint: str) -> dict:
    """
    The toleration of exactly ``taint`` (kubectl's ``key=value:Effect`` or ``key:Effect``): its
    key and effect, operator Equal with its value, or Exists when it has none (core/v1
    Toleration.ToleratesTaint: Equal compares the values, Exists matches any).
    """
    parsed = _labels.parse_taint(taint)
    if parsed["value"]:
        return {"key": parsed["key"], "operator": "Equal", "value": parsed["value"], "effect": parsed["effect"]}
    return {"key": parsed["key"], "operator": "Exists", "effect": parsed["effect"]}


def control_plane_tolerations(salt: dict) -> list[dict]:
    """
    A toleration for each taint that pillar ``microk8s:nodes`` gives a control-plane node
    (``microk8s:control_plane``): the default pool's, kube_node_taints. In order, without
    repeats; ``[]`` without any.
    """
    roles = _membership.parse_roles(salt["pillar.get"]("microk8s", {}))
    nodes = _labels.pillar_nodes(salt)
    found = []
    for node in roles["control_plane"]:
        for item in (toleration(taint) for taint in nodes[node]["taints"]):
            if item not in found:
                found.append(item)
    return found


def _tolerates_everything(pod: dict) -> bool:
    # An empty key with Exists matches every key, and no effect every effect (ToleratesTaint).
    return any(
        not item.get("key") and item.get("operator") == "Exists" and not item.get("effect")
        for item in pod.get("tolerations") or []
    )


def adapted(text: str, secret_sha256: str | None, tolerations: list[dict] | None = None) -> str:
    """
    ``text`` (one manifest file) with two changes to its workloads' pod templates, each such
    document then as JSON, every other document as it was:
    - ``secret_sha256`` annotated on the pod template of every workload whose pods mount the
      Secret. Both read cloud.conf only when they start, so a new Secret must give them a new
      pod template: the controllers then replace every pod. None (no Secret): no annotation.
    - ``tolerations`` (``control_plane_tolerations``) added after the template's own, less
      those it has; a workload that tolerates every taint already is left as it is.
    With neither, the text is unchanged: a cluster without taints applies the manifests as shipped.
    """
    tolerations = tolerations or []
    if secret_sha256 is None and not tolerations:
        return text
    documents = _DOCUMENT_SEPARATOR.split(text)
    for index, document in enumerate(documents):
        parsed = yaml.safe_load(document)
        pod = _pod(parsed)
        if pod is None:
            continue
        changed = False
        if secret_sha256 is not None and reads_secret(parsed):
            template = parsed["spec"]["template"].setdefault("metadata", {})
            template["annotations"] = {**(template.get("annotations") or {}), CHECKSUM: secret_sha256}
            changed = True
        own = pod.get("tolerations") or []
        missing = [] if _tolerates_everything(pod) else [item for item in tolerations if item not in own]
        if missing:
            pod["tolerations"] = own + missing
            changed = True
        if changed:
            documents[index] = json.dumps(parsed) + "\n"
    return "---\n".join(documents)


def manifests(salt: dict, sources: list[str]) -> str:
    """
    The manifests at ``sources`` (salt:// URLs, from the Salt master), one YAML stream, the pod
    templates of the Secret's readers annotated with the checksum the Secret carries, and the
    workloads tolerating the control plane's taints (``adapted``).
    """
    secret_sha256 = secret_checksum(salt)
    tolerations = control_plane_tolerations(salt)
    texts = []
    for source in sources:
        text = salt["cp.get_file_str"](source)
        if not text:
            raise CommandExecutionError(f"the manifest {source} cannot be read from the Salt master")
        texts.append(adapted(text.rstrip("\n") + "\n", secret_sha256, tolerations))
    return "---\n".join(texts)


def provider_id(instance_id) -> str:
    """``openstack:///<instance id>``; an instance id that is no UUID is an error naming it."""
    try:
        parsed = uuid.UUID(str(instance_id))
    except ValueError:
        raise CommandExecutionError(f"instance_id {instance_id!r} is not a Nova server UUID") from None
    return f"{PROVIDER}:///{parsed}"


def _node_objects(salt: dict):
    """
    Pillar ``microk8s:nodes``, and ``node_object(id)``: that node's name and Node object, from one
    ``kubectl get nodes -o json`` (each found by its private address, ``_membership.node_of``);
    raises naming the node Kubernetes does not know.
    """
    settings_ = salt["pillar.get"]("microk8s", {})
    addresses = _membership.parse_roles(settings_)["addresses"]
    text = _cli.run(salt, "kubectl", "get", "nodes", "-o", "json")
    known = _membership.parse_nodes(text)
    items = {item["metadata"]["name"]: item for item in json.loads(text).get("items") or []}

    def node_object(node_id: str) -> tuple[str, dict]:
        found = _membership.node_of(known, node_id, addresses[node_id])
        if found is None:
            raise CommandExecutionError(f"Kubernetes has no node at {addresses[node_id]} ({node_id})")
        return found["name"], items.get(found["name"]) or {}

    return settings_["nodes"], node_object


def provider_id_plan(salt: dict) -> dict:
    """
    ``{id: {"node", "old", "new", "changed"}}`` for every node of pillar ``microk8s:nodes``, from one
    ``kubectl get nodes -o json``: ``new`` is ``openstack:///<instance_id>``; ``stale`` when the
    node already has another providerID (which the API server never lets change), so ``changed``
    is false. Raises naming the node when its entry has no instance_id or Kubernetes does not
    know it.
    """
    nodes, node_object = _node_objects(salt)
    plans = {}
    for node in nodes:
        node_id = str(node["id"])
        if not node.get("instance_id"):
            raise CommandExecutionError(f"pillar microk8s:nodes entry {node_id} has no instance_id")
        try:
            wanted = provider_id(node["instance_id"])
        except CommandExecutionError as error:
            raise CommandExecutionError(f"pillar microk8s:nodes entry {node_id}: {error}") from None
        name, item = node_object(node_id)
        old = (item.get("spec") or {}).get("providerID") or ""
        # Another providerID: the machine was rebuilt under the same name, and its kubelet took over
        # the old Node object (kubelet_node_status.go tryRegisterWithAPIServer, on AlreadyExists),
        # whose providerID the API server never changes. The cloud controller manager deletes a
        # NotReady Node whose server is gone (k8s.io/cloud-provider controllers/nodelifecycle
        # MonitorNodes), so this happens only where none ran between the old server's deletion
        # and the join. Reported, not an error: failing here would fail every such deploy.
        stale = bool(old) and old != wanted
        plans[node_id] = {
            "node": name,
            "old": old or None,
            "new": wanted,
            "changed": not old,
            "stale": stale,
        }
    return plans


def set_provider_id(salt: dict, node: str, wanted: str) -> str:
    """``kubectl patch node NODE`` with spec.providerID ``wanted`` (from "" only); kubectl's line."""
    patch = json.dumps({"spec": {"providerID": wanted}})
    return _cli.run(salt, "kubectl", "patch", "node", node, "--type=merge", "-p", patch).strip()


def initialization_plan(salt: dict) -> dict:
    """
    ``{id: {"node", "state", "labels"}}`` for every node of pillar ``microk8s:nodes``, from one
    ``kubectl get nodes -o json``; ``labels``: its zone, region and instance-type labels.
    ``state``: ``initialized`` (the cloud controller manager has labelled it: it sets
    ``topology.kubernetes.io/region`` on every node it initializes, from cloud.conf's region,
    which the Secret always has), ``pending`` (it has the uninitialized taint, which the
    controller manager removes once it has initialized it), or ``never`` (neither: its kubelet
    registered it before it ran with --cloud-provider=external, and the controller manager
    initializes only tainted nodes: k8s.io/cloud-provider controllers/node syncNode). Raises
    naming the node Kubernetes does not know.
    """
    nodes, node_object = _node_objects(salt)
    plans = {}
    for node in nodes:
        node_id = str(node["id"])
        name, item = node_object(node_id)
        taints = (item.get("spec") or {}).get("taints") or []
        labels = (item.get("metadata") or {}).get("labels") or {}
        if any(taint.get("key") == UNINITIALIZED for taint in taints):
            state = "pending"
        elif INITIALIZED_LABEL in labels:
            state = "initialized"
        else:
            state = "never"
        plans[node_id] = {
            "node": name,
            "state": state,
            "labels": {key: labels[key] for key in CLOUD_LABELS if key in labels},
        }
    return plans


def wait_initialized(salt: dict, timeout: float, interval: float) -> dict:
    """
    ``initialization_plan`` read every ``interval`` seconds until no node is ``pending``, or
    ``timeout`` seconds have passed: the last one read.
    """
    deadline = time.monotonic() + timeout
    while True:
        plans = initialization_plan(salt)
        if all(plan["state"] != "pending" for plan in plans.values()) or time.monotonic() >= deadline:
            return plans
        time.sleep(interval)


def mark_uninitialized(salt: dict, node: str, marked: bool = True) -> str:
    """
    ``kubectl taint node NODE`` with the uninitialized taint (``marked``), or without it: the
    cloud controller manager initializes a node that has it, then removes it (syncNode,
    excludeCloudTaint). kubectl's line.
    """
    change = f"{UNINITIALIZED}=true:NoSchedule" if marked else f"{UNINITIALIZED}:NoSchedule-"
    return _cli.run(salt, "kubectl", "taint", "node", node, change).strip()


def storage_class_manifest(name: str) -> str:
    """
    The default StorageClass, provisioned by the Cinder CSI driver (its CSIDriver's name):
    volumes are made where the pod is scheduled (WaitForFirstConsumer, as the CSI driver reports
    each node's zone), deleted with their claim, and can grow.
    """
    return json.dumps(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "annotations": {DEFAULT_CLASS: "true"}},
            "provisioner": CINDER,
            "reclaimPolicy": "Delete",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowVolumeExpansion": True,
        }
    )


def storage_class_plan(salt: dict, name: str) -> dict:
    """
    ``{"apply": {ref: operation} (a server dry run of the StorageClass), "undefault": [other
    classes annotated default], "changed"}``: the Cinder class ``name`` is the one default, as the
    API server picks among several defaults only the newest (DefaultStorageClass admission).
    """
    applied = apply(salt, storage_class_manifest(name), dry_run=True)
    listed = json.loads(_cli.run(salt, "kubectl", "get", "storageclass", "-o", "json") or "{}")
    undefault = sorted(
        item["metadata"]["name"]
        for item in listed.get("items") or []
        if item["metadata"]["name"] != name
        and ((item["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) or "").lower() == "true"
    )
    changed = any(operation != "unchanged" for operation in applied.values()) or bool(undefault)
    return {"apply": applied, "undefault": undefault, "changed": changed}


def make_default_storage_class(salt: dict, name: str) -> dict:
    """Applies ``storage_class_plan``: the Cinder class, then ``is-default-class=false`` on the others."""
    plan = storage_class_plan(salt, name)
    applied = apply(salt, storage_class_manifest(name)) if plan["changed"] else plan["apply"]
    for other in plan["undefault"]:
        _cli.run(salt, "kubectl", "annotate", "storageclass", other, f"{DEFAULT_CLASS}=false", "--overwrite")
    return {**plan, "apply": applied}
