"""
The OpenStack cloud controller manager's effect on Node objects, for both fake microk8s programs
(this package's __init__.py names them). Neither fake runs pods: the controller "runs" once
kubectl applied its DaemonSet and the cloud-config Secret it reads, and each fake calls
``reconcile`` before it answers a kubectl command, so every answer shows the Nodes as the
controller would have left them by then. The cloud it asks is a listing of the project's Nova
servers, as ``GET /servers/detail`` returns them (id, name, status, OS-EXT-AZ:availability_zone,
flavor.original_name), which the test's cloud writes: the rehearsal's cloud
(__tests__/doubles/rehearsal/cloud.ts) into every host, an L4 test into the fake cluster's
directory. Without a listing nothing is modelled.

Where each behaviour comes from:
- registration (kubernetes pkg/kubelet/kubelet_node_status.go initialNode): a kubelet started with
  --cloud-provider=external creates its Node with the taint
  node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule; a kubelet whose Node already
  exists takes that one over as it is (tryRegisterWithAPIServer), so a node registered before the
  flag never gets the taint: ``registration_taints``;
- the server of a node (cloud-provider-openstack v1.35.0 pkg/openstack/instances.go
  InstancesV2.getInstance): by spec.providerID ``openstack:///<id>`` (servers.Get; a 404 is
  cloudprovider.InstanceNotFound), or without one by name, listing servers with the name filter
  ``^<node name>$`` (getServerByName): none is CPO's own errors.ErrNotFound, two or more
  ErrMultipleResults. Nova server names are FQDNs and node names short host names, so a node
  without a providerID is found by no server;
- initialization (k8s.io/cloud-provider controllers/node/node_controller.go syncNode, on every
  Node add and update): only a Node with the uninitialized taint; its server's metadata
  (InstancesV2.InstanceMetadata: providerID, instance type, zone, region), or the Node is left as
  it is and retried; found, the Node gets spec.providerID when it has none, the labels
  node.kubernetes.io/instance-type and beta.kubernetes.io/instance-type (the flavor's
  original_name: srvInstanceType), topology.kubernetes.io/zone and
  failure-domain.beta.kubernetes.io/zone (the server's availability zone, util.SanitizeLabel),
  topology.kubernetes.io/region and failure-domain.beta.kubernetes.io/region (cloud.conf's
  region), and loses the taint (getNodeModifiersFromCloudProvider, excludeCloudTaint);
- deletion (k8s.io/cloud-provider controllers/nodelifecycle MonitorNodes, every 5 s): a Node that
  is not Ready and whose server InstanceExists reports gone is deleted. CPO's InstanceExists
  reports gone only on cloudprovider.InstanceNotFound, which only the providerID lookup returns;
  a node without providerID that no server name matches gets ErrNotFound, which MonitorNodes logs
  ("error checking if node ... exists") and skips. So the controller deletes a NotReady Node
  whose providerID names a server the cloud no longer has, and never one it cannot find by name.

Not modelled (docs/decisions.md): the shutdown taint (MonitorNodes on a SHUTOFF server), the
addresses the controller writes (status.addresses stay the fakes' own, node_objects.py), the
controller's retry delays, and the node lifecycle controller's node-monitor grace period: the
fakes' Ready is already the condition after it.
"""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

from . import node_objects

UNINITIALIZED = {"key": "node.cloudprovider.kubernetes.io/uninitialized", "value": "true", "effect": "NoSchedule"}
CONTROLLER = "DaemonSet/kube-system/openstack-cloud-controller-manager"
SECRET = "Secret/kube-system/cloud-config"
PROVIDER_ID = re.compile(r"^openstack://([^/]*)/([^/]+)$")
_EXTERNAL = re.compile(r"^--cloud-provider=([\"']?)external\1$")
# The lookups' outcomes other than a server, by the name CPO gives them.
INSTANCE_NOT_FOUND = "InstanceNotFound"
NOT_FOUND = "ErrNotFound"
MULTIPLE = "ErrMultipleResults"


