{#-
  The OpenStack cloud integration, on the Kubernetes master (orch.deploy's step after the node
  labels), only where pillar openstack:cloud exists (pillar/_cloud.sls, which the pillar top
  gives the master alone); without it this renders nothing. In this order:
  - every node's providerID (openstack:///<instance_id>, microk8s.provider_ids), before the
    cloud controller manager runs: without one it looks a server up by the node's name, which no
    Nova server has;
  - the Secret kube-system/cloud-config, from the pillar by the microk8s module (the credential
    is never a state argument, so it is in no output or log);
  - the pinned manifests of the cloud controller manager and the Cinder CSI driver, which read it
    only when they start: their pod templates carry the Secret's checksum, so a new Secret rolls them;
  - every node initialized by the controller manager (its zone, region and instance-type
    labels): a node registered before the kubelets ran with --cloud-provider=external gets the
    uninitialized taint, which the controller manager removes once it has initialized it;
  - the Cinder StorageClass as the one default.
#}
{%- from "microk8s/map.jinja" import microk8s, cloud_provider_enabled with context %}
{%- if cloud_provider_enabled %}
{%- set cloud_provider = microk8s.cloud_provider %}
include:
  - microk8s.provider_ids

microk8s-cloud-provider-microk8s-cloud-config-secret:
  microk8s.cloud_config_secret:
    - name: kube-system/cloud-config
    - ignore_volume_az: {{ cloud_provider.ignore_volume_az | json }}
    - metadata_search_order: {{ cloud_provider.metadata_search_order | json }}
    - require:
      - sls: microk8s.provider_ids

microk8s-cloud-provider-microk8s-manifests-applied:
  microk8s.manifests_applied:
    - name: {{ ("cloud-provider-openstack " ~ cloud_provider.version) | json }}
    - sources: {{ cloud_provider.manifests | map("regex_replace", "^", "salt://microk8s/files/cloud-provider/") | list | json }}
    - require:
      - microk8s: microk8s-cloud-provider-microk8s-cloud-config-secret

microk8s-cloud-provider-microk8s-nodes-initialized:
  microk8s.nodes_initialized:
    - name: microk8s:nodes
    - timeout: {{ cloud_provider.initialization_timeout | json }}
    - require:
      - microk8s: microk8s-cloud-provider-microk8s-manifests-applied

microk8s-cloud-provider-microk8s-default-storage-class:
  microk8s.default_storage_class:
    - name: {{ cloud_provider.storage_class | json }}
    - require:
      - microk8s: microk8s-cloud-provider-microk8s-manifests-applied
{%- else %}

# orch.deploy runs this SLS on the master whatever its pillar: a state that does nothing stands
# in where there is no cloud, so the step succeeds without applying anything.
microk8s-cloud-provider-test-nop:
  test.nop:
    - name: pillar openstack:cloud is absent; no cloud integration to apply
{%- endif %}
