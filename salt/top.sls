#!yaml
# Roles come from the minion id (= FQDN) that cloud-init sets: <role-host>.<domain>.
base:
  '*':
    - core
    # The user's own files, on the hosts the pillar's file_transfer names.
    - file_transfer
  'salt.*':
    - salt_master
  'bastion.*':
    - bastion
  # The master joins (if rebuilt), then enables the cluster's addons and issues join tokens.
  'k8s-master.*':
    - microk8s.master
  # Joiners install microk8s, join, then set their kubelet's --cloud-provider, and a voter the
  # address its API server advertises and the API addresses in its certificate; addons are the
  # cluster's, enabled from the master (a node joined with --worker refuses addon commands, and
  # a join resets a node's own addons).
  # A voter issues the join tokens while a rebuilt master stands alone (microk8s.tokens).
  # Every Kubernetes node but the master: k8s-worker-<n> and the pools' k8s-<pool>-<n>.
  'k8s-* and not k8s-master.*':
    - match: compound
    - microk8s.install
    - microk8s.joined
    - microk8s.kubelet
    - microk8s.apiserver
    - microk8s.certificates
    - microk8s.tokens
