"""Cinder: its API, one scheduler and one volume service, whose backend stores nothing.

The backend is the kit's NullVolumeDriver (plugins/koo_cloud_plugins/cinder_volume.py): a volume
is a database row, created, attached, extended and deleted at once, and created from an image
without downloading it. What the double seeds by default is Cinder's own default: the zone
"nova", the volume type __DEFAULT__, and the same quotas (the double copied cinder/quota.py), so
`seed` has nothing to add.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .kit import Kit, write_ini
from .service import Service, connect, gunicorn, keystone_authtoken, service_credentials

if TYPE_CHECKING:
    from openstack.connection import Connection

BACKEND = "koo"
# Cinder's default zone (cinder/common/config.py, storage_availability_zone) and devstack's, and
# the double's (__tests__/doubles/openstack/cinder.ts, CinderOptions.availabilityZones).
AVAILABILITY_ZONE = "nova"
# The type cinder/db/migrations/versions/921e1a36b076_initial.py creates, and the default of
# cinder/common/config.py, default_volume_type. devstack names its LVM backend's type instead.
DEFAULT_VOLUME_TYPE = "__DEFAULT__"


class Cinder(Service):
    name = "cinder"
    databases = ("cinder",)
    # devstack's lib/cinder, create_cinder_accounts: both types, one URL with the project in it.
    # openstacksdk looks up block-storage, then its alias volumev3 (os-service-types); the double
    # lists both (__tests__/doubles/openstack/keystone.ts, SERVICE_PATHS).
    catalog = (
        ("block-storage", "cinder", "/v3/%(project_id)s"),
        ("volumev3", "cinderv3", "/v3/%(project_id)s"),
    )

    def configure(self, kit: Kit) -> None:
        data = kit.data("cinder")
        etc = kit.venv / "etc" / "cinder"  # the wheel's data files
        write_ini(
            self.config_file(kit),
            {
                "DEFAULT": {
                    "use_stderr": True,
                    "debug": False,
                    "transport_url": kit.transport_url,
                    # Volumes and the services' rows name their host ("koo-cloud@koo#koo"), and
                    # the data snapshot holds them: a fixed name keeps them valid on any machine.
                    "host": "koo-cloud",
                    "my_ip": "127.0.0.1",
                    "state_path": data,
                    # Else looked for beside the configuration file and in /etc (oslo_service's
                    # wsgi.Loader). Deprecated for removal, but still read by cinder 29.0.0.
                    "api_paste_config": etc / "api-paste.ini",
                    # The list filters a user other than an admin may use, ?name= included: one
                    # not in this file is a 400 from microversion 3.31 on, and silently dropped
                    # before (cinder/api/common.py, process_general_filtering; the default path is
                    # /etc/cinder). The wheel ships Cinder's default list, the one devstack copies.
                    "resource_query_filters_file": etc / "resource_filters.json",
                    "enabled_backends": BACKEND,
                    "storage_availability_zone": AVAILABILITY_ZONE,
                    "default_volume_type": DEFAULT_VOLUME_TYPE,
                    # The volume service reports its pool to the scheduler when it starts, and the
                    # scheduler asks for reports when it starts (cinder/volume/manager.py, _init_host;
                    # cinder/scheduler/manager.py, init_host_with_rpc), each a fanout cast to whoever
                    # listens at that moment: two processes started together often miss both. The
                    # periodic report then comes within 10 s, not 60 to 120 s (cinder/service.py,
                    # Service.start; publish_service_capabilities' spacing).
                    "periodic_interval": 10,
                    "periodic_fuzzy_delay": 0,
                    "backend_stats_polling_interval": 10,
                    # devstack's choice for slow machines; this one is shared by several clouds.
                    "rpc_response_timeout": 120,
                    # The scheduler and the volume service wait up to 60 s for RPC threads to end
                    # on SIGTERM (oslo_service/_options.py), longer than `down` gives them.
                    "graceful_shutdown_timeout": 5,
                },
                BACKEND: {
                    "volume_driver": "koo_cloud_plugins.cinder_volume.NullVolumeDriver",
                    "volume_backend_name": BACKEND,
                },
                "database": {"connection": kit.database_url("cinder")},
                "oslo_policy": kit.policy("cinder"),
                "keystone_authtoken": keystone_authtoken(kit, "cinder"),
                # Cinder calls Nova (cinder/compute/nova.py) for the events of an attached
                # volume's extension and to check an in-use attachment before deleting it.
                "nova": {**service_credentials(kit, "cinder"), "interface": "public"},
                "oslo_concurrency": {"lock_path": data / "locks"},
            },
        )

    def migrate(self, kit: Kit) -> None:
        self.manage(kit, "db", "sync")

    def start(self, kit: Kit) -> None:
        config = ["--config-file", str(self.config_file(kit))]
        # cinder/wsgi/wsgi.py, initialize_application, parses sys.argv: the wrapper gives it ours.
        gunicorn(kit, "cinder", "cinder.wsgi.api:application", ["cinder-api", *config])
        kit.start("cinder-scheduler", [kit.bin("cinder-scheduler"), *config])
        # One child process per enabled backend, under oslo.service's launcher (cinder/cmd/volume.py).
        kit.start("cinder-volume", [kit.bin("cinder-volume"), *config])

    def wait(self, kit: Kit) -> None:
        kit.wait_http("cinder", "cinder-api", "/")
        # A volume asked for before the scheduler has the backend's report ends in "error" (No
        # valid backend): wait until the scheduler lists the pool.
        connection = service_connection(kit)
        kit.wait_for(
            "cinder-scheduler's report of the volume backend",
            lambda: scheduler_knows_backend(connection),
            180,
            "cinder-volume",
        )


def service_connection(kit: Kit) -> Connection:
    """The cinder service user's (admin in the service project): it may read the scheduler's pools."""
    # api_timeout: a call the scheduler does not take yet waits rpc_response_timeout otherwise.
    return connect(kit, "cinder", "service", api_timeout=5)


def scheduler_knows_backend(connection: Connection) -> bool:
    try:
        pools = list(connection.block_storage.backend_pools())
    except Exception:  # not ready yet, whatever the reason: wait_for has the deadline
        return False
    return any(pool.name.endswith(f"#{BACKEND}") for pool in pools)


def add_volume_type(admin: Connection, name: str, description: str | None = None) -> str:
    """A public volume type on the kit's backend (for scenarios that choose one, e.g. "ssd"):
    returns its id. Cinder gives it unlimited per-type quotas, as the double does."""
    existing = admin.block_storage.find_type(name)
    if existing is not None:
        return existing.id
    # No extra specs: the scheduler places a type without volume_backend_name on any backend.
    created = admin.block_storage.create_type(name=name, description=description, is_public=True)
    return created.id
