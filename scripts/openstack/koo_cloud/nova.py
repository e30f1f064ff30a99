"""Nova: the compute API, conductor and scheduler, and two compute hosts on the fake driver.

Cells v2 as a real deployment has them: the API database, cell0 (servers no host took) and cell1
with the two hosts. The hosts run nova's FakeDriverWithoutFakeNodes: servers go ACTIVE without a
hypervisor, and the host keeps its node identity (<state>/data/nova/<host>/compute_id) across a
restart, which plain FakeDriver does not.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from .kit import REGION, Kit, KitError, write_ini
from .service import Service, gunicorn, keystone_authtoken, service_credentials

if TYPE_CHECKING:
    from openstack.connection import Connection

# The host name of the API, conductor and scheduler: fixed, so that a snapshot taken on one
# machine starts on another without a second set of service records.
CONTROLLER = "controller"
COMPUTES = ("compute-1", "compute-2")
DEFAULT_ZONE = "nova"
# The zones the L3 journeys spread node pools over (__tests__/l3-openstack.test.ts): a host each.
ZONES = {"compute-1": "az-1", "compute-2": "az-2"}

# The double's DEFAULT_FLAVORS (__tests__/doubles/openstack/nova.ts):
# (id, name, vcpus, ram MiB, disk GiB, ephemeral GiB, swap MiB).
FLAVORS = (
    ("1", "m1.tiny", 1, 512, 1, 0, 0),
    ("2", "m1.small", 1, 2048, 20, 0, 0),
    ("3", "m1.medium", 2, 4096, 40, 0, 0),
    ("4", "m1.large", 4, 8192, 80, 0, 0),
    ("5", "m1.large.ephemeral", 4, 8192, 40, 40, 1024),
    ("6", "m1.volume-only", 2, 4096, 0, 0, 0),
)


class Nova(Service):
    name = "nova"
    databases = ("nova_api", "nova_cell0", "nova")
    catalog = (("compute", "nova", "/v2.1"),)

    def __init__(self) -> None:
        self.started: datetime | None = None

    # --- configuration ------------------------------------------------------------------------
    def config_files(self, kit: Kit, host: str = CONTROLLER) -> list[str]:
        """The --config-file options of a process on `host`: nova.conf, then the host's own file."""
        return ["--config-file", str(kit.etc("nova") / "nova.conf"), "--config-file", str(self.host_file(kit, host))]

    def host_file(self, kit: Kit, host: str) -> Path:
        return kit.etc("nova") / f"{host}.conf"

    def configure(self, kit: Kit) -> None:
        write_ini(kit.etc("nova") / "nova.conf", nova_conf(kit))
        write_ini(self.host_file(kit, CONTROLLER), controller_conf(kit))
        for host in COMPUTES:
            # nova-compute writes its node identity there, but does not create the directory.
            (kit.data("nova") / host).mkdir(exist_ok=True)
            write_ini(self.host_file(kit, host), compute_conf(kit, host))

    # --- cold start ---------------------------------------------------------------------------
    def manage(self, kit: Kit, *args: str) -> str:
        return kit.run("nova-manage", [kit.bin("nova-manage"), *self.config_files(kit), *args])

    def migrate(self, kit: Kit) -> None:
        # The order of nova's install guide: the API database, cell0, cell1 (its database and
        # transport_url from the configuration), then the cells' schemas.
        self.manage(kit, "api_db", "sync")
        self.manage(kit, "cell_v2", "map_cell0", "--database_connection", kit.database_url("nova_cell0"))
        self.manage(kit, "cell_v2", "create_cell", "--name", "cell1")
        self.manage(kit, "db", "sync")

    def seed(self, kit: Kit, admin: Connection) -> None:
        # The hosts registered in cell1 (wait() saw them); the scheduler places servers only on
        # hosts mapped to a cell.
        self.manage(kit, "cell_v2", "discover_hosts", "--verbose")
        for flavor_id, name, vcpus, ram, disk, ephemeral, swap in FLAVORS:
            admin.compute.create_flavor(
                id=flavor_id, name=name, vcpus=vcpus, ram=ram, disk=disk, ephemeral=ephemeral, swap=swap, is_public=True
            )
        set_zones(kit, admin, ZONES)

    # --- processes ----------------------------------------------------------------------------
    def start(self, kit: Kit) -> None:
        self.started = datetime.now(UTC).replace(tzinfo=None, microsecond=0)
        gunicorn(
            kit,
            "nova",
            "nova.wsgi.osapi_compute:application",
            ["nova-api"],
            # The paste file first: nova loads the application from the first file
            # (nova/api/openstack/wsgi_app.py); an absolute name takes the venv's (data_files).
            {
                "OS_NOVA_CONFIG_DIR": str(kit.etc("nova")),
                "OS_NOVA_CONFIG_FILES": f"{kit.venv / 'etc/nova/api-paste.ini'};nova.conf;{CONTROLLER}.conf",
            },
        )
        for binary in ("nova-conductor", "nova-scheduler"):
            kit.start(binary, [kit.bin(binary), *self.config_files(kit)])
        for host in COMPUTES:
            kit.start(f"nova-{host}", [kit.bin("nova-compute"), *self.config_files(kit, host)])

    def wait(self, kit: Kit) -> None:
        kit.wait_http("nova", "nova-api", "/")
        # The scheduler takes a host whose last report is older than service_down_time (60 s) for
        # down, and a snapshot's reports are older: wait for each service's first report of this
        # start, which it sends only once its RPC server listens (nova/service.py, Service.start).
        from .cloud import admin_connection  # here: cloud.py imports this module

        admin = admin_connection(kit)
        expected = {("nova-conductor", CONTROLLER), ("nova-scheduler", CONTROLLER)}
        expected |= {("nova-compute", host) for host in COMPUTES}
        processes = ["nova-conductor", "nova-scheduler"] + [f"nova-{host}" for host in COMPUTES]

        def all_listening() -> bool:
            for process in processes:
                if not kit.alive(process):
                    raise KitError(f"{process} exited: see {kit.log_path(process)}")
            return expected <= reported_since(admin, self.started)

        kit.wait_for("nova's conductor, scheduler and compute hosts", all_listening, 180)


