"""A Cinder volume driver with no storage: volumes, snapshots and connections exist in Cinder's
database only.

Cinder's own cinder/tests/fake_driver.py (FakeLoggingVolumeDriver) is not enough: it is an LVM
driver with a fake executor, so creating a volume from an image falls back to
BaseVD.copy_image_to_volume, which downloads the image, runs qemu-img and writes it to
LVMVolumeDriver.local_path, a path under /dev. Here clone_image claims every image as cloned, so
cinder/volume/flows/manager/create_volume.py, _create_from_image, never downloads one: it only
copies the image's metadata into the volume (bootable, volume_image_metadata). Encrypted volumes,
which skip clone_image, are not supported.
"""

from __future__ import annotations

from typing import Any

from cinder.volume import driver


class NullVolumeDriver(driver.VolumeDriver):
    """Says yes to everything and stores nothing."""

    VERSION = "1.0"

    def do_setup(self, context: Any) -> None:
        pass

    def check_for_setup_error(self) -> None:
        pass

    # --- volumes and snapshots: Cinder's database is the whole backend --------------------------
    def create_volume(self, volume: Any) -> None:
        pass

    def create_volume_from_snapshot(self, volume: Any, snapshot: Any) -> None:
        pass

    def create_cloned_volume(self, volume: Any, src_vref: Any) -> None:
        pass

    def clone_image(
        self, context: Any, volume: Any, image_location: Any, image_meta: Any, image_service: Any
    ) -> tuple[dict[str, Any], bool]:
        return {}, True

    def delete_volume(self, volume: Any) -> None:
        pass

    def extend_volume(self, volume: Any, new_size: int) -> None:
        pass

    def create_snapshot(self, snapshot: Any) -> None:
        pass

    def delete_snapshot(self, snapshot: Any) -> None:
        pass

    def revert_to_snapshot(self, context: Any, volume: Any, snapshot: Any) -> None:
        pass

    # --- exports and connections (Nova's attach, the attachments API) -----------------------------
    def ensure_export(self, context: Any, volume: Any) -> None:
        pass

    def create_export(self, context: Any, volume: Any, connector: Any) -> None:
        pass

    def remove_export(self, context: Any, volume: Any) -> None:
        pass

    def initialize_connection(self, volume: Any, connector: Any, **kwargs: Any) -> dict[str, Any]:
        # The answer cinder/tests/fake_driver.py gives; Nova's fake virt driver never connects to
        # it. The volume manager adds access_mode, qos_specs and encrypted
        # (cinder/volume/manager.py, _parse_connection_options).
        return {"driver_volume_type": "iscsi", "data": {"target_discovered": False, "volume_id": volume.id}}

    def terminate_connection(self, volume: Any, connector: Any, **kwargs: Any) -> None:
        pass

    # --- what the scheduler sees ----------------------------------------------------------------
    def _update_volume_stats(self) -> None:
        name = self.configuration.safe_get("volume_backend_name") or "koo"
        # "infinite" passes cinder/scheduler/filters/capacity_filter.py whatever the size.
        self._stats = {
            "volume_backend_name": name,
            "vendor_name": "kube-on-os",
            "driver_version": self.VERSION,
            "storage_protocol": "iSCSI",
            "pools": [
                {
                    "pool_name": name,
                    "total_capacity_gb": "infinite",
                    "free_capacity_gb": "infinite",
                    "reserved_percentage": 0,
                    "QoS_support": False,
                    "thin_provisioning_support": True,
                    "multiattach": True,
                }
            ],
        }
