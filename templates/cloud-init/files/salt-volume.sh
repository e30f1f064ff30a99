#!/usr/bin/env bash
# Prepares the Salt master's persistent volume: /srv/salt (80%) and the Salt PKI (20%).
# The volume is attached after the instance boots, so this waits for it. It never reformats:
# a volume that already carries the labels (a re-created instance) is only mounted.
# Reads KOO_SALT_DEVICE from /etc/kube-on-os/bootstrap.env.
set -euo pipefail

# shellcheck source=/dev/null
source /etc/kube-on-os/bootstrap.env
device=${KOO_SALT_DEVICE}

for _ in $(seq 1 150); do
  [[ -b ${device} ]] && break
  sleep 2
done
[[ -b ${device} ]] || { echo "salt-volume: ${device} did not appear" >&2; exit 1; }
udevadm settle

if ! blkid -L salt-srv >/dev/null 2>&1; then
  if [[ -z $(lsblk -no PARTTYPE "${device}" | tr -d '[:space:]') ]]; then
    parted -s "${device}" mklabel gpt mkpart salt-srv ext4 1MiB 80% mkpart salt-pki ext4 80% 100%
    udevadm settle
  fi
  mkfs.ext4 -q -L salt-srv "${device}1"
  mkfs.ext4 -q -L salt-pki "${device}2"
fi

mkdir -p /srv/salt /etc/salt/pki
grep -q 'LABEL=salt-srv' /etc/fstab || echo 'LABEL=salt-srv /srv/salt ext4 defaults,nofail 0 2' >>/etc/fstab
grep -q 'LABEL=salt-pki' /etc/fstab || echo 'LABEL=salt-pki /etc/salt/pki ext4 defaults,nofail 0 2' >>/etc/fstab
mount -a
echo "salt-volume: /srv/salt and /etc/salt/pki mounted from ${device}"