def reported_since(admin: Connection, since: datetime | None) -> set[tuple[str, str]]:
    """The (binary, host) of the nova services that are up and reported at or after `since`."""
    reported = set()
    for service in admin.compute.get("/os-services").json()["services"]:
        updated = service["updated_at"] and datetime.fromisoformat(service["updated_at"])
        if service["state"] == "up" and updated and (since is None or updated >= since):
            reported.add((service["binary"], service["host"]))
    return reported


def nova_conf(kit: Kit) -> dict[str, dict[str, object]]:
    """nova.conf of every nova process; each host adds its own file (controller_conf, compute_conf)."""
    return {
        "DEFAULT": {
            "use_stderr": True,
            "debug": False,
            "my_ip": "127.0.0.1",
            "transport_url": kit.transport_url,
            "compute_driver": "fake.FakeDriverWithoutFakeNodes",
            "default_availability_zone": DEFAULT_ZONE,
            # `down` need not wait for work in flight (nova waits up to 180 s, nova/conf/base.py):
            # a test cloud's processes end within the kit's 15 s grace instead of being killed.
            "graceful_shutdown_timeout": 5,
            "manager_shutdown_timeout": 0,
        },
        # Durable queues are in the data snapshot, so that a message sent before its consumer
        # listens waits for it: a compute host's first call to the conductor would otherwise be
        # dropped, and the host would wait 10 s to try again (nova/conductor/api.py, wait_until_ready).
        "oslo_messaging_rabbit": {"amqp_durable_queues": True},
        "api": {"auth_strategy": "keystone"},
        "oslo_policy": kit.policy("nova"),
        "keystone_authtoken": keystone_authtoken(kit, "nova"),
        # Nova sends its own token beside the user's, as services expect of it (e.g. cinder's
        # attachment updates, neutron's port bindings).
        "service_user": {"send_service_user_token": True, **service_credentials(kit, "nova")},
        # The other services through the catalog, with nova's own credentials where it acts as
        # itself: neutron's admin calls (port binding), placement, cinder's cleanups.
        "neutron": {**service_credentials(kit, "nova"), "valid_interfaces": "public"},
        "placement": {**service_credentials(kit, "nova"), "valid_interfaces": "public"},
        "cinder": {**service_credentials(kit, "nova"), "catalog_info": "volumev3::publicURL", "os_region_name": REGION},
        "glance": {"region_name": REGION, "valid_interfaces": "public"},
        # Quota and flavor-access calls check the project against keystone, with the user's token.
        "keystone": {"region_name": REGION, "valid_interfaces": "public"},
        "conductor": {"workers": 1},
        "scheduler": {"workers": 1},
        # No hypervisor, so no consoles.
        "vnc": {"enabled": False},
    }


def controller_conf(kit: Kit) -> dict[str, dict[str, object]]:
    """The API's, conductor's and scheduler's (and nova-manage's): the databases. Compute hosts have
    none: they reach the database through the conductor, and one that could see the API database
    fails on every look at the minimum service version (nova/compute/rpcapi.py, _determine_version_cap)."""
    return {
        "DEFAULT": {"host": CONTROLLER, "state_path": kit.data("nova")},
        "api_database": {"connection": kit.database_url("nova_api")},
        "database": {"connection": kit.database_url("nova")},
        "oslo_concurrency": {"lock_path": kit.tmp / "nova-locks"},
    }


def compute_conf(kit: Kit, host: str) -> dict[str, dict[str, object]]:
    """A compute host's own options, read after nova.conf: its name, and its state (the node
    identity file, compute_id, is written to state_path; nova/virt/node.py)."""
    return {
        "DEFAULT": {"host": host, "state_path": kit.data("nova") / host},
        # A lock directory a host: the two hosts' external locks (one name each) must not collide.
        "oslo_concurrency": {"lock_path": kit.tmp / f"nova-locks-{host}"},
    }


def set_zones(kit: Kit, admin: Connection, zones: dict[str, str]) -> None:
    """Puts each compute host into an availability zone: {"compute-1": "az-1", ...}.

    A zone is a host aggregate with availability_zone metadata, named after the zone; a host in
    none is in the default zone ("nova"). A host may belong to one zone only, so it leaves any
    other zone's aggregate first. Nova mirrors the aggregates into placement itself.
    """
    aggregates = {a.name: a for a in admin.compute.aggregates()}
    for host, zone in zones.items():
        for aggregate in aggregates.values():
            if host in (aggregate.hosts or []) and aggregate.availability_zone != zone:
                admin.compute.remove_host_from_aggregate(aggregate, host)
        if zone == DEFAULT_ZONE:
            continue
        aggregate = aggregates.get(zone)
        if aggregate is None:
            aggregate = admin.compute.create_aggregate(name=zone, availability_zone=zone)
            aggregates[zone] = aggregate
        if host not in (admin.compute.get_aggregate(aggregate).hosts or []):
            admin.compute.add_host_to_aggregate(aggregate, host)
    kit.say(f"availability zones: {', '.join(f'{h} in {z}' for h, z in zones.items())}")
