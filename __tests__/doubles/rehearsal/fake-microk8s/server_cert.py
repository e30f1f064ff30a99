"""
The API server certificate as both fake microk8s issue it (this one, installed beside the
rehearsal's fake, and __tests__/doubles/microk8s/fake_microk8s.py), from csr.conf as microk8s
does (canonical/microk8s microk8s-resources/actions/common/utils.sh):
- render_csr_conf copies $SNAP_DATA/certs/csr.conf.template to csr.conf.rendered, replacing the
  ``#MOREIPS`` marker with one ``IP.<n> = <address>`` line per host address (get_ips: `hostname
  -I` without CNI addresses), n counting up from 3 and skipping any index the template already
  has (``grep '^IP.<n>'``, a prefix match: a template line ``IP.99`` also skips IP.9); with no
  address but 127.0.0.1 it only removes the marker;
- refresh_csr_conf copies csr.conf.rendered to csr.conf; gen_server_cert signs server.crt with
  ``-extfile csr.conf -extensions v3_ext``, whose subjectAltName is ``@alt_names``: every DNS.n
  and IP.n line of that section, in the file's order;
- `refresh-certs --cert server.crt` (scripts/wrappers/refresh_certs.py reproduce_server_cert)
  runs ``refresh_csr_conf; gen_server_cert``: the template's lines as they are now, the extra
  SANs Salt manages (IP.99, IP.98, ...) among them, end up in the certificate; the install's
  produce_certs renders csr.conf first too, and a join's ensure_server_ca keeps a valid csr.conf
  (ensure_csr_conf_conservative) before gen_server_cert.

The certificate is a PEM block whose DER stands in for a real one: JSON with a random serial (so
every issue has a new server_cert_check) and the subjectAltName as `openssl x509 -noout -ext
subjectAltName` prints it (``DNS:<name>``, ``IP Address:<address>``). ssl.PEM_cert_to_DER_cert
decodes it; nothing uses it for TLS.
"""

from __future__ import annotations

import base64
import json
import re
import secrets
from pathlib import Path

MARKER = "#MOREIPS"
BEGIN, END = "-----BEGIN CERTIFICATE-----", "-----END CERTIFICATE-----"
_ALT_NAME = re.compile(r"^(DNS|IP)\.\d+\s*=\s*(\S+)\s*$")


def render_csr_conf(template: str, addresses: list[str]) -> str:
    """utils.sh render_csr_conf, over the template's text and the host's addresses."""
    if addresses in ([], ["127.0.0.1"]):
        return template.replace(MARKER, "")
    lines, index = [], 3
    for address in addresses:
        ip_id, index = index, index + 1
        while re.search(rf"^IP.{ip_id}", template, re.MULTILINE):
            ip_id, index = index, index + 1
        lines.append(f"IP.{ip_id} = {address}")
    return template.replace(MARKER, "\n".join(lines))


def refresh_csr_conf(snap_data: Path, addresses: list[str]) -> None:
    """utils.sh refresh_csr_conf: render_csr_conf, then csr.conf.rendered copied to csr.conf."""
    certs = snap_data / "certs"
    rendered = render_csr_conf((certs / "csr.conf.template").read_text(), addresses)
    (certs / "csr.conf.rendered").write_text(rendered)
    (certs / "csr.conf").write_text(rendered)


def alt_names(csr_conf: str) -> list[str]:
    """The subjectAltName openssl gives a certificate from csr.conf's [ alt_names ], in its order."""
    section, names = None, []
    for line in csr_conf.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped.strip("[] ")
        elif section == "alt_names" and (match := _ALT_NAME.match(stripped)):
            kind = "DNS" if match.group(1) == "DNS" else "IP Address"
            names.append(f"{kind}:{match.group(2)}")
    return names


def gen_server_cert(snap_data: Path, addresses: list[str]) -> None:
    """
    utils.sh gen_server_cert: a new server.crt from csr.conf, which is rendered first when there
    is none (as produce_certs and ensure_csr_conf_conservative do).
    """
    csr_conf = snap_data / "certs" / "csr.conf"
    if not csr_conf.exists():
        refresh_csr_conf(snap_data, addresses)
    payload = json.dumps({"serial": secrets.token_hex(16), "subjectAltName": alt_names(csr_conf.read_text())})
    body = base64.encodebytes(payload.encode()).decode()
    (snap_data / "certs" / "server.crt").write_text(f"{BEGIN}\n{body}{END}\n")


def subject_alt_names(certificate: str) -> list[str]:
    """What `openssl x509 -noout -ext subjectAltName` lists for a certificate gen_server_cert issued."""
    inner = certificate.split(BEGIN)[1].split(END)[0]
    return json.loads(base64.decodebytes(inner.encode()))["subjectAltName"]
