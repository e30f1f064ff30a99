{#-
  Joins the cluster with the token the issuer published for this node (the master, or while a
  rebuilt master stands alone, the first voter still in the cluster; nothing to do on the
  issuer itself). The issuer, and control plane or worker, come from the mine and the pillar
  (microk8s:nodes, :control_plane) when the state runs: the microk8s module that knows the
  rules only loads once the snap is installed. The issuer must resolve this node's name, so
  core.hosts runs first.
#}
{%- from "microk8s/map.jinja" import microk8s with context %}
include:
  - core.hosts
  - microk8s.install

microk8s-joined-microk8s-cluster-joined:
  microk8s.cluster_joined:
    - attempts: {{ microk8s.join.attempts | yaml_encode }}
    - interval: {{ microk8s.join.interval | yaml_encode }}
    - max_interval: {{ microk8s.join.max_interval | yaml_encode }}
    - require:
      - sls: core.hosts
      - sls: microk8s.install
