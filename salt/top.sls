#!yaml
# Roles come from the minion id (= FQDN) that cloud-init sets: <role-host>.<domain>.
base:
  '*':
    - core
  'salt.*':
    - salt_master
  'bastion.*':
    - bastion
  'k8s-master.*':
    - microk8s
    - microk8s.master
  # Joiners install microk8s and join; addons are the cluster's, enabled from the master (a
  # node joined with --worker refuses addon commands, and a join resets a node's own addons).
  'k8s-worker-*':
    - microk8s.install
    - microk8s.joined
