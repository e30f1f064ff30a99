{#-
  salt-run state.orchestrate orch.deploy: the Salt master first; then every minion syncs the
  custom modules, reads the fresh pillar and publishes its addresses to the mine, so core.hosts
  on the Kubernetes master names every joiner; then the bastion and the Kubernetes master
  (which issues and publishes the join tokens) together; then every worker in batches; then the
  master retracts the tokens spent; then a cluster check against microk8s:nodes. The chain has
  the same length at any number of nodes.
#}
{%- from "orch/map.jinja" import orchestration with context %}
{%- from "microk8s/map.jinja" import microk8s with context %}
{#- Salt fails a batched salt.state that targets no minion ("No minions returned"), so with a
    single node (no workers) the worker step is left out. #}
{%- set has_workers = microk8s.nodes | length > 1 %}

orch-deploy-salt-state-salt-master:
  salt.state:
    - tgt: "salt.*"
    - highstate: true

orch-deploy-salt-function-sync-all:
  salt.function:
    - name: saltutil.sync_all
    - tgt: "*"
    - require:
      - salt: orch-deploy-salt-state-salt-master

orch-deploy-salt-function-refresh-pillar:
  salt.function:
    - name: saltutil.refresh_pillar
    - tgt: "*"
    - kwarg:
        wait: true
    - require:
      - salt: orch-deploy-salt-function-sync-all

orch-deploy-salt-function-mine-update:
  salt.function:
    - name: mine.update
    - tgt: "*"
    - require:
      - salt: orch-deploy-salt-function-refresh-pillar

orch-deploy-salt-state-bastion-and-master:
  salt.state:
    - tgt: "bastion.* or k8s-master.*"
    - tgt_type: compound
    - highstate: true
    - require:
      - salt: orch-deploy-salt-function-mine-update

{%- if has_workers %}

orch-deploy-salt-state-workers:
  salt.state:
    - tgt: "k8s-worker-*"
    - highstate: true
    - batch: {{ orchestration.worker_batch | yaml_encode }}
    - require:
      - salt: orch-deploy-salt-state-bastion-and-master
{%- endif %}

{#- The master published a token for each joiner before they joined; once they have, it retracts
    them, so that the next highstate finds nothing to change. #}
orch-deploy-salt-state-spent-tokens:
  salt.state:
    - tgt: "k8s-master.*"
    - sls: microk8s.master
    - require:
      - salt: {{ "orch-deploy-salt-state-workers" if has_workers else "orch-deploy-salt-state-bastion-and-master" }}

orch-deploy-salt-function-cluster-check:
  salt.function:
    - name: microk8s.cluster_check
    - tgt: "k8s-master.*"
    - require:
      - salt: orch-deploy-salt-state-spent-tokens
