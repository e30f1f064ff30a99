{#- The master issues one join token per expected joiner and publishes them through the mine. #}
{%- from "microk8s/map.jinja" import microk8s with context %}
include:
  - microk8s

microk8s-master-microk8s-join-tokens-published:
  microk8s.join_tokens_published:
    - ttl: {{ microk8s.join.token_ttl | yaml_encode }}
    - require:
      - sls: microk8s
