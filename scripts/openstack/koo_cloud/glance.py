"""Glance: the image API over a file store, and the two public images the stack's defaults name."""

from __future__ import annotations

import struct
from typing import TYPE_CHECKING

from .kit import Kit, write_ini
from .service import Service, gunicorn, keystone_authtoken

if TYPE_CHECKING:
    from openstack.connection import Connection

# The images the double seeds (__tests__/doubles/openstack/server.ts, NOBLE_IMAGE and WIKI_IMAGE),
# with the same fixed ids: a stack may name either by id.
IMAGES = (
    ("5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93", "Ubuntu 24.04"),
    ("ad156007-77bb-4e32-ac97-7f8340cab73d", "ubuntu-20.04-focal"),
)

# The size the images' data claims as a disk: m1.tiny's root disk, so that every flavor with a
# root disk can boot them (nova/compute/api.py, _validate_flavor_image_nostatus).
VIRTUAL_SIZE = 1024**3


def qcow2_header(virtual_size: int) -> bytes:
    """The 512-byte header of an empty qcow2 (version 2) disk, which is all Glance inspects.

    Glance refuses data that does not match the image's disk_format (glance/location.py,
    [image_format] require_image_format_match, true by default): a qcow2 image needs the magic,
    and its header needs no backing file (oslo_utils/imageutils/format_inspector.py, QcowInspector).
    """
    cluster_bits = 16
    # magic, version, backing file offset and size, cluster bits, virtual size, no encryption.
    header = struct.pack(">4sIQIIQI", b"QFI\xfb", 2, 0, 0, cluster_bits, virtual_size, 0)
    return header.ljust(512, b"\0")


class Glance(Service):
    name = "glance"
    databases = ("glance",)
    catalog = (("image", "glance", ""),)
    # The WSGI application reads glance-api.conf from OS_GLANCE_CONFIG_DIR (glance/common/wsgi_app.py).
    config_name = "glance-api.conf"

    def configure(self, kit: Kit) -> None:
        data = kit.data("glance")
        write_ini(
            self.config_file(kit),
            {
                # One file store, under the names Glance's multi-store configuration wants: the
                # staging and tasks stores are reserved ones it requires besides (glance/common/wsgi_app.py).
                "DEFAULT": {"use_stderr": True, "debug": False, "enabled_backends": "fs:file"},
                "database": {"connection": kit.database_url("glance")},
                "oslo_policy": kit.policy("glance"),
                "keystone_authtoken": keystone_authtoken(kit, "glance"),
                # The venv holds the paste file (the package's data_files); without [paste_deploy]
                # config_file, Glance looks for it beside its own configuration (glance/common/config.py).
                "paste_deploy": {"flavor": "keystone", "config_file": kit.venv / "etc/glance/glance-api-paste.ini"},
                "glance_store": {"default_backend": "fs"},
                "fs": {"filesystem_store_datadir": data / "images"},
                "os_glance_staging_store": {"filesystem_store_datadir": data / "staging"},
                "os_glance_tasks_store": {"filesystem_store_datadir": data / "tasks"},
                "oslo_concurrency": {"lock_path": kit.tmp / "glance-locks"},
            },
        )

    def migrate(self, kit: Kit) -> None:
        self.manage(kit, "db", "sync")

    def start(self, kit: Kit) -> None:
        gunicorn(
            kit,
            "glance",
            "glance.wsgi.api:application",
            ["glance-api"],
            {"OS_GLANCE_CONFIG_DIR": str(kit.etc("glance"))},
        )

    def wait(self, kit: Kit) -> None:
        kit.wait_http("glance", "glance-api", "/")

    def seed(self, kit: Kit, admin: Connection) -> None:
        # Straight through the image API: the SDK's create_image makes up its own id.
        data = qcow2_header(VIRTUAL_SIZE)
        for image_id, name in IMAGES:
            image = {
                "id": image_id,
                "name": name,
                "visibility": "public",
                "disk_format": "qcow2",
                "container_format": "bare",
            }
            admin.image.post("/images", json=image).raise_for_status()
            admin.image.put(
                f"/images/{image_id}/file", data=data, headers={"Content-Type": "application/octet-stream"}
            ).raise_for_status()
