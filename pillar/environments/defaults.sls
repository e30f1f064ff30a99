# Defaults for every deployment; _from_terraform provides the deployment's own values first,
# so only keys Terraform does not know belong here.
# network.ip_addrs (limited to the private network) comes with _from_terraform, which knows it;
# the master's join tokens with minions/defaults/k8s-master.

orchestration:
  worker_batch: 25%

microk8s:
  channel: 1.28/stable
  addons:
    enabled:
      - dns
      - hostpath-storage
      - helm3
      - ha-cluster
      - observability
    disabled:
      - registry
