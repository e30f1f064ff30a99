"""Placement: the resource providers and allocations Nova's scheduler claims against."""

from __future__ import annotations

from .kit import Kit, write_ini
from .service import Service, gunicorn, keystone_authtoken


class Placement(Service):
    name = "placement"
    databases = ("placement",)
    catalog = (("placement", "placement", ""),)

    def configure(self, kit: Kit) -> None:
        write_ini(
            self.config_file(kit),
            {
                "DEFAULT": {"use_stderr": True, "debug": False},
                "placement_database": {"connection": kit.database_url("placement")},
                "oslo_policy": kit.policy("placement"),
                "api": {"auth_strategy": "keystone"},
                "keystone_authtoken": keystone_authtoken(kit, "placement"),
            },
        )

    def migrate(self, kit: Kit) -> None:
        self.manage(kit, "db", "sync")

    def start(self, kit: Kit) -> None:
        gunicorn(
            kit,
            "placement",
            "placement.wsgi.api:application",
            ["placement-api"],
            # The WSGI application reads placement.conf there (placement/wsgi/__init__.py).
            {"OS_PLACEMENT_CONFIG_DIR": str(kit.etc("placement"))},
        )

    def wait(self, kit: Kit) -> None:
        kit.wait_http("placement", "placement-api", "/")
