{#-
  Layers, general to specific; later ones override earlier ones:
    _from_terraform, _cloud (the Kubernetes master only), environments/defaults, environments/<domain>,
    roles/kubernetes (on k8s-* hosts), minions/defaults/<host>, minions/<domain>/<host>
  The minion id is split at its first dot into host and domain. SLS names cannot contain dots,
  so the domain's dots become underscores in file names: environments/lab_example_org.sls.
  The names come from the minion id, so they go into the YAML encoded, like any data.
#}
{%- set host, _, domain = grains["id"].partition(".") %}
{%- set domain_sls = domain | replace(".", "_") %}
base:
  '*':
    - _from_terraform
{#- The cloud credential (openstack:cloud) is the Kubernetes master's alone: it applies the
    cloud-config Secret (microk8s.cloud_provider); no other minion may read it. #}
{%- if host == "k8s-master" %}
    - _cloud
{%- endif %}
    - environments.defaults
{%- if domain_sls %}
    - {{ ("environments." ~ domain_sls) | yaml_encode }}
{%- endif %}
{%- if host.startswith("k8s-") %}
    - roles.kubernetes
{%- endif %}
    - {{ ("minions.defaults." ~ host) | yaml_encode }}
{%- if domain_sls %}
    - {{ ("minions." ~ domain_sls ~ "." ~ host) | yaml_encode }}
{%- endif %}
    - ignore_missing: true
