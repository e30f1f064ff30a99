{#-
  The address the API server of a control-plane node (the master, and every dqlite voter the
  pillar names in microk8s:control_plane) advertises to the cluster: its private address, the
  one Terraform lists in microk8s:nodes. It is the endpoint of the `kubernetes` Service, which
  pods and the kubelets' in-cluster clients reach the API at. Without the flag kube-apiserver
  advertises the address of the default route's interface, which on the dual-homed master is the
  public one, where api_allowed_cidrs may refuse the cluster's own traffic.

  After the join (which keeps this line: join.py changes only --authorization-mode and
  --secure-port there). With the flag set, microk8s' apiservice-kicker no longer reissues the
  server certificate when the host's addresses change (it only checks the CA); the certificate
  is Salt's (microk8s.certificates). A change restarts kubelite and waits until the node is back.
#}
{%- from "microk8s/map.jinja" import control_plane, node_address with context %}
{%- if control_plane and node_address %}
include:
  - microk8s.install
  - microk8s.joined

microk8s-apiserver-microk8s-apiserver-advertise-address:
  microk8s.apiserver_advertise_address:
    - address: {{ node_address | json }}
    - require:
      - sls: microk8s.install
      - sls: microk8s.joined
{%- endif %}
