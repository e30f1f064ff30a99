#!yaml
# The microk8s master publishes the join tokens it issued (microk8s.join_tokens_published);
# only the Kubernetes nodes may read them from the mine.
mine_functions:
  microk8s.join_tokens:
    - mine_function: microk8s.join_tokens
    - allow_tgt: k8s-*
    - allow_tgt_type: glob
