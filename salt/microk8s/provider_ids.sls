{#-
  Every node's providerID (openstack:///<instance_id>), on the Kubernetes master, where pillar
  openstack:cloud exists (the master's alone). orch.deploy applies it right after the joins, so a
  node that joins a running cluster (a scale-up, a rebuilt machine) gets its providerID at once:
  its kubelet registered it with the uninitialized taint (it takes the master's
  --cloud-provider=external with the join), and the cloud controller manager finds its server by
  providerID only, Nova's server names being FQDNs where node names are short host names
  (cloud-provider-openstack pkg/openstack/instances.go getInstance). The controller manager
  initializes it on that update, whatever the rest of the run does. microk8s.cloud_provider
  includes it too, before the controller manager is applied.
#}
{%- from "microk8s/map.jinja" import cloud_provider_enabled with context %}
{%- if cloud_provider_enabled %}

microk8s-provider-ids-microk8s-provider-ids-set:
  microk8s.provider_ids_set:
    - name: microk8s:nodes
{%- else %}

# orch.deploy runs this SLS on the master whatever its pillar: a state that does nothing stands
# in where there is no cloud, so the step succeeds without setting anything.
microk8s-provider-ids-test-nop:
  test.nop:
    - name: pillar openstack:cloud is absent; no providerIDs to set
{%- endif %}
