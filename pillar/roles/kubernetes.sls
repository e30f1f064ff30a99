#!yaml
# Every Kubernetes node publishes its microk8s membership, from which any node tells the voter
# that issues join tokens (microk8s.issuer: the master, or while a rebuilt master stands alone,
# the first voter still in the cluster), and the join tokens it issued
# (microk8s.join_tokens_published), and the channel its snap tracks (microk8s.installed), which a
# new node installs when microk8s_channel is unset (kube_on_os.microk8s_channel). Only the
# Kubernetes nodes may read them from the mine.
mine_functions:
  microk8s.join_tokens:
    - mine_function: microk8s.join_tokens
    - allow_tgt: k8s-*
    - allow_tgt_type: glob
  microk8s.membership:
    - mine_function: microk8s.membership
    - allow_tgt: k8s-*
    - allow_tgt_type: glob
  microk8s.installed:
    - mine_function: microk8s.installed
    - allow_tgt: k8s-*
    - allow_tgt_type: glob
