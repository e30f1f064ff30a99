{#-
  The join tokens of the issuer (microk8s.issuer: the master, or while a rebuilt master stands
  alone, the first voter still in the cluster): one per node that has not joined, published
  through the mine. On every other node the state only withdraws tokens it issued earlier.
#}
{%- from "microk8s/map.jinja" import microk8s with context %}
include:
  - microk8s.install

microk8s-tokens-microk8s-join-tokens-published:
  microk8s.join_tokens_published:
    - ttl: {{ microk8s.join.token_ttl | yaml_encode }}
    - require:
      - sls: microk8s.install
