"""What every service of the kit has: databases, a catalog entry, configuration, processes, seeds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from .kit import PASSWORD, REGION, Kit

if TYPE_CHECKING:
    from openstack.connection import Connection


class Service:
    #: The service's name, also its port's (kit.PORTS) and its Keystone user's.
    name = ""
    databases: tuple[str, ...] = ()
    #: (type, name, path after the service's base URL) for each catalog entry.
    catalog: tuple[tuple[str, str, str], ...] = ()
    #: The configuration file in the service's etc directory, when not "<name>.conf".
    config_name = ""
    #: The service's database tool, when not "<name>-manage".
    manage_tool = ""

    def config_file(self, kit: Kit) -> Path:
        return kit.etc(self.name) / (self.config_name or f"{self.name}.conf")

    def manage(self, kit: Kit, *args: str) -> str:
        """The service's database tool on its configuration file; its output."""
        tool = self.manage_tool or f"{self.name}-manage"
        return kit.run(tool, [kit.bin(tool), "--config-file", str(self.config_file(kit)), *args])

    def configure(self, kit: Kit) -> None:
        """Writes the configuration files (every start: a port base may change)."""

    def migrate(self, kit: Kit) -> None:
        """Creates the schema (a cold start only)."""

    def start(self, kit: Kit) -> None:
        """Starts the processes."""

    def wait(self, kit: Kit) -> None:
        """Returns once the service answers."""

    def seed(self, kit: Kit, admin: Connection) -> None:
        """Creates what the stack expects of this service (a cold start only, after every wait)."""


def connect(kit: Kit, user: str, project: str, **options: object) -> Connection:
    """An openstacksdk connection as `user` in `project`, from the kit's arguments alone (no
    clouds.yaml, no OS_* variables): the admin's seeds, a service user's checks."""
    import openstack

    return openstack.connect(
        auth_url=kit.auth_url,
        username=user,
        password=PASSWORD,
        project_name=project,
        user_domain_name="Default",
        project_domain_name="Default",
        region_name=REGION,
        identity_api_version="3",
        load_yaml_config=False,
        load_envvars=False,
        **options,
    )


def service_credentials(kit: Kit, user: str) -> dict[str, object]:
    """A keystoneauth section of a service user's own password credentials: what a service uses to
    call another one ([service_user], nova's [neutron] and [placement], ...)."""
    return {
        "auth_url": kit.url("keystone"),
        "auth_type": "password",
        "project_domain_name": "Default",
        "user_domain_name": "Default",
        "project_name": "service",
        "username": user,
        "password": PASSWORD,
        "region_name": REGION,
    }


def keystone_authtoken(kit: Kit, user: str) -> dict[str, object]:
    """The [keystone_authtoken] options of a service user."""
    return {
        "www_authenticate_uri": kit.url("keystone"),
        **service_credentials(kit, user),
        "service_token_roles_required": True,
    }


def gunicorn(
    kit: Kit, service: str, app: str, argv: list[str], env: dict[str, str] | None = None, threads: int = 8
) -> None:
    """Starts a service's API: one gunicorn worker, threaded, on the service's port."""
    kit.start(
        f"{service}-api",
        [
            kit.bin("gunicorn"),
            "--bind",
            f"127.0.0.1:{kit.port(service)}",
            "--workers",
            "1",
            "--worker-class",
            "gthread",
            "--threads",
            str(threads),
            "--timeout",
            "600",
            "--graceful-timeout",
            "5",
            # No kept-alive connections: gunicorn's threaded worker closes an idle one after
            # --keep-alive seconds (gthread.py, murder_keepalived), and a client that sends on it
            # just then gets ECONNRESET. Octavia's worker builds its Neutron client without
            # retries (octavia/common/clients.py), so a member delete failed on one. With 0,
            # each reply says "Connection: close" (gthread.py, handle_request).
            "--keep-alive",
            "0",
            "--name",
            f"{service}-api",
            # gunicorn 27's control socket is one path for every gunicorn of the user
            # (~/.gunicorn/gunicorn.ctl): two clouds, or two APIs of one, would share it.
            "--no-control-socket",
            "koo_cloud.wsgi:application",
        ],
        {"KOO_WSGI_APP": app, "KOO_WSGI_ARGV": json.dumps(argv), **(env or {})},
    )
