"""Keystone: fernet tokens, the admin bootstrapped, one service user per service."""

from __future__ import annotations

from .kit import PASSWORD, REGION, Kit, write_ini
from .service import Service, gunicorn


class Keystone(Service):
    name = "keystone"
    databases = ("keystone",)

    def configure(self, kit: Kit) -> None:
        data = kit.data("keystone")
        write_ini(
            self.config_file(kit),
            {
                "DEFAULT": {"use_stderr": True, "debug": False},
                "database": {"connection": kit.database_url("keystone")},
                "oslo_policy": kit.policy("keystone"),
                "token": {"provider": "fernet", "expiration": 86400},
                "fernet_tokens": {"key_repository": data / "fernet-keys"},
                "fernet_receipts": {"key_repository": data / "fernet-receipts"},
                "credential": {"key_repository": data / "credential-keys"},
                # Every password a service or a test authenticates with is checked against its bcrypt
                # hash: at bcrypt's default 12 rounds, a quarter of a second of CPU each, most of the
                # cloud's CPU in a journey. 4 is bcrypt's least (keystone/conf/identity.py).
                "identity": {"password_hash_rounds": 4},
                # One API process: an in-process cache serves its token validations and catalogs
                # (keystone/conf/cache.py; a real cloud uses memcached across its processes).
                "cache": {"enabled": True, "backend": "dogpile.cache.memory"},
            },
        )

    def migrate(self, kit: Kit) -> None:
        self.manage(kit, "db_sync")
        for setup in ("fernet_setup", "credential_setup"):
            self.manage(kit, setup, "--keystone-user", "root", "--keystone-group", "root")
        url = kit.url("keystone")
        self.manage(
            kit,
            "bootstrap",
            "--bootstrap-password",
            PASSWORD,
            "--bootstrap-username",
            "admin",
            "--bootstrap-project-name",
            "admin",
            "--bootstrap-role-name",
            "admin",
            "--bootstrap-service-name",
            "keystone",
            "--bootstrap-region-id",
            REGION,
            "--bootstrap-admin-url",
            url,
            "--bootstrap-internal-url",
            url,
            "--bootstrap-public-url",
            url,
        )

    def start(self, kit: Kit) -> None:
        gunicorn(
            kit,
            "keystone",
            "keystone.wsgi.api:application",
            ["keystone"],
            {"OS_KEYSTONE_CONFIG_FILES": str(self.config_file(kit))},
        )

    def wait(self, kit: Kit) -> None:
        kit.wait_http("keystone", "keystone-api", "/v3")
