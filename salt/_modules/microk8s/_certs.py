"""
The API server certificate's extra IP SAN (the master's floating IP): microk8s generates its
certificates from $SNAP_DATA/certs/csr.conf.template, which marks where extra IPs may go.
"""

from __future__ import annotations

import hashlib
import re
import ssl

from salt.exceptions import CommandExecutionError

from . import _cli
from . import _constants as constants

# The one extra SAN line this module manages; an index far above microk8s' own IP.n entries.
_SAN_LINE = re.compile(r"^IP\.99 = (.*)$", re.MULTILINE)


def extra_san(salt: dict) -> str | None:
    """The address in the template's ``IP.99`` line, or None."""
    match = _SAN_LINE.search(salt["file.read"](_cli.snap_path(salt, constants.CSR_TEMPLATE)))
    return match.group(1).strip() if match else None


def set_extra_san(salt: dict, address: str) -> dict:
    """
    Puts ``address`` into the template as ``IP.99``, once, replacing an older one, keeping the
    marker. Returns ``{"changed": bool, "san": "IP.99 = <address>"}``.
    """
    line = f"IP.99 = {address}"
    template = _cli.snap_path(salt, constants.CSR_TEMPLATE)
    text = salt["file.read"](template)
    if re.search(rf"^{re.escape(line)}$", text, re.MULTILINE):
        return {"changed": False, "san": line}
    if _SAN_LINE.search(text):
        text = _SAN_LINE.sub(line, text)
    elif constants.CSR_MARKER in text:
        text = text.replace(constants.CSR_MARKER, f"{line}\n{constants.CSR_MARKER}", 1)
    else:
        raise CommandExecutionError(f"{template} has no {constants.CSR_MARKER} marker to add a SAN at")
    salt["file.write"](template, text)
    return {"changed": True, "san": line}


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
