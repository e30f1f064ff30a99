#!/usr/bin/env bash
# Makes the bastion the private network's router: IPv4 forwarding on, and the private network
# masqueraded behind the public interface. Salt's bastion states make this persistent later.
# Reads KOO_PRIVATE_CIDR and KOO_PUBLIC_INTERFACE from /etc/kube-on-os/bootstrap.env.
set -euo pipefail

# shellcheck source=/dev/null
source /etc/kube-on-os/bootstrap.env

sysctl --system >/dev/null
if ! iptables -t nat -C POSTROUTING -s "${KOO_PRIVATE_CIDR}" -o "${KOO_PUBLIC_INTERFACE}" -j MASQUERADE 2>/dev/null; then
  iptables -t nat -A POSTROUTING -s "${KOO_PRIVATE_CIDR}" -o "${KOO_PUBLIC_INTERFACE}" -j MASQUERADE
fi
echo "bastion-nat: forwarding ${KOO_PRIVATE_CIDR} through ${KOO_PUBLIC_INTERFACE}"
