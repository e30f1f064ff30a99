"""Octavia: the API and the controller worker, the amphora provider without amphorae.

The amphora driver is Octavia's no-op one (nothing to configure or connect to), the network
driver its real one (allowed_address_pairs_driver: the VIP port, the VRRP port and the VIP's
security group in Neutron), and the compute driver the kit's own (plugins/koo_octavia_compute.py),
which keeps amphorae as ports bound in Neutron. So a load balancer's VIP is a real port in the
user's project, on which a floating IP can be associated.

Neither the health manager nor housekeeping runs: no amphora sends heartbeats, so there is nothing
to receive (and nothing stale to fail over), and housekeeping only purges deleted rows and rotates
amphora certificates (octavia/cmd/house_keeping.py). Without heartbeats a load balancer's
operating_status stays OFFLINE; its provisioning_status, which clients wait for, goes ACTIVE.
The API and the worker are what the flows need; the driver agent serves provider drivers other
than amphora.
"""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

from . import infra
from .kit import PASSWORD, REGION, Kit, write_ini
from .service import Service, gunicorn, keystone_authtoken

if TYPE_CHECKING:
    from pathlib import Path

    from openstack.connection import Connection

#: The passphrase of the CA's private key, which Octavia reads encrypted.
CA_KEY_PASSPHRASE = PASSWORD
#: The Fernet key that encrypts the amphorae's certificates in Octavia's database: exactly 32
#: URL-safe base64 characters (octavia/certificates/common/local.py, server_certs_key_passphrase).
SERVER_CERTS_KEY_PASSPHRASE = (PASSWORD * 2)[:32]
#: The controller worker's RPC topic (octavia/common/constants.py, TOPIC_AMPHORA_V2).
WORKER_TOPIC = "octavia_provisioning_v2"
#: Of the keystone_authtoken() options, those keystoneauth's password plugin reads in
#: [service_auth] (octavia/common/config.py, register_ks_options).
SERVICE_AUTH_OPTIONS = (
    "auth_url",
    "auth_type",
    "project_domain_name",
    "user_domain_name",
    "project_name",
    "username",
    "password",
    "region_name",
)


def ensure_ca(data: Path) -> tuple[Path, Path]:
    """The CA that signs the amphorae's certificates (GenerateServerPEMTask) and the client CA
    they are built with (CertComputeCreate): made once, at the cold start, kept in the snapshot."""
    cert_path, key_path = data / "ca.pem", data / "ca.key"
    if cert_path.exists() and key_path.exists():
        return cert_path, key_path
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "koo-cloud Octavia CA")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(CA_KEY_PASSPHRASE.encode()),
        )
    )
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return cert_path, key_path


class Octavia(Service):
    name = "octavia"
    databases = ("octavia",)
    catalog = (("load-balancer", "octavia", ""),)
    manage_tool = "octavia-db-manage"

    def configure(self, kit: Kit) -> None:
        ca_cert, ca_key = ensure_ca(kit.data("octavia"))
        authtoken = keystone_authtoken(kit, "octavia")
        write_ini(
            self.config_file(kit),
            {
                "DEFAULT": {"use_stderr": True, "debug": False, "transport_url": kit.transport_url},
                "api_settings": {"bind_host": "127.0.0.1", "bind_port": kit.port("octavia")},
                "database": {"connection": kit.database_url("octavia")},
                "oslo_policy": kit.policy("octavia"),
                "keystone_authtoken": authtoken,
                # What the worker and the network driver call Neutron as: the octavia user.
                "service_auth": {option: authtoken[option] for option in SERVICE_AUTH_OPTIONS},
                # Neutron's endpoint from the catalog (octavia/common/clients.py, NeutronAuth).
                "neutron": {"region_name": REGION, "valid_interfaces": "public"},
                "controller_worker": {
                    "amphora_driver": "amphora_noop_driver",
                    "compute_driver": "koo_ports",
                    "network_driver": "allowed_address_pairs_driver",
                    "client_ca": ca_cert,
                },
                "certificates": {
                    "cert_generator": "local_cert_generator",
                    "ca_certificate": ca_cert,
                    "ca_private_key": ca_key,
                    "ca_private_key_passphrase": CA_KEY_PASSPHRASE,
                    "server_certs_key_passphrase": SERVER_CERTS_KEY_PASSPHRASE,
                },
                # Off by default (octavia/common/config.py, task_flow_opts), said here because
                # the jobboard would need Redis, ZooKeeper or etcd.
                "task_flow": {"jobboard_enabled": False},
            },
        )

    def migrate(self, kit: Kit) -> None:
        self.manage(kit, "upgrade", "head")

    def start(self, kit: Kit) -> None:
        config = str(self.config_file(kit))
        # octavia/wsgi/api.py hands sys.argv to oslo.config.
        gunicorn(kit, "octavia", "octavia.wsgi.api:application", ["octavia-api", "--config-file", config])
        kit.start("octavia-worker", [kit.bin("octavia-worker"), "--config-file", config])

    def wait(self, kit: Kit) -> None:
        kit.wait_http("octavia", "octavia-api", "/")
        kit.wait_for(
            "octavia-worker's RPC queue",
            lambda: infra.queue_consumers(kit, WORKER_TOPIC) > 0,
            120,
            "octavia-worker",
        )

    def seed(self, kit: Kit, admin: Connection) -> None:
        # Each load balancer's VIP security group and VRRP port belong to the service project
        # (the network driver makes them as the octavia user), whose Neutron defaults (10 groups,
        # 100 rules, 500 ports) would cap the load balancers a long-lived cloud has ever kept.
        service_project = admin.identity.find_project("service")
        admin.network.update_quota(service_project.id, security_groups=-1, security_group_rules=-1, ports=-1)
