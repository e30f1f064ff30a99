"""
The API server certificate as both fake microk8s issue it (this package's __init__.py names
them), from csr.conf as microk8s does (canonical/microk8s microk8s-resources/actions/common/
utils.sh):
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
  (ensure_csr_conf_conservative) before gen_server_cert;
- the cluster CA (certs/ca.crt and ca.key) is made at install, unique to that install: the
  install hook (snap/hooks/install) calls produce_certs, which writes ca.crt only when it is
  missing; a join's stores and leave's keeping of it are join.py's and leave.py's;
- the join fingerprint: add-node's check is server_cert_check (sha256 of certs/server.crt in DER,
  its first 12 hex characters), and join.py's join_request compares the connection string's
  fingerprint with the start of the master's (join.py in this package), so a new certificate
  changes the check.

The CA and the certificate are real X.509, made by the `openssl` commands utils.sh runs
(produce_certs: the CA, subject /CN=10.152.183.1 with its CA extensions; gen_server_cert: a
request from server.key, signed by ca.crt and ca.key with csr.conf's v3_ext), so `openssl x509`
reads them and a TLS handshake verifies them against the cluster CA. Two differences, neither
read by a test: the keys are EC P-256 where produce_certs makes RSA 2048 (`genrsa`, a hundred
times the CPU of the fakes' every install), and openssl reads csr.conf's [ alt_names ] through
microk8s' own [ req ], [ dn ] and [ v3_ext ] (SIGNING below), so a test's template may hold only
the lines it is about.
"""

from __future__ import annotations

import base64
import hashlib
import re
import subprocess
import tempfile
from pathlib import Path

MARKER = "#MOREIPS"
# microk8s-resources/certs/csr.conf.template's [ alt_names ] and its marker, as the install hook
# copies it to $SNAP_DATA/certs (the rest of the template is SIGNING's, below).
CSR_TEMPLATE = "[ alt_names ]\nDNS.1 = kubernetes\nIP.1 = 127.0.0.1\nIP.2 = 10.152.183.1\n#MOREIPS\n"
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


# microk8s-resources/certs/csr.conf.template, but for [ alt_names ], which gen_server_cert
# appends from csr.conf.
SIGNING = """[ req ]
default_bits = 2048
prompt = no
default_md = sha256
req_extensions = req_ext
distinguished_name = dn

[ dn ]
C = GB
ST = Canonical
L = Canonical
O = Canonical
OU = Canonical
CN = 127.0.0.1

[ req_ext ]
subjectAltName = @alt_names

[ v3_ext ]
authorityKeyIdentifier=keyid,issuer:always
basicConstraints=CA:FALSE
keyUsage=keyEncipherment,dataEncipherment,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=@alt_names
"""


def _openssl(*args: str) -> str:
    return subprocess.run(["openssl", *args], check=True, capture_output=True, text=True).stdout


def _new_key(path: Path) -> None:
    """produce_certs' `genrsa -out <key> 2048`, as EC P-256 (above)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(path))


def produce_ca(snap_data: Path) -> None:
    """produce_certs: ca.key and server.key when missing, then the CA when certs/ca.crt is missing."""
    certs = snap_data / "certs"
    for key in ("ca.key", "server.key"):
        if not (certs / key).exists():
            _new_key(certs / key)
    if not (certs / "ca.crt").exists():
        _openssl(
            "req", "-x509", "-new", "-sha256", "-nodes", "-days", "3650", "-key", str(certs / "ca.key"),
            "-subj", "/CN=10.152.183.1",
            "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-addext", "subjectKeyIdentifier=hash",
            "-addext", "authorityKeyIdentifier=keyid:always,issuer",
            "-out", str(certs / "ca.crt"),
        )  # fmt: skip


def gen_server_cert(snap_data: Path, addresses: list[str]) -> None:
    """
    utils.sh gen_server_cert: a new server.crt from csr.conf, signed by the node's CA, which is
    rendered first when there is none (as produce_certs and ensure_csr_conf_conservative do).
    """
    certs = snap_data / "certs"
    certs.mkdir(parents=True, exist_ok=True)
    if not (certs / "csr.conf").exists():
        refresh_csr_conf(snap_data, addresses)
    produce_ca(snap_data)
    names = [name.replace("IP Address:", "IP:").split(":", 1) for name in alt_names((certs / "csr.conf").read_text())]
    lines = [f"{kind}.{index} = {value}" for index, (kind, value) in enumerate(names, start=1)]
    with tempfile.NamedTemporaryFile("w", suffix=".conf", dir=certs) as config:
        config.write(SIGNING + "\n[ alt_names ]\n" + "\n".join(lines) + "\n")
        config.flush()
        _openssl("req", "-new", "-sha256", "-key", str(certs / "server.key"), "-out", str(certs / "server.csr"),
                 "-config", config.name)  # fmt: skip
        _openssl("x509", "-req", "-sha256", "-in", str(certs / "server.csr"), "-CA", str(certs / "ca.crt"),
                 "-CAkey", str(certs / "ca.key"), "-CAcreateserial", "-out", str(certs / "server.crt"), "-days", "365",
                 "-extensions", "v3_ext", "-extfile", config.name)  # fmt: skip


def subject_alt_names(certificate: str) -> list[str]:
    """What `openssl x509 -noout -ext subjectAltName` lists for a certificate, in its order."""
    printed = subprocess.run(["openssl", "x509", "-noout", "-ext", "subjectAltName"], input=certificate,
                             check=True, capture_output=True, text=True).stdout  # fmt: skip
    return [name.strip() for line in printed.splitlines()[1:] for name in line.split(",") if name.strip()]


def refresh_certs(args: list[str], snap_data: Path, addresses: list[str], shown: str) -> int:
    """
    scripts/wrappers/refresh_certs.py: ``--cert`` names the certificate (without it a message, exit
    3); a backup under $SNAP_DATA/certs-backup/ (``shown``: the $SNAP_DATA path it prints), new
    certificates, the services restarted. Only server.crt is issued anew (reproduce_server_cert:
    refresh_csr_conf; gen_server_cert, from the template's IP.n as they are now).
    """
    cert = args[args.index("--cert") + 1] if "--cert" in args else None
    if cert is None:
        print("Please use the '--cert' flag to select the certificate you need refreshed.")
        return 3
    print(f"Taking a backup of the current certificates under {shown}/certs-backup/")
    print("Creating new certificates")
    if cert == "server.crt":
        refresh_csr_conf(snap_data, addresses)
        gen_server_cert(snap_data, addresses)
        print("Restarting service kubelite.\nRestarting service cluster-agent.")
    return 0


def der(pem: str) -> bytes:
    """ssl.PEM_cert_to_DER_cert, for the fakes' certificates."""
    inner = pem.split("-----BEGIN CERTIFICATE-----")[1].split("-----END CERTIFICATE-----")[0]
    return base64.decodebytes(inner.encode())


def fingerprint(pem: str) -> str:
    """The sha256 of a certificate's DER, in hex, which join.py's join_request compares."""
    return hashlib.sha256(der(pem)).hexdigest()


def check(pem: str) -> str:
    """utils.sh server_cert_check: the fingerprint's first 12 hex characters."""
    return fingerprint(pem)[:12]
