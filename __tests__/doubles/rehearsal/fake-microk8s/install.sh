#!/usr/bin/env bash
# Installs the fake microk8s and snap into the root directory given (a host's image). Below
# /usr/local/lib/koo-doubles the image keeps the layout of the repository's __tests__/doubles: the
# program in rehearsal/fake-microk8s, and every module of microk8s_core, the core it shares with
# the L4 fake, which it finds two folders up, there as here. snap and microk8s are on PATH as the
# real snaps put them (links to run.py, which imports microk8s.py), with an init script for
# kubelite, whose status Salt asks on a worker through debian_service. Every host installs this
# afresh into its overlay before it boots (cloud.ts): no image is cached.
set -euo pipefail
root=${1:?usage: install.sh ROOT}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
core=$(cd "$here/../../microk8s_core" && pwd)
lib=/usr/local/lib/koo-doubles
program=$lib/rehearsal/fake-microk8s
install -D -m 0755 "$here/run.py" "$root$program/run.py"
install -D -m 0755 "$here/microk8s.py" "$root$program/microk8s.py"
for module in "$core"/*.py; do
  install -D -m 0644 "$module" "$root$lib/microk8s_core/$(basename "$module")"
done
mkdir -p "$root/usr/bin" "$root/snap/bin" "$root/etc/init.d"
ln -sfn "$program/run.py" "$root/usr/bin/snap"
ln -sfn "$program/run.py" "$root/usr/bin/microk8s"
ln -sfn "$program/run.py" "$root/snap/bin/microk8s"
cat >"$root/etc/init.d/snap.microk8s.daemon-kubelite" <<SCRIPT
#!/bin/sh
# The fake microk8s' kubelite: running while its cluster agent answers and microk8s is started (and
# not restarting after a snap refresh).
case "\$1" in
  status) $program/run.py microk8s-health ;;
  *) exit 0 ;;
esac
SCRIPT
chmod 0755 "$root/etc/init.d/snap.microk8s.daemon-kubelite"
