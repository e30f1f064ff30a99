"""
Execution module for microk8s, the wiki's "Microk8s Module": status, addons, constants,
crosscall and ha live in submodules; this package is what Salt loads as ``microk8s``. Every
function wraps one microk8s CLI call (through crosscall.run) and returns parsed data.
"""

from __future__ import annotations

import importlib
import re

import salt.utils.path
from salt.exceptions import CommandExecutionError

__virtualname__ = "microk8s"


def _sub(name: str):
    """
    A submodule (_status, _addons, _constants, _crosscall, _ha). Imported when first used, not
    at the top: Salt's loader registers this package in sys.modules only after running this
    file, so an import here at load time could not find its parent package. The underscores
    keep an imported submodule from replacing the public function of the same name.
    """
    return importlib.import_module(f"{__name__}.{name}")


def __virtual__():
    binary = _sub("_constants").BINARY
    if salt.utils.path.which(binary):
        return __virtualname__
    return (False, f"the microk8s execution module needs the {binary} binary on PATH")


def _cmd(*args: str, timeout: int | None = None) -> str:
    return _sub("_crosscall").run(__salt__, *args, timeout=timeout or _sub("_constants").DEFAULT_TIMEOUT)


def status() -> dict:
    """
    Parsed ``microk8s status --format yaml``: running, high availability with its nodes and
    roles, and every addon with its status.

    CLI Example: ``salt '*' microk8s.status``
    """
    return _sub("_status").parse(_cmd("status", "--format", "yaml"))


def is_running() -> bool:
    """True when microk8s reports itself running. CLI Example: ``salt '*' microk8s.is_running``"""
    try:
        return status()["running"]
    except CommandExecutionError:
        return False


def start() -> str:
    """Starts microk8s. CLI Example: ``salt '*' microk8s.start``"""
    return _cmd("start")


def wait_ready(timeout: int = 300) -> bool:
    """Blocks until microk8s is ready or ``timeout`` seconds pass (``status --wait-ready``)."""
    _cmd("status", "--wait-ready", "--timeout", str(timeout), timeout=timeout + 30)
    return True


def addons() -> dict:
    """Every addon with its status, description and version. CLI Example: ``salt '*' microk8s.addons``"""
    return status()["addons"]


def addon_status(name: str) -> str:
    """``enabled`` or ``disabled``. CLI Example: ``salt '*' microk8s.addon_status dns``"""
    return _sub("_addons").status_of(status(), name)


def enable(name: str, args: list[str] | None = None) -> str:
    """Enables an addon, e.g. ``salt '*' microk8s.enable dns``; returns microk8s' output."""
    return _cmd(*_sub("_addons").enable_args(name, args))


def disable(name: str) -> str:
    """Disables an addon. CLI Example: ``salt '*' microk8s.disable registry``"""
    return _cmd("disable", name)


def add_node(token: str | None = None, ttl: int = -1) -> dict:
    """
    Issues a join token and returns ``{"token", "urls"}``. ``ttl=-1`` (the default, as in
    microk8s) makes it single-use; a positive ttl makes it reusable for that many seconds.

    CLI Example: ``salt k8s-master.* microk8s.add_node ttl=600``
    """
    args = ["add-node", "--format", "json", "--token-ttl", str(ttl)]
    if token:
        args += ["--token", token]
    return _sub("_ha").parse_add_node(_cmd(*args))


def join(url: str, worker: bool = False) -> str:
    """Joins the cluster at ``url`` (``ip:port/token/check``), as a worker when asked."""
    return _cmd(*_sub("_ha").join_args(url, worker), timeout=2 * _sub("_constants").DEFAULT_TIMEOUT)


def leave() -> str:
    """Leaves the cluster this node is part of."""
    return _cmd("leave")


def remove_node(node: str, force: bool = False) -> str:
    """Removes a departed (or rebuilt) node from the cluster, by name or address."""
    return _cmd("remove-node", node, *(["--force"] if force else []))


def members() -> list[dict]:
    """The dqlite members (address and role) this node knows."""
    return status()["high_availability"]["nodes"]


def refresh_certs(cert: str = "server.crt") -> str:
    """Regenerates a certificate from csr.conf.template (after a SAN change)."""
    return _cmd("refresh-certs", "--cert", cert)


def config_set_extra_san(address: str) -> dict:
    """
    Puts ``address`` into csr.conf.template as an extra IP SAN, idempotently.
    Returns ``{"changed": bool, "san": "IP.99 = <address>"}``.
    """
    line = f"IP.99 = {address}"
    constants = _sub("_constants")
    text = __salt__["file.read"](constants.CSR_TEMPLATE)
    if re.search(rf"^{re.escape(line)}$", text, re.MULTILINE):
        return {"changed": False, "san": line}
    if re.search(r"^IP\.99 = .*$", text, re.MULTILINE):
        text = re.sub(r"^IP\.99 = .*$", line, text, flags=re.MULTILINE)
    elif constants.CSR_MARKER in text:
        text = text.replace(constants.CSR_MARKER, f"{line}\n{constants.CSR_MARKER}", 1)
    else:
        raise CommandExecutionError(f"{constants.CSR_TEMPLATE} has no {constants.CSR_MARKER} marker to add a SAN at")
    __salt__["file.write"](constants.CSR_TEMPLATE, text)
    return {"changed": True, "san": line}


def cluster_check(expected_nodes: int) -> dict:
    """
    Fails (CommandExecutionError) unless ``expected_nodes`` nodes are Ready in Kubernetes;
    the orchestration's final step. Returns ``{"ready": [names], "expected": N}``.
    """
    output = _cmd("kubectl", "get", "nodes", "--no-headers")
    ready = [line.split()[0] for line in output.splitlines() if len(line.split()) > 1 and line.split()[1] == "Ready"]
    if len(ready) < int(expected_nodes):
        raise CommandExecutionError(
            f"only {len(ready)} of {expected_nodes} nodes are Ready: {', '.join(ready) or 'none'}"
        )
    return {"ready": ready, "expected": int(expected_nodes)}
