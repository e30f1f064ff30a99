#!/usr/bin/env bash
# Prepares the Salt master's persistent volume: /srv/salt (80%) and the Salt PKI (20%).
# The volume is attached after the instance boots, so this waits for it. It never reformats:
# a volume that already carries the labels (a re-created instance) is only mounted.
# Reads KOO_SALT_VOLUME_ID from /etc/kube-on-os/bootstrap.env. `--print-device` only prints the
# volume's device once it is there (KOO_BOOTSTRAP_ENV and KOO_DISK_BY_ID point elsewhere in tests).
set -euo pipefail

# shellcheck source=/dev/null
source "${KOO_BOOTSTRAP_ENV:-/etc/kube-on-os/bootstrap.env}"
by_id=${KOO_DISK_BY_ID:-/dev/disk/by-id}

# The volume is found by its id, never by a device name: Nova's reported device is a guess, and an
# ephemeral disk or swap in the flavor moves the volume past /dev/vdb. Nova gives the disk the
# volume id as its serial (nova/virt/block_device.py, nova/virt/libvirt/volume/volume.py); virtio-blk keeps the
# first 20 characters (VIRTIO_BLK_ID_BYTES), which udev links as virtio-<serial>, and a SCSI bus
# (image property hw_disk_bus=scsi) keeps it whole, as scsi-0QEMU_QEMU_HARDDISK_<id>.
volume_device() {
  local link
  for link in "${by_id}/virtio-${KOO_SALT_VOLUME_ID:0:20}" "${by_id}/scsi-0QEMU_QEMU_HARDDISK_${KOO_SALT_VOLUME_ID}"; do
    if [[ -b ${link} ]]; then
      readlink -f "${link}"
      return 0
    fi
  done
  return 1
}

device=
for _ in $(seq 1 150); do
  device=$(volume_device) && break
  sleep 2
done
[[ -n ${device} ]] || {
  echo "salt-volume: volume ${KOO_SALT_VOLUME_ID} did not appear in ${by_id}" >&2
  exit 1
}
if [[ ${1:-} == --print-device ]]; then
  echo "${device}"
  exit 0
fi
udevadm settle

if ! blkid -L salt-srv >/dev/null 2>&1; then
  if [[ -z $(lsblk -no PARTTYPE "${device}" | tr -d '[:space:]') ]]; then
    parted -s "${device}" mklabel gpt mkpart salt-srv ext4 1MiB 80% mkpart salt-pki ext4 80% 100%
    udevadm settle
  fi
  # The kernel names the partitions: vdb1 on virtio-blk, but nvme0n1p1 or loop0p1 on others.
  mapfile -t partitions < <(lsblk -lnpo NAME,TYPE "${device}" | awk '$2 == "part" { print $1 }')
  [[ ${#partitions[@]} -eq 2 ]] || {
    echo "salt-volume: ${device} has ${#partitions[@]} partitions, not the 2 this script makes; not formatting it" >&2
    exit 1
  }
  mkfs.ext4 -q -L salt-srv "${partitions[0]}"
  mkfs.ext4 -q -L salt-pki "${partitions[1]}"
fi

mkdir -p /srv/salt /etc/salt/pki
grep -q 'LABEL=salt-srv' /etc/fstab || echo 'LABEL=salt-srv /srv/salt ext4 defaults,nofail 0 2' >>/etc/fstab
grep -q 'LABEL=salt-pki' /etc/fstab || echo 'LABEL=salt-pki /etc/salt/pki ext4 defaults,nofail 0 2' >>/etc/fstab
mount -a
echo "salt-volume: /srv/salt and /etc/salt/pki mounted from ${device}"
