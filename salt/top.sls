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
  'k8s-worker-*':
    - microk8s
    - microk8s.joined
