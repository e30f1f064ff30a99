{#- The node tracks microk8s:channel: orch.upgrade applies this to one drained node at a time. #}
{%- from "microk8s/map.jinja" import microk8s with context %}

microk8s-upgrade-microk8s-channel-tracked:
  microk8s.channel_tracked:
    - name: {{ microk8s.channel | yaml_encode }}
