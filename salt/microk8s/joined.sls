{#-
  Joins the master's cluster with the token it published for this node. Control plane or
  worker comes from the pillar (microk8s:nodes, :control_plane) when the state runs: the
  microk8s module that knows the rule only loads once the snap is installed.
  The master must resolve this node's name, so core.hosts runs first.
#}
{%- from "microk8s/map.jinja" import microk8s with context %}
include:
  - core.hosts
  - microk8s.install

microk8s-joined-microk8s-cluster-joined:
  microk8s.cluster_joined:
    - master: {{ microk8s.master | yaml_encode }}
    - attempts: {{ microk8s.join.attempts | yaml_encode }}
    - interval: {{ microk8s.join.interval | yaml_encode }}
    - max_interval: {{ microk8s.join.max_interval | yaml_encode }}
    - require:
      - sls: core.hosts
      - sls: microk8s.install
