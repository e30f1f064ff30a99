"""Constants shared by the microk8s execution module's parts."""

BINARY = "microk8s"
SNAP_CURRENT = "/var/snap/microk8s/current"
CSR_TEMPLATE = f"{SNAP_CURRENT}/certs/csr.conf.template"
# The marker microk8s' csr.conf.template carries where extra IP SANs may go.
CSR_MARKER = "#MOREIPS"
DEFAULT_TIMEOUT = 300
# Single-use tokens, as microk8s itself defaults to (add-node --token-ttl -1).
SINGLE_USE_TTL = -1
