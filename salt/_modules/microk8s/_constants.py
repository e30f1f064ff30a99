"""Constants shared by the microk8s execution module's parts."""

BINARY = "microk8s"
# snapd's command, for the snap's channel (install, refresh, list).
SNAP = "snap"
# $SNAP_DATA of the microk8s snap; the minion option ``microk8s.snap_data`` overrides it.
SNAP_DATA = "/var/snap/microk8s/current"
SNAP_DATA_OPTION = "microk8s.snap_data"
# Paths below $SNAP_DATA, as microk8s' own scripts name them.
CSR_TEMPLATE = "certs/csr.conf.template"
CLUSTER_TOKENS = "credentials/cluster-tokens.txt"
# Created by `microk8s join --worker` (join.py mark_worker_node); status refuses to run there.
WORKER_LOCK = "var/lock/clustered.lock"
# kubelite (the kubelet, API server, scheduler, controller manager and proxy in one daemon) as
# snapd names the app (`snap restart microk8s.daemon-kubelite`), and its systemd unit. A worker
# has no status of its own; the unit tells whether it runs.
KUBELITE_APP = "microk8s.daemon-kubelite"
KUBELITE_SERVICE = f"snap.{KUBELITE_APP}"
# The kubelet's arguments below $SNAP_DATA, one `--flag=value` a line, which kubelite reads when
# it starts (microk8s-resources/default-args/kubelite: --kubelet-args-file, read only at start).
KUBELET_ARGS = "args/kubelet"
# The flag an external cloud controller manager needs on every kubelet, and its value.
CLOUD_PROVIDER_FLAG = "--cloud-provider"
EXTERNAL = "external"
# The API server's arguments (microk8s-resources/default-args/kube-apiserver), read by kubelite
# when it starts, and the address it advertises to the cluster: the ``kubernetes`` Service's
# endpoint. Without the flag kube-apiserver takes the address of the default route's interface
# (k8s.io/apimachinery pkg/util/net ChooseHostInterface), the public one on the dual-homed master.
APISERVER_ARGS = "args/kube-apiserver"
ADVERTISE_ADDRESS_FLAG = "--advertise-address"
# After kubelite restarts on a worker (no status to wait on), its service is asked this often.
KUBELITE_POLL_INTERVAL = 2
# The marker microk8s' csr.conf.template carries where extra IP SANs may go.
CSR_MARKER = "#MOREIPS"
# The extra SANs this module manages: IP.99 for the first address, counting down, at most this
# many (IP.99 to IP.90); render_csr_conf numbers the host's own addresses up from IP.3.
SAN_TOP_INDEX = 99
SAN_MAX_ADDRESSES = 10
DEFAULT_TIMEOUT = 300
# Single-use tokens, as microk8s itself defaults to (add-node --token-ttl -1).
SINGLE_USE_TTL = -1
# A token expiring sooner than this is renewed rather than published.
TOKEN_EXPIRY_MARGIN = 120
# The shortest reusable token: one that lives past the margin and a join's backoff. Shorter ones
# would count as expiring on every run and be renewed each time.
MIN_TOKEN_TTL = 300
# The certificate whose fingerprint a join URL carries (add_token.py: server_cert_check), and
# how many hex digits of its SHA-256 it keeps.
SERVER_CERT = "certs/server.crt"
# The cluster's certificate authority: made at install, replaced by the cluster's at a
# control-plane join (join.py join_dqlite_master_node: store_cert("ca.crt", info["ca"])), so two
# nodes in one cluster have the same one and a rebuilt node has a new one.
CA_CERT = "certs/ca.crt"
CHECK_LENGTH = 12
# A member list that is empty while HA is enabled is asked for again this often, this far apart.
MEMBERS_ATTEMPTS = 3
MEMBERS_INTERVAL = 5
# After `microk8s join` exits 0 its services restart and status fails for a while: the membership
# is read again this often, this far apart, before the join is called failed.
SETTLE_ATTEMPTS = 12
SETTLE_INTERVAL = 5
# The join protocol: the mine function the master publishes tokens through, and the event tag
# a joiner fires when its token has to be renewed (salt_master's reactor listens for it).
MINE_FUNCTION = "microk8s.join_tokens"
# Every Kubernetes node publishes its membership through the mine, so that any node can tell
# which voter is in the cluster and issues the tokens (_membership.issuer).
MEMBERSHIP_MINE = "microk8s.membership"
RENEW_TAG = "kube-on-os/microk8s/join-token/renew"
# Why a joiner asks for a new token: failures that consumed its token (_join classifies them), or
# a URL whose certificate fingerprint is stale (the token is unspent, its URL must be republished) ...
RENEWABLE = ("invalid-token", "already-known", "hostname-unresolved", "dqlite-unavailable", "fingerprint-mismatch")
# ... or none published for it (a rebuilt node, whose old address the master counts as joined).
MISSING = "no-token"
# Failures that go away by waiting for the master.
TRANSIENT = ("unreachable", "not-running")
# Where the master keeps the tokens it issued (below the minion's cachedir, mode 0600).
LEDGER = "kube-on-os/microk8s-join-tokens.json"