def registration_taints(kubelet_args: str | None) -> list[dict]:
    """The taints a kubelet with these arguments creates its Node with (initialNode)."""
    lines = (kubelet_args or "").splitlines()
    return [dict(UNINITIALIZED)] if any(_EXTERNAL.match(line.strip()) for line in lines) else []


def servers(path: Path) -> list[dict] | None:
    """The cloud's server listing at ``path``, or None where the test's cloud wrote none."""
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        return None


def _region(objects: dict) -> str:
    """cloud.conf's [Global] region, from the Secret the controller reads."""
    conf = base64.b64decode(objects[SECRET].get("data", {}).get("cloud.conf", "")).decode()
    found = re.search(r'^region\s*=\s*"((?:[^"\\]|\\.)*)"', conf, re.MULTILINE)
    return found.group(1).replace('\\"', '"').replace("\\\\", "\\") if found else ""


def instance(entry: dict, listing: list[dict]) -> tuple[dict | None, str | None]:
    """getInstance: (the node's server, None), or (None, the error's name)."""
    provider_id = entry.get("providerID") or ""
    if provider_id:
        matched = PROVIDER_ID.match(provider_id)
        server = next((s for s in listing if matched and s["id"] == matched.group(2)), None)
        return (server, None) if server else (None, INSTANCE_NOT_FOUND)
    named = [s for s in listing if s["name"] == entry["name"]]
    if not named:
        return None, NOT_FOUND
    return (named[0], None) if len(named) == 1 else (None, MULTIPLE)


def _sanitized(value: str) -> str:
    """util.SanitizeLabel."""
    return re.sub(r"[^-a-zA-Z0-9_.]+", "-", value).strip("-_.")[:63]


def _initialize(entry: dict, server: dict, region: str) -> None:
    """syncNode's modifiers on ``entry``: providerID, the labels, the taint gone."""
    entry["providerID"] = entry.get("providerID") or f"openstack:///{server['id']}"
    labels = node_objects.metadata(entry)["labels"]
    flavor = (server.get("flavor") or {}).get("original_name") or ""
    if flavor and not node_objects.value_errors(flavor):
        labels["node.kubernetes.io/instance-type"] = labels["beta.kubernetes.io/instance-type"] = flavor
    zone = _sanitized(server.get("OS-EXT-AZ:availability_zone") or "")
    if zone:
        labels["topology.kubernetes.io/zone"] = labels["failure-domain.beta.kubernetes.io/zone"] = zone
    if region:
        labels["topology.kubernetes.io/region"] = labels["failure-domain.beta.kubernetes.io/region"] = region
    entry["labels"] = labels
    entry["taints"] = [t for t in entry.get("taints") or [] if t["key"] != UNINITIALIZED["key"]]


def reconcile(nodes: list[dict], objects: dict, listing: list[dict] | None, ready) -> bool:
    """
    The controller's work on ``nodes`` (changed in place) since it last ran: every tainted node it
    finds initialized, then every node that is not Ready (``ready(entry)``) and whose server is
    gone deleted. Returns whether anything changed; nothing while the controller or the listing
    is missing.
    """
    if listing is None or CONTROLLER not in objects or SECRET not in objects:
        return False
    changed = False
    region = _region(objects)
    for entry in nodes:
        if any(t["key"] == UNINITIALIZED["key"] for t in entry.get("taints") or []):
            server, _ = instance(entry, listing)
            if server is not None:
                _initialize(entry, server, region)
                changed = True
    # Readiness last: it asks the node, and only a node whose server is gone needs the answer.
    gone = [e for e in nodes if instance(e, listing)[1] == INSTANCE_NOT_FOUND and not ready(e)]
    for entry in gone:
        nodes.remove(entry)
    return changed or bool(gone)
