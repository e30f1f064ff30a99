#!/usr/bin/env bash
# What the provisioning test's SSH hosts need (__tests__/doubles/ssh-hosts/): OpenSSH's sshd, sudo for their
# deploy user, ssh-agent for the deployer, and iproute2 for the network namespace they live in.
#
# sshd is unpacked from Debian's openssh-server (with libwrap0, which it links) rather than
# installed: the package would start a system-wide sshd on every address of this machine, while
# the test starts its own, inside a network namespace of its own.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

ensure_command sudo sudo
ensure_command visudo sudo
ensure_command ssh-agent openssh-client
ensure_command ip iproute2
# sshd drops privileges to this user before authentication; the package's postinst would add it.
if ! getent passwd sshd >/dev/null; then
  [[ $(id -u) -eq 0 ]] || die "sshd needs the system user 'sshd'; run 'sudo useradd --system --home-dir /run/sshd --shell /usr/sbin/nologin sshd' once"
  useradd --system --no-create-home --home-dir /run/sshd --shell /usr/sbin/nologin sshd
fi
# ... and chroots into this directory (which lives on a tmpfs, so the test makes sure of it too).
[[ -d /run/sshd ]] || install -d -m 0755 /run/sshd 2>/dev/null || die "sshd needs the directory /run/sshd; run 'sudo mkdir -p /run/sshd' once"

version=$(koo_openssh_version)
[[ -n $version ]] || die "apt-cache knows no openssh-server package; run 'apt-get update' once, then retry"
dir=$(koo_sshd_dir)
if is_complete "$dir"; then
  ln -sfn "$dir" "$(koo_sshd_current)"
  exit 0
fi

need dpkg "install dpkg (Debian's package tool)"
log "openssh-server $version: extracting Debian's package (once)"
fresh_dir "$dir"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
# apt drops privileges to _apt for downloads; a directory it can write to avoids a warning.
chmod 0777 "$download"
if ! (cd "$download" && apt-get download -qq openssh-server libwrap0 2>/dev/null); then
  run_apt update -qq >/dev/null 2>&1 || true
  (cd "$download" && apt-get download -qq openssh-server libwrap0) ||
    die "apt-get could not download openssh-server and libwrap0"
fi
for deb in "$download"/*.deb; do
  dpkg -x "$deb" "$dir/root"
done

libs="$dir/root/lib/$(uname -m)-linux-gnu:$dir/root/usr/lib/$(uname -m)-linux-gnu"
mkdir -p "$dir/bin"
cat >"$dir/bin/sshd" <<WRAPPER
#!/usr/bin/env bash
# sshd from the unpacked package; it re-executes itself by this absolute path for each connection.
exec env LD_LIBRARY_PATH="$libs" "$dir/root/usr/sbin/sshd" "\$@"
WRAPPER
chmod +x "$dir/bin/sshd"

# sshd -t checks a configuration and needs a host key: proves the binary and its libraries load.
ssh-keygen -q -t ed25519 -N "" -f "$download/host_key"
"$dir/bin/sshd" -t -f /dev/null -o "HostKey=$download/host_key" ||
  die "the unpacked sshd does not run; see the error above"
mark_complete "$dir"
ln -sfn "$dir" "$(koo_sshd_current)"
