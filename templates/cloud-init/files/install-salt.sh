#!/usr/bin/env bash
# Installs the pinned Salt release from the Salt Project's official Debian/Ubuntu packages.
# Reads KOO_SALT_VERSION and KOO_ROLE from /etc/kube-on-os/bootstrap.env, written by cloud-init
# (KOO_BOOTSTRAP_ENV points elsewhere in tests). Skips the download when that release is there.
set -euo pipefail

# shellcheck source=/dev/null
source "${KOO_BOOTSTRAP_ENV:-/etc/kube-on-os/bootstrap.env}"

packages=(salt-minion)
if [[ ${KOO_ROLE} == salt-master ]]; then
  packages+=(salt-master)
fi

# An image (or the rehearsal's Debian root) that already has the pinned release needs no download.
pinned_salt_installed() {
  local program
  [[ $(salt-call --version 2>/dev/null) == "salt-call ${KOO_SALT_VERSION} "* ]] || return 1
  for program in "${packages[@]}"; do
    command -v "${program}" >/dev/null || return 1
  done
}
if pinned_salt_installed; then
  if [[ -d /run/systemd/system ]]; then
    systemctl enable --now "${packages[@]}"
  fi
  echo "install-salt: Salt ${KOO_SALT_VERSION} is already installed; nothing downloaded"
  exit 0
fi

keyring=/etc/apt/keyrings/salt-archive-keyring.pgp
mkdir -p /etc/apt/keyrings
curl -fsSL --retry 5 https://packages.broadcom.com/artifactory/api/security/keypair/SaltProjectKey/public -o "${keyring}"
echo "deb [signed-by=${keyring} arch=amd64] https://packages.broadcom.com/artifactory/saltproject-deb/ stable main" \
  >/etc/apt/sources.list.d/salt.list

# Pin the whole Salt family to one release, so a later apt upgrade cannot move it.
cat >/etc/apt/preferences.d/salt-pin-1001 <<PIN
Package: salt-*
Pin: version ${KOO_SALT_VERSION}*
Pin-Priority: 1001
PIN

apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${packages[@]}"
systemctl enable --now "${packages[@]}"
echo "install-salt: installed ${packages[*]} ${KOO_SALT_VERSION}"
