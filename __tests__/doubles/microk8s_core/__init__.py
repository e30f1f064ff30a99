"""
The core both fake microk8s programs share: what they reproduce of microk8s, snapd, dqlite,
kubectl and the cloud controller manager, each module citing the upstream source it follows.

- The L4 fake, __tests__/doubles/microk8s/fake_microk8s.py, which the Salt tests drive: its nodes
  find each other through a shared directory. It puts __tests__/doubles on sys.path.
- The rehearsal's, __tests__/doubles/rehearsal/fake-microk8s/microk8s.py: its nodes talk through
  their cluster agents over HTTP. It finds this package two folders up, in the repository as in
  a host's image, where install.sh installs every module of it below /usr/local/lib/koo-doubles.

Each fake keeps its own transport (how a node reaches the cluster's database and the other
nodes) and its own state files; what both answer, and the source it follows, is here.
"""
