"""
The API server certificate's extra IP SANs (every address clients reach the API at: the master's
floating IP, the load balancer's floating IP and VIP). microk8s generates its certificates from
$SNAP_DATA/certs/csr.conf.template: render_csr_conf (microk8s-resources/actions/common/utils.sh)
copies it to csr.conf, replacing the ``#MOREIPS`` marker with the host's own addresses numbered
from ``IP.3`` up (skipping any index the template already has), and `refresh-certs --cert
server.crt` (scripts/wrappers/refresh_certs.py reproduce_server_cert: refresh_csr_conf;
gen_server_cert) issues server.crt from csr.conf. So the lines this module writes into the
template are kept across renders, and microk8s' own never collide with them.
"""

from __future__ import annotations

import hashlib
import ipaddress
import re
import ssl

from salt.exceptions import CommandExecutionError

from . import _cli
from . import _constants as constants

# Managed lines: IP.99 for the first address, IP.98 for the second, and so on down, far above the
# IP.n microk8s numbers up from 3 for the host's addresses.
_SAN_LINE = re.compile(r"^IP\.(\d+)[ \t]*=[ \t]*(.*?)[ \t]*$", re.MULTILINE)
_MANAGED = range(constants.SAN_TOP_INDEX - constants.SAN_MAX_ADDRESSES + 1, constants.SAN_TOP_INDEX + 1)


def _managed(text: str) -> dict[int, str]:
    """The managed lines of a template: {index: address}."""
    return {int(m.group(1)): m.group(2) for m in _SAN_LINE.finditer(text) if int(m.group(1)) in _MANAGED}


def _wanted(addresses: list[str]) -> dict[int, str]:
    """{index: address} for ``addresses`` in order, IP.99 down; refuses anything but distinct IPv4 addresses."""
    if isinstance(addresses, str) or not isinstance(addresses, (list, tuple)):
        raise CommandExecutionError(f"the extra SANs must be a list of IPv4 addresses, not {addresses!r}")
    if len(addresses) > constants.SAN_MAX_ADDRESSES:
        raise CommandExecutionError(
            f"at most {constants.SAN_MAX_ADDRESSES} extra SANs are managed, not {len(addresses)}: {addresses!r}"
        )
    wanted = {}
    for offset, address in enumerate(addresses):
        try:
            canonical = str(ipaddress.IPv4Address(address))
        except (ipaddress.AddressValueError, ValueError, TypeError):
            raise CommandExecutionError(f"{address!r} is not an IPv4 address: an extra SAN must be one") from None
        if canonical in wanted.values():
            raise CommandExecutionError(f"{canonical} is listed twice in the extra SANs {addresses!r}")
        wanted[constants.SAN_TOP_INDEX - offset] = canonical
    return wanted


def extra_sans(salt: dict) -> list[str]:
    """The addresses in the template's managed lines (``IP.99``, ``IP.98``, ...), in that order."""
    managed = _managed(salt["file.read"](_cli.snap_path(salt, constants.CSR_TEMPLATE)))
    return [managed[index] for index in sorted(managed, reverse=True)]


def set_extra_sans(salt: dict, addresses: list[str]) -> dict:
    """
    Makes the template's managed lines list exactly ``addresses``, in order (``IP.99`` first):
    adds, replaces and removes managed lines, just before the marker, and leaves the marker and
    microk8s' own lines alone. Returns ``{"changed": bool, "sans": ["IP.99 = <address>", ...]}``.
    """
    wanted = _wanted(addresses)
    sans = [f"IP.{index} = {address}" for index, address in wanted.items()]
    template = _cli.snap_path(salt, constants.CSR_TEMPLATE)
    text = salt["file.read"](template)
    if constants.CSR_MARKER not in text:
        raise CommandExecutionError(f"{template} has no {constants.CSR_MARKER} marker to add a SAN at")
    if _managed(text) == wanted:
        return {"changed": False, "sans": sans}
    kept = "".join(
        line
        for line in text.splitlines(keepends=True)
        if not ((m := _SAN_LINE.match(line.rstrip("\n"))) and int(m.group(1)) in _MANAGED)
    )
    text = kept.replace(constants.CSR_MARKER, "".join(f"{san}\n" for san in sans) + constants.CSR_MARKER, 1)
    # file.write ends every argument with a newline of its own.
    salt["file.write"](template, text.removesuffix("\n"))
    return {"changed": True, "sans": sans}


def refresh_certs(salt: dict, cert: str) -> str:
    """Regenerates ``cert`` from the template (after a SAN change)."""
    return _cli.run(salt, "refresh-certs", "--cert", cert)


def ca_fingerprint(salt: dict) -> str | None:
    """
    The SHA-256 of the node's CA certificate (DER), or None before microk8s made one: the same on
    every node of one cluster (a control-plane join stores the cluster's), new on a rebuilt node.
    """
    path = _cli.snap_path(salt, constants.CA_CERT)
    if not salt["file.file_exists"](path):
        return None
    try:
        return hashlib.sha256(ssl.PEM_cert_to_DER_cert(salt["file.read"](path))).hexdigest()
    except ValueError as error:
        raise CommandExecutionError(f"{path} is not a PEM certificate: {error}") from None
