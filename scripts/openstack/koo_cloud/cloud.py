"""Brings a whole cloud up and down: the order of the services, the catalog, the data snapshot."""

from __future__ import annotations

import fcntl
import hashlib
import shutil
import tarfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from . import infra
from .cinder import Cinder
from .glance import Glance
from .keystone import Keystone
from .kit import KIT_DIR, PASSWORD, REGION, Kit, http_answers
from .neutron import Neutron
from .nova import Nova
from .octavia import Octavia
from .placement import Placement
from .service import Service, connect

if TYPE_CHECKING:
    from openstack.connection import Connection

# In start order: each may call the ones before it.
SERVICES: list[Service] = [Keystone(), Glance(), Placement(), Neutron(), Cinder(), Nova(), Octavia()]


def admin_connection(kit: Kit) -> Connection:
    return connect(kit, "admin", "admin")


def snapshot_key(kit: Kit) -> str:
    """What a data snapshot depends on: the pinned packages, the kit's code, and the port base
    (the catalog and the configuration hold the ports)."""
    digest = hashlib.sha256(str(kit.port_base).encode())
    files = [KIT_DIR / "requirements.txt", KIT_DIR / "constraints.txt"]
    files += sorted((KIT_DIR / "koo_cloud").glob("*.py")) + sorted(
        p for p in (KIT_DIR / "plugins").rglob("*") if p.is_file()
    )
    for path in files:
        if "__pycache__" in path.parts:
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def snapshot_path(kit: Kit, cache: Path) -> Path:
    # One directory a port base, so that clouds on other bases keep their own snapshots.
    return cache / f"port-base-{kit.port_base}" / f"snapshot-{snapshot_key(kit)}.tar"


def down(kit: Kit) -> list[str]:
    (kit.state / "up").unlink(missing_ok=True)
    return kit.stop_all()


def register(kit: Kit, admin) -> None:
    """The service project, a user per service with the admin and service roles, and the catalog.

    The service role is what a service token must carry: Cinder answers 401 to Nova's detach
    without it ([keystone_authtoken] service_token_roles, keystonemiddleware's default)."""
    service_project = admin.identity.find_project("service") or admin.identity.create_project(
        name="service", domain_id="default"
    )
    roles = [admin.identity.find_role(name) or admin.identity.create_role(name=name) for name in ("admin", "service")]
    for service in SERVICES[1:]:
        user = admin.identity.find_user(service.name) or admin.identity.create_user(
            name=service.name, password=PASSWORD, domain_id="default", default_project_id=service_project.id
        )
        for role in roles:
            admin.identity.assign_project_role_to_user(service_project, user, role)
        for type_, name, path in service.catalog:
            entry = admin.identity.create_service(type=type_, name=name)
            for interface in ("public", "internal", "admin"):
                admin.identity.create_endpoint(
                    service_id=entry.id, interface=interface, url=kit.url(service.name, path), region_id=REGION
                )


def cold_start(kit: Kit) -> None:
    """An empty cloud: databases created and migrated, the catalog and the seeds written."""
    shutil.rmtree(kit.state, ignore_errors=True)
    kit.state.mkdir(parents=True)
    kit.say("MariaDB and RabbitMQ")
    infra.start_mariadb(kit, fresh=True)
    infra.create_databases(kit, [name for service in SERVICES for name in service.databases])
    infra.start_rabbitmq(kit)
    keystone = SERVICES[0]
    keystone.configure(kit)
    keystone.migrate(kit)
    keystone.start(kit)
    keystone.wait(kit)
    kit.say("keystone")
    admin = admin_connection(kit)
    register(kit, admin)
    for service in SERVICES[1:]:
        service.configure(kit)
        service.migrate(kit)
        kit.say(f"{service.name}: migrated")
    for service in SERVICES[1:]:
        service.start(kit)
    for service in SERVICES[1:]:
        service.wait(kit)
    kit.say("every service answers")
    # A new token: the first one's catalog predates the endpoints register() made, and the SDK
    # disables a service it finds no endpoint for.
    admin = admin_connection(kit)
    for service in SERVICES:
        service.seed(kit, admin)
    kit.say("seeded")


def warm_start(kit: Kit) -> None:
    """Starts every process over the state directory's existing data."""
    infra.start_mariadb(kit, fresh=False)
    infra.start_rabbitmq(kit)
    for service in SERVICES:
        service.configure(kit)
        service.start(kit)
    for service in SERVICES:
        service.wait(kit)
    kit.say("every service answers")


def running(kit: Kit) -> bool:
    """Whether every process of a complete start of this very kit (its snapshot key) still runs,
    and Keystone answers."""
    marker = kit.state / "up"
    if not marker.exists() or marker.read_text().split()[-1:] != [snapshot_key(kit)]:
        return False
    states = status(kit)
    return bool(states) and all(states.values()) and http_answers(kit.url("keystone", "/v3"))


@contextmanager
def locked(kit: Kit) -> Iterator[None]:
    """One `up` or `down` at a time on a state directory: the test run starts the cloud early, and a
    test file that needs it waits here for that start instead of starting another."""
    lock = kit.state.with_name(kit.state.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def up(kit: Kit, cache: Path, cold: bool = False) -> str:
    """Brings the cloud up: from the cached snapshot when there is one, else from nothing (and then
    saves a snapshot). Processes a crashed earlier run left are ended first. Returns how it started:
    "running" when a complete start is still running (and `cold` is not asked for)."""
    if not cold and running(kit):
        return "running"
    left = down(kit)
    if left:
        kit.say(f"ended what an earlier run left running: {', '.join(left)}")
    snapshot = snapshot_path(kit, cache)
    try:
        if cold or not snapshot.exists():
            cold_start(kit)
            down(kit)
            save_snapshot(kit, snapshot)
            kit.say(f"saved {snapshot}")
            how = "cold"
        else:
            how = "warm"
        restore_snapshot(kit, snapshot)
        warm_start(kit)
        (kit.state / "up").write_text(f"{how} {snapshot_key(kit)}\n")
    except BaseException:
        down(kit)
        raise
    return how


def save_snapshot(kit: Kit, snapshot: Path) -> None:
    snapshot.parent.mkdir(parents=True, exist_ok=True)
    partial = snapshot.with_suffix(".partial")
    with tarfile.open(partial, "w") as tar:
        tar.add(kit.state / "data", arcname="data")
    partial.rename(snapshot)
    for old in snapshot.parent.glob("snapshot-*.tar"):
        if old != snapshot:
            old.unlink()


def restore_snapshot(kit: Kit, snapshot: Path) -> None:
    shutil.rmtree(kit.state, ignore_errors=True)
    kit.state.mkdir(parents=True)
    with tarfile.open(snapshot) as tar:
        tar.extractall(kit.state, filter="tar")


def reset(kit: Kit) -> None:
    down(kit)
    shutil.rmtree(kit.state, ignore_errors=True)


def status(kit: Kit) -> dict[str, bool]:
    return {pid.stem: kit.alive(pid.stem) for pid in sorted(kit.run_dir.glob("*.pid"))}
