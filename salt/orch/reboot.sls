{#-
  salt-run state.orchestrate orch.reboot: reboots the Kubernetes nodes whose package updates need
  it, one node at a time in the roll's order (orch/roll.jinja: the master, the other voters, the
  workers), so that never two voters are out at once: drain (noting the node's boot id) -> reboot
  (the node's minion answers, then the machine goes down) -> the minion's start event -> Ready
  with a new boot id -> uncordon. The first failure stops the roll, and its step names the node.
  A control-plane node drains and waits for the others: the master, or for the master itself the
  next voter, since the master's minion is down while it reboots (a one-node cluster waits for
  its own minion to come back first).
  The chain (provisioners/reboot.sh) passes the nodes that need a reboot as pillar
  orchestration:roll; without it, every node in microk8s:nodes reboots.
#}
{%- from "orch/map.jinja" import orchestration with context %}
{%- from "orch/roles.jinja" import addresses, master, voters with context %}
{%- from "orch/roll.jinja" import order with context %}
{%- set others = voters | reject("equalto", master) | list %}
{%- set previous = namespace(step=none) %}
{%- for node in order %}
{%-   set host = node.split(".") | first %}
{%-   set operator = (others | first) if node == master and others else master %}

{{ ("orch-reboot-salt-function-drain-" ~ host) | yaml_encode }}:
  salt.function:
    - name: microk8s.drain_for_reboot
    - tgt: {{ operator | yaml_encode }}
    - arg:
      - {{ addresses[node] | yaml_encode }}
      - {{ orchestration.drain_timeout | yaml_encode }}
{%-   if previous.step %}
    - require:
      - salt: {{ previous.step | yaml_encode }}
{%-   endif %}

{{ ("orch-reboot-salt-function-reboot-" ~ host) | yaml_encode }}:
  salt.function:
    - name: kube_on_os.reboot
    - tgt: {{ node | yaml_encode }}
    - require:
      - salt: {{ ("orch-reboot-salt-function-drain-" ~ host) | yaml_encode }}

{{ ("orch-reboot-salt-wait-for-event-start-" ~ host) | yaml_encode }}:
  salt.wait_for_event:
    - name: {{ ("salt/minion/" ~ node ~ "/start") | yaml_encode }}
    - id_list:
      - {{ node | yaml_encode }}
    - timeout: {{ orchestration.ready_timeout | yaml_encode }}
    - require:
      - salt: {{ ("orch-reboot-salt-function-reboot-" ~ host) | yaml_encode }}

{{ ("orch-reboot-salt-function-ready-" ~ host) | yaml_encode }}:
  salt.function:
    - name: microk8s.wait_node_rebooted
    - tgt: {{ operator | yaml_encode }}
    - arg:
      - {{ addresses[node] | yaml_encode }}
      - {{ orchestration.ready_timeout | yaml_encode }}
    - require:
      - salt: {{ ("orch-reboot-salt-wait-for-event-start-" ~ host) | yaml_encode }}

{{ ("orch-reboot-salt-function-uncordon-" ~ host) | yaml_encode }}:
  salt.function:
    - name: microk8s.uncordon_node
    - tgt: {{ operator | yaml_encode }}
    - arg:
      - {{ addresses[node] | yaml_encode }}
    - require:
      - salt: {{ ("orch-reboot-salt-function-ready-" ~ host) | yaml_encode }}
{%-   set previous.step = "orch-reboot-salt-function-uncordon-" ~ host %}
{%- endfor %}
