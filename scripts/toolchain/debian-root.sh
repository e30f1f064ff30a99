#!/usr/bin/env bash
# The root filesystem the rehearsal's hosts boot from: Debian bookworm, built once with debootstrap
# from the Debian archive, with cloud-init, OpenSSH, sudo, iproute2, iptables and fail2ban from
# Debian, and the pinned Salt in /opt/saltstack/salt (where the Salt Project's packages put it),
# installed from wheels built here: the hosts have no internet. Each host is an overlay on it.
#
# It needs root and mount namespaces. Where either is missing (a CI runner in a container), it
# says so and skips; the tests that boot hosts skip with it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

dir=$(koo_debian_root_dir)
is_complete "$dir" && exit 0
if [[ ${KOO_SKIP_NAMESPACE_TESTS:-} == 1 ]]; then
  log "debian root: skipped, KOO_SKIP_NAMESPACE_TESTS=1 skips the tests that boot hosts"
  exit 0
fi
if [[ $(id -u) -ne 0 ]] || ! unshare --mount true 2>/dev/null; then
  log "debian root: skipped, it needs root and mount namespaces (the tests that boot hosts skip too)"
  exit 0
fi
need dpkg "install dpkg (Debian's package tool)"
need chroot "install coreutils"
[[ $(koo_python_tag) == "$KOO_DEBIAN_PYTHON" ]] ||
  die "Salt's wheels are built with this machine's python3, which must be $KOO_DEBIAN_SUITE's ($KOO_DEBIAN_PYTHON), not $(koo_python_tag)"
salt=$(koo_salt_version)

log "Debian $KOO_DEBIAN_SUITE root with Salt $salt: debootstrap from $KOO_DEBIAN_MIRROR (once, about 2 minutes)"
fresh_dir "$dir"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# apt drops privileges to _apt for downloads; a directory it can write to avoids a warning.
chmod 0777 "$work"
if ! (cd "$work" && apt-get download -qq debootstrap 2>/dev/null); then
  run_apt update -qq >/dev/null 2>&1 || true
  (cd "$work" && apt-get download -qq debootstrap) || die "apt-get could not download debootstrap"
fi
dpkg -x "$work"/debootstrap_*.deb "$work/debootstrap"
root="$dir/root"
DEBOOTSTRAP_DIR="$work/debootstrap/usr/share/debootstrap" "$work/debootstrap/usr/sbin/debootstrap" \
  --variant=minbase --include="$KOO_DEBIAN_PACKAGES" "$KOO_DEBIAN_SUITE" "$root" "$KOO_DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed (the end of its log is above)"; }

log "Salt $salt: wheels built with the toolchain's pins, installed into the root offline"
python3 -m pip wheel --quiet --disable-pip-version-check --cache-dir "$KOO_CACHE/pip-cache" \
  --constraint "$KOO_REQUIREMENTS" --wheel-dir "$root/tmp/wheels" "salt==$salt" || die "pip could not build Salt's wheels (see above)"
# shellcheck disable=SC2016 # $1 and $2 are the inner shell's arguments
unshare --mount --fork env -u PIP_FIND_LINKS bash -euc '
  mount -t proc proc "$1/proc"
  chroot "$1" python3 -m venv /opt/saltstack/salt
  chroot "$1" /opt/saltstack/salt/bin/pip install --quiet --disable-pip-version-check --no-index --find-links /tmp/wheels "salt==$2"
' bash "$root" "$salt" || die "Salt $salt did not install into the Debian root (see above)"
# The system locale of Ubuntu's cloud images, C.UTF-8. Bookworm leaves LANG unset, and its
# cloud-init (22.4) then generates en_US.UTF-8 at each first boot; Ubuntu 24.04's (23.4 and later,
# canonical/cloud-init#4503) defaults to C.UTF-8, which needs no generation, as this root now does.
printf 'LANG=C.UTF-8\n' >"$root/etc/default/locale"
for tool in salt salt-call salt-cp salt-key salt-master salt-minion salt-run; do
  ln -sfn "/opt/saltstack/salt/bin/$tool" "$root/usr/bin/$tool"
done
rm -rf "$root/tmp/wheels" "$root"/var/cache/apt/archives/*.deb
# No package lists: the hosts have no Debian mirror, so the lists debootstrap left could only be
# the installed packages' own, and apt parsed their 50 MB at every pkg.uptodate (core.packages),
# about 1 s of CPU in each highstate, to find no upgrade. Without them it finds none at once.
find "$root/var/lib/apt/lists" -maxdepth 1 -type f -delete

# shellcheck disable=SC2016 # $1 is the inner shell's argument
version=$(unshare --mount --fork bash -c 'mount -t proc proc "$1/proc" && chroot "$1" salt-call --version' bash "$root") ||
  die "salt-call does not run in the Debian root"
[[ $version == "salt-call $salt "* ]] || die "the Debian root has $version, not Salt $salt"
mark_complete "$dir"
