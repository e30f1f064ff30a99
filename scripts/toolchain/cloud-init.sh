#!/usr/bin/env bash
# cloud-init's own schema validator, from Debian's package, without its system dependencies:
# the package is downloaded and unpacked, and runs on the toolchain venv's Python.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

dir=$(koo_cloud_init_dir)
is_complete "$dir" && exit 0

need apt-get "cloud-init's validator comes from Debian's cloud-init package; run on Debian/Ubuntu"
need dpkg "install dpkg (Debian's package tool)"
venv=$(koo_venv_dir)
is_complete "$venv" || die "the Python venv is missing; run scripts/toolchain/python.sh first"

log "cloud-init $KOO_CLOUD_INIT_VERSION: extracting Debian's package (once)"
fresh_dir "$dir"
download=$(mktemp -d)
trap 'rm -rf "$download"' EXIT
# apt drops privileges to _apt for downloads; a directory it can write to avoids a warning.
chmod 0777 "$download"
if ! (cd "$download" && apt-get download -qq "cloud-init=$KOO_CLOUD_INIT_VERSION" 2>/dev/null); then
  run_apt update -qq >/dev/null 2>&1 || true
  (cd "$download" && apt-get download -qq "cloud-init=$KOO_CLOUD_INIT_VERSION") ||
    die "apt-get could not download cloud-init $KOO_CLOUD_INIT_VERSION; if Debian has replaced it, set KOO_CLOUD_INIT_VERSION in scripts/toolchain/paths.sh to the version 'apt-cache policy cloud-init' shows"
fi
dpkg -x "$download"/cloud-init_*.deb "$dir/root"

mkdir -p "$dir/bin"
cat >"$dir/bin/cloud-init-schema" <<WRAPPER
#!/usr/bin/env bash
# Validates a cloud-config file offline: cloud-init-schema FILE
exec env PYTHONPATH="$dir/root/usr/lib/python3/dist-packages" "$venv/bin/python" -m cloudinit.cmd.main schema --config-file "\$@"
WRAPPER
chmod +x "$dir/bin/cloud-init-schema"

probe="$download/probe.yaml"
printf '#cloud-config\nruncmd: [echo ok]\n' >"$probe"
"$dir/bin/cloud-init-schema" "$probe" >/dev/null || die "the extracted cloud-init does not run on $venv"
mark_complete "$dir"
