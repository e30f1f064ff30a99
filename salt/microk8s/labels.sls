#!yaml
# Every Kubernetes node's labels and taints, as pillar microk8s:nodes lists them (kube-on-os/pool
# among them), applied through kubectl on a control-plane node: orch.deploy runs it on the master
# once every node is Ready. Only what kube-on-os set is ever removed (docs/microk8s-module.md).
microk8s-labels-microk8s-nodes-labelled:
  microk8s.nodes_labelled:
    - name: microk8s:nodes
