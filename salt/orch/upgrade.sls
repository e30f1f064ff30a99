{#-
  salt-run state.orchestrate orch.upgrade: rolls a channel one minor up through the cluster (pillar
  orchestration:channel, which provisioners/upgrade.sh passes for each step of a roll several
  minors long, or else microk8s:channel), one node at a time, the master first, then the other
  voters, then the workers, so that never two voters are out at once: drain (on the master) ->
  snap refresh (on the node) -> wait until Kubernetes reports it Ready at the new release ->
  uncordon. The plan refuses a downgrade or a skipped minor before anything is touched; a node
  already at the release is passed over; the first failure stops the roll, and its step names
  the node.
  The chain (provisioners/upgrade.sh) passes the plan's nodes as pillar orchestration:roll: only they
  are rolled (orch/roll.jinja), so a node not in the cluster yet (a scale-up with the new channel) is left to
  orch.deploy. Without it, every node in microk8s:nodes is.
#}
{%- from "orch/map.jinja" import orchestration with context %}
{%- from "microk8s/map.jinja" import microk8s with context %}
{%- from "orch/roles.jinja" import ids, addresses, master with context %}
{%- from "orch/roll.jinja" import order with context %}
{%- set channel = orchestration.channel or microk8s.channel %}
{%- if not channel %}

orch-upgrade-test-fail-without-changes-no-channel:
  test.fail_without_changes:
    - name: "orch.upgrade needs a channel: pillar orchestration:channel, or microk8s:channel (microk8s_channel)"
{%- else %}

{%- if not orchestration.synced %}

orch-upgrade-salt-function-sync-all:
  salt.function:
    - name: saltutil.sync_all
    - tgt: {{ ids | join(",") | yaml_encode }}
    - tgt_type: list

orch-upgrade-salt-function-refresh-pillar:
  salt.function:
    - name: saltutil.refresh_pillar
    - tgt: {{ ids | join(",") | yaml_encode }}
    - tgt_type: list
    - kwarg:
        wait: true
    - require:
      - salt: orch-upgrade-salt-function-sync-all
{%- endif %}

orch-upgrade-salt-function-plan:
  salt.function:
    - name: microk8s.upgrade_plan
    - tgt: {{ master | yaml_encode }}
    - arg:
      - {{ channel | yaml_encode }}
    - kwarg:
        one_minor: true
{%- if not orchestration.synced %}
    - require:
      - salt: orch-upgrade-salt-function-refresh-pillar
{%- endif %}
{%- set previous = namespace(step="orch-upgrade-salt-function-plan") %}
{%- for node in order %}
{%-   set host = node.split(".") | first %}

{{ ("orch-upgrade-salt-function-drain-" ~ host) | yaml_encode }}:
  salt.function:
    - name: microk8s.drain_node
    - tgt: {{ master | yaml_encode }}
    - arg:
      - {{ addresses[node] | yaml_encode }}
      - {{ channel | yaml_encode }}
      - {{ orchestration.drain_timeout | yaml_encode }}
    - require:
      - salt: {{ previous.step | yaml_encode }}

{{ ("orch-upgrade-salt-state-refresh-" ~ host) | yaml_encode }}:
  salt.state:
    - tgt: {{ node | yaml_encode }}
    - sls: microk8s.upgrade
    - pillar:
        microk8s:
          channel: {{ channel | yaml_encode }}
    - require:
      - salt: {{ ("orch-upgrade-salt-function-drain-" ~ host) | yaml_encode }}

{{ ("orch-upgrade-salt-function-ready-" ~ host) | yaml_encode }}:
  salt.function:
    - name: microk8s.wait_node_ready
    - tgt: {{ master | yaml_encode }}
    - arg:
      - {{ addresses[node] | yaml_encode }}
      - {{ channel | yaml_encode }}
      - {{ orchestration.ready_timeout | yaml_encode }}
    - require:
      - salt: {{ ("orch-upgrade-salt-state-refresh-" ~ host) | yaml_encode }}

{{ ("orch-upgrade-salt-function-uncordon-" ~ host) | yaml_encode }}:
  salt.function:
    - name: microk8s.uncordon_node
    - tgt: {{ master | yaml_encode }}
    - arg:
      - {{ addresses[node] | yaml_encode }}
    - require:
      - salt: {{ ("orch-upgrade-salt-function-ready-" ~ host) | yaml_encode }}
{%-   set previous.step = "orch-upgrade-salt-function-uncordon-" ~ host %}
{%- endfor %}
{%- endif %}
