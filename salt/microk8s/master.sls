{#-
  The Kubernetes master. In this order (Salt runs included SLS in the order they are listed):
  it joins the cluster if one exists without it (a rebuilt master; microk8s.joined does nothing
  on the issuer), its kubelet's --cloud-provider (after the join, which replaces the kubelet's
  arguments), the address its API server advertises, then its certificate, the cluster's addons,
  and the join tokens it issues.
#}
include:
  - microk8s.joined
  - microk8s.kubelet
  - microk8s.apiserver
  - microk8s
  - microk8s.tokens
