#!/usr/bin/env bash
# Installs the fake microk8s and snap into the root directory given (a host's image): the program
# in /usr/local/lib/fake-microk8s, snap and microk8s on PATH as the real snaps put them (links to
# run.py, which imports microk8s.py), and an init script for kubelite, whose status Salt asks on a
# worker through debian_service.
set -euo pipefail
root=${1:?usage: install.sh ROOT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
install -D -m 0755 "$here/run.py" "$root/usr/local/lib/fake-microk8s/run.py"
install -D -m 0755 "$here/microk8s.py" "$root/usr/local/lib/fake-microk8s/microk8s.py"
install -D -m 0644 "$here/node_objects.py" "$root/usr/local/lib/fake-microk8s/node_objects.py"
install -D -m 0644 "$here/cloud_controller.py" "$root/usr/local/lib/fake-microk8s/cloud_controller.py"
install -D -m 0644 "$here/dqlite.py" "$root/usr/local/lib/fake-microk8s/dqlite.py"
install -D -m 0644 "$here/kube_objects.py" "$root/usr/local/lib/fake-microk8s/kube_objects.py"
install -D -m 0644 "$here/server_cert.py" "$root/usr/local/lib/fake-microk8s/server_cert.py"
install -D -m 0644 "$here/snapd.py" "$root/usr/local/lib/fake-microk8s/snapd.py"
mkdir -p "$root/usr/bin" "$root/snap/bin" "$root/etc/init.d"
ln -sfn /usr/local/lib/fake-microk8s/run.py "$root/usr/bin/snap"
ln -sfn /usr/local/lib/fake-microk8s/run.py "$root/usr/bin/microk8s"
ln -sfn /usr/local/lib/fake-microk8s/run.py "$root/snap/bin/microk8s"
cat >"$root/etc/init.d/snap.microk8s.daemon-kubelite" <<'SCRIPT'
#!/bin/sh
# The fake microk8s' kubelite: running while its cluster agent answers and microk8s is started (and
# not restarting after a snap refresh).
case "$1" in
  status) /usr/local/lib/fake-microk8s/run.py microk8s-health ;;
  *) exit 0 ;;
esac
SCRIPT
chmod 0755 "$root/etc/init.d/snap.microk8s.daemon-kubelite"
