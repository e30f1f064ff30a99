#!/usr/bin/env bash
# Installs what the real OpenStack kit runs (scripts/openstack/README.md), once, into the cache:
# Debian's MariaDB and RabbitMQ servers (installed, never started by the package: the kit starts
# its own, on 127.0.0.1 only), and a venv with the pinned 2026.2 services. Prints the venv's path.
#
#   scripts/openstack/install.sh            install if needed (about a minute, then milliseconds)
#   scripts/openstack/install.sh --refreeze reinstall from requirements.txt alone and rewrite
#                                           constraints.txt (after changing a pin)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../toolchain/paths.sh"

here="$KOO_ROOT/scripts/openstack"
refreeze=false
case "${1:-}" in
  "") ;;
  --refreeze) refreeze=true ;;
  *) die "usage: scripts/openstack/install.sh [--refreeze] (got '$1')" ;;
esac

# The packages' maintainer scripts start their servers unless policy-rc.d says no; the kit starts
# its own instances, so a system-wide one must never run.
install_servers() {
  local missing=()
  command -v mariadbd >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1 || missing+=(mariadb-server mariadb-client)
  [[ -x /usr/lib/rabbitmq/bin/rabbitmq-server ]] || missing+=(rabbitmq-server)
  ((${#missing[@]} == 0)) && return 0
  need apt-get "install ${missing[*]} with your package manager"
  log "OpenStack kit: installing Debian's ${missing[*]} (their services are not started)"
  local policy=/usr/sbin/policy-rc.d saved=""
  if [[ -e $policy ]]; then saved=$(mktemp) && cp -p "$policy" "$saved"; fi
  [[ $(id -u) -eq 0 ]] || die "installing ${missing[*]} needs root; run this script as root once"
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 0755 "$policy"
  local status=0
  DEBIAN_FRONTEND=noninteractive run_apt install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1 ||
    { run_apt update -qq >/dev/null 2>&1 && DEBIAN_FRONTEND=noninteractive run_apt install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; } ||
    status=$?
  if [[ -n $saved ]]; then mv "$saved" "$policy"; else rm -f "$policy"; fi
  ((status == 0)) || die "apt-get could not install ${missing[*]}"
}

install_servers
need python3 "install Python 3.11 or newer"
hash=$(cat "$here/requirements.txt" "$here/constraints.txt" | sha256sum | cut -c1-12)
venv="$KOO_CLOUD_CACHE/venv-$(koo_python_tag)-$hash"
if $refreeze; then
  rm -rf "$venv"
fi
if ! is_complete "$venv"; then
  log "OpenStack kit: installing the 2026.2 services into $venv (once, about a minute)"
  fresh_dir "$venv"
  python3 -m venv "$venv"
  constraints=(--constraint "$here/constraints.txt")
  $refreeze && constraints=()
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile --cache-dir "$KOO_CLOUD_CACHE/pip-cache" \
    "${constraints[@]}" --requirement "$here/requirements.txt" || die "pip could not install scripts/openstack/requirements.txt (see above)"
  if $refreeze; then
    {
      echo "# Every package the kit's environment holds, pinned: pip freeze of requirements.txt's install."
      echo "# Regenerate: scripts/openstack/install.sh --refreeze"
      "$venv/bin/python" -m pip freeze --disable-pip-version-check
    } >"$here/constraints.txt"
    log "OpenStack kit: rewrote scripts/openstack/constraints.txt; run this script again to install from it"
    rm -rf "$venv"
    exit 0
  fi
  mark_complete "$venv"
fi
echo "$venv"
