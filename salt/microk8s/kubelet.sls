{#-
  The kubelet's --cloud-provider on every Kubernetes node (control plane and --worker alike):
  `external` while the OpenStack cloud controller manager (microk8s.cloud_provider) owns the
  nodes' addresses, none when the cloud integration is off, so each kubelet reports its addresses
  again (pillar microk8s:external_cloud_provider, which Terraform writes; absent: false).

  After the join, not before it: a join replaces this node's args/kubelet with the kubelet
  arguments of the node it joins (microk8s scripts/wrappers/join.py store_base_kubelet_args, for
  --worker and control-plane joins alike), so a flag written before would be the master's anyway,
  and one written after is this pillar's. orch.deploy applies the master's highstate first, so
  a joiner usually inherits the flag and this state changes nothing there.

  On a node that is already registered the flag changes no taint: the kubelet adds
  node.cloudprovider.kubernetes.io/uninitialized only to the Node it registers
  (kubernetes pkg/kubelet/kubelet_node_status.go initialNode), so an existing node keeps running
  its pods. From then on the kubelet stops reporting the node's addresses once they are set
  (pkg/kubelet/nodestatus/setters.go NodeAddress: with an external cloud provider it returns
  early once node.Status.Addresses is not empty, "provider set addresses should take
  precedence"), leaving them to the cloud controller manager. A change restarts kubelite (microk8s' own restart_service) and the
  state waits until the node is back.
#}
{%- from "microk8s/map.jinja" import microk8s with context %}
include:
  - microk8s.install
  - microk8s.joined

microk8s-kubelet-microk8s-kubelet-external-cloud-provider:
  microk8s.kubelet_external_cloud_provider:
    - external: {{ microk8s.external_cloud_provider | json }}
    - require:
      - sls: microk8s.install
      - sls: microk8s.joined
