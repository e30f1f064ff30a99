"""
A node's $SNAP_DATA as both fakes lay it out: the files microk8s keeps there, at microk8s' own
paths relative to $SNAP_DATA (/var/snap/microk8s/current on a rehearsal host, the L4 fake's
$FAKE_MICROK8S_DIR), what the install hook puts in them, and how the fakes write their JSON
state beside them (under fake/).
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

# add_token.py appends a token, the cluster agent spends it (tokens.py).
TOKENS = Path("credentials/cluster-tokens.txt")
# Written by a join with --worker (join.py join_dqlite_worker_node), removed by leave; the
# wrappers' is_cluster_locked reads it.
WORKER_LOCK = Path("var/lock/clustered.lock")
CSR_TEMPLATE = Path("certs/csr.conf.template")
SERVER_CRT = Path("certs/server.crt")
SERVER_KEY = Path("certs/server.key")
CA_CRT = Path("certs/ca.crt")
CA_KEY = Path("certs/ca.key")
# join.py store_remote_ca: a worker's copy of the cluster's CA, beside its own ca.crt.
REMOTE_CA = Path("certs/ca.remote.crt")
# The install hook's copies of default-args (snap/hooks/install): the kubelet's, which a join
# replaces by the node joined's (join.py), and the API server's (kube_objects.py), which it keeps.
KUBELET_ARGS = Path("args/kubelet")
APISERVER_ARGS = Path("args/kube-apiserver")
# microk8s-resources/default-args/kubelet's first lines: the install hook copies default-args to
# $SNAP_DATA/args (snap/hooks/install); nothing here reads them, they only keep the file honest.
DEFAULT_KUBELET_ARGS = (
    "--kubeconfig=${SNAP_DATA}/credentials/kubelet.config\n"
    "--cert-dir=${SNAP_DATA}/certs\n"
    "--client-ca-file=${SNAP_DATA}/certs/ca.crt\n"
    "--anonymous-auth=false\n"
    "--fail-swap-on=false\n"
)


def read_json(path: Path, default):
    return json.loads(path.read_text()) if path.exists() else default


def write_json(path: Path, data) -> None:
    """
    ``data`` as JSON at ``path``, renamed over the old file: other processes (nodes, an agent's
    threads) read it without a lock, and a file truncated in place would let them see it empty.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)
