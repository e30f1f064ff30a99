{#-
  salt-run state.orchestrate orch.deploy: every minion first syncs the custom modules and takes
  the minion options of core.minion (restarting once when they change, and the next step waits
  until each runs with them); then the Salt master's highstate; then every minion reads the fresh
  pillar and publishes its addresses to the mine, so core.hosts on the Kubernetes master names
  every joiner; then the bastion and the Kubernetes master (which issues and publishes the join
  tokens) together; then the other control-plane nodes one at a time (dqlite takes one new voter
  at a time: microk8s#4696, #2348); then the workers in batches; then the master retracts the
  tokens spent; then, where the master's pillar has openstack:cloud, it gives every node its
  providerID; then a cluster check against microk8s:nodes; then a node drained before its
  machine was replaced is uncordoned; then the master gives every node its
  labels and taints from microk8s:nodes; then, where the master's pillar has openstack:cloud, the
  master applies the OpenStack cloud integration (the cloud-config Secret, the cloud controller
  manager, the Cinder CSI driver, every node initialized by the controller manager, the default
  StorageClass). The chain has the same length at any number of nodes.

  After an apply that only replaced machines, orchestrate.sh passes orchestration:replaced (the
  minions on new machines, everything else as the last orch.deploy left it): only they are synced
  and highstated, with the Kubernetes master, which issues their join tokens; every master-side
  step after the joins runs as always. A new Kubernetes master or Salt master takes the whole run.
#}
{%- from "orch/map.jinja" import orchestration with context %}
{%- from "microk8s/map.jinja" import microk8s with context %}
{%- from "orch/minions.jinja" import steps %}
{#- Who is who (orch/roles.jinja). Salt fails a batched salt.state that targets no minion ("No
    minions returned"), so a step with nobody to target is left out. #}
{%- from "orch/roles.jinja" import ids, master, cp_joiners, workers with context %}
{%- set replaced = orchestration.replaced or [] %}
{#- Replaced minions that are no Kubernetes node: the bastion, or the Salt master. #}
{%- set others = replaced | reject("in", ids) | list %}
{%- set bastions = others | select("match", "bastion[.]") | list %}
{%- set partial = replaced and master not in replaced and others == bastions %}
{#- Who this run syncs and highstates: every minion, or after a replacement only the new machines. #}
{%- if partial %}
{%-   set tgt = {"tgt": replaced | join(","), "tgt_type": "list"} %}
{%-   set highstated = {"tgt": ([master] + bastions) | join(","), "tgt_type": "list"} %}
{%-   set joining_voters = cp_joiners | select("in", replaced) | list %}
{%-   set joining_workers = workers | select("in", replaced) | list %}
{%- else %}
{%-   set tgt = {"tgt": "*"} %}
{%-   set highstated = {"tgt": "bastion.* or k8s-master.*", "tgt_type": "compound"} %}
{%-   set joining_voters = cp_joiners %}
{%-   set joining_workers = workers %}
{%- endif %}
{#- A step's tgt (and tgt_type) lines. #}
{%- macro targeting(target) %}
{%-   for key, value in target.items() %}
    - {{ key }}: {{ value | yaml_encode }}
{%-   endfor %}
{%- endmacro %}
{%- set joined_before_workers = "orch-deploy-salt-state-control-plane" if joining_voters else "orch-deploy-salt-function-release-check" %}

{{ steps("orch-deploy", targeting(tgt)) }}

{#- core.minion is part of every highstate: from here on it finds its file as the step above left it. #}
{%- if not partial %}

orch-deploy-salt-state-salt-master:
  salt.state:
    - tgt: "salt.*"
    - highstate: true
    - require:
      - salt: orch-deploy-salt-function-minion-options
{%- endif %}

orch-deploy-salt-function-refresh-pillar:
  salt.function:
    - name: saltutil.refresh_pillar
    - tgt: "*"
    - kwarg:
        wait: true
    - require:
      - salt: {{ "orch-deploy-salt-function-minion-options" if partial else "orch-deploy-salt-state-salt-master" }}

orch-deploy-salt-function-mine-update:
  salt.function:
    - name: mine.update
    - tgt: "*"
    - require:
      - salt: orch-deploy-salt-function-refresh-pillar

orch-deploy-salt-state-bastion-and-master:
  salt.state:
{{- targeting(highstated) }}
    - highstate: true
    - require:
      - salt: orch-deploy-salt-function-mine-update

{#- New nodes install microk8s:channel (unset: the channel the nodes track): the cluster must
    already run that release (the roll, orch.upgrade, moves it), or they would join it at
    another minor. #}
orch-deploy-salt-function-release-check:
  salt.function:
    - name: microk8s.release_check
    - tgt: {{ master | yaml_encode }}
{%- if microk8s.channel %}
    - arg:
      - {{ microk8s.channel | yaml_encode }}
{%- endif %}
    - require:
      - salt: orch-deploy-salt-state-bastion-and-master
{%- if joining_voters %}

orch-deploy-salt-state-control-plane:
  salt.state:
    - tgt: {{ joining_voters | join(",") | yaml_encode }}
    - tgt_type: list
    - highstate: true
    - batch: 1
    - require:
      - salt: orch-deploy-salt-function-release-check
{%- endif %}
{%- if joining_workers %}

orch-deploy-salt-state-workers:
  salt.state:
    - tgt: {{ joining_workers | join(",") | yaml_encode }}
    - tgt_type: list
    - highstate: true
    - batch: {{ orchestration.worker_batch | yaml_encode }}
    - require:
      - salt: {{ joined_before_workers }}
{%- endif %}

{#- The issuer published a token for each joiner before they joined; once they have, it retracts
    them (and any voter that issued while the master was rebuilt retracts its own), so that the
    next highstate finds nothing to change. #}
orch-deploy-salt-state-spent-tokens:
  salt.state:
    - tgt: {{ ([master] + cp_joiners) | join(",") | yaml_encode }}
    - tgt_type: list
    - sls: microk8s.tokens
    - require:
      - salt: {{ "orch-deploy-salt-state-workers" if joining_workers else joined_before_workers }}

{#- Right after the joins, the master gives every node its providerID (microk8s.provider_ids,
    a no-op without openstack:cloud): a joiner's kubelet registered it with the uninitialized
    taint, and the cloud controller manager, running since an earlier deploy, finds its server by
    providerID only, so it initializes the node now, whatever the rest of this run does. #}
orch-deploy-salt-state-provider-ids:
  salt.state:
    - tgt: {{ master | yaml_encode }}
    - sls: microk8s.provider_ids
    - require:
      - salt: orch-deploy-salt-state-spent-tokens

orch-deploy-salt-function-cluster-check:
  salt.function:
    - name: microk8s.cluster_check
    - tgt: "k8s-master.*"
    - require:
      - salt: orch-deploy-salt-state-provider-ids

{#- A node drained before its machine was replaced (provisioners/drain-node.sh: by the master, or
    for the master itself by the next voter) is back in service once its new machine is Ready. #}
orch-deploy-salt-function-uncordon-replaced:
  salt.function:
    - name: microk8s.uncordon_replaced
    - tgt: {{ ([master] + cp_joiners[:1]) | join(",") | yaml_encode }}
    - tgt_type: list
    - require:
      - salt: orch-deploy-salt-function-cluster-check

{#- Once every node is Ready (a new one included), the master's kubectl gives each node the labels
    and taints of its microk8s:nodes entry, on every run, so a changed pool applies at the next
    one. Workers cannot run kubectl. #}
orch-deploy-salt-state-node-labels:
  salt.state:
    - tgt: {{ master | yaml_encode }}
    - sls: microk8s.labels
    - require:
      - salt: orch-deploy-salt-function-uncordon-replaced

{#- Every node is in the cluster and labelled: the master applies the cloud-config Secret, the
    cloud controller manager and the Cinder CSI driver, waits until the controller manager has
    initialized every node, and makes the default StorageClass (microk8s.cloud_provider). Only
    the master's pillar holds openstack:cloud; without it the SLS renders nothing and the step
    succeeds with no state. #}
orch-deploy-salt-state-cloud-provider:
  salt.state:
    - tgt: {{ master | yaml_encode }}
    - sls: microk8s.cloud_provider
    - require:
      - salt: orch-deploy-salt-state-node-labels
