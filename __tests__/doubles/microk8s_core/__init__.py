"""
The core both fake microk8s programs share: what they answer, and the upstream source each
answer follows (canonical/microk8s 1.28 and 1.35, its cluster agent, snapd, go-dqlite, kubectl,
the cloud controller manager), cited in each module beside the code it describes.

- The L4 fake, __tests__/doubles/microk8s/fake_microk8s.py, which the Salt tests drive: its nodes
  find each other through a shared directory. It puts __tests__/doubles on sys.path.
- The rehearsal's, __tests__/doubles/rehearsal/fake-microk8s/microk8s.py: its nodes talk through
  their cluster agents over HTTP. It finds this package two folders up, in the repository as in
  a host's image, where install.sh installs every module of it below /usr/local/lib/koo-doubles.

Each fake keeps its own transport (how a node reaches the cluster's database and the other
nodes) and its own state files, and calls the core for the rest:
- releases.py: the channels and versions of the two releases;
- layout.py: $SNAP_DATA's files and the install hook's defaults; faults.py: what a test injects;
- tokens.py (add-node, the agent's token check), join.py (the joiner's checks and texts, the
  agent's refusals and answer), leave.py, remove_node.py, status.py (print_yaml, the wrappers'
  refusals), server_cert.py (the certificates, the join fingerprint, refresh-certs);
- kubectl.py (its texts and verbs), over node_objects.py (Nodes) and kube_objects.py (other
  objects), and cloud_controller.py (the OpenStack cloud controller manager's effect on Nodes);
- dqlite.py: roles, copies, the majority rule; snapd.py: snap's side of the microk8s snap;
- cli.py: printing an answer the core computed.
"""
