"""
Lookups the kube-on-os states need that would otherwise be logic in Jinja.

- ``hosts_file``: /etc/hosts content naming every minion at its private address (from the mine).
- ``interface_in``: the name of the local interface whose IPv4 address lies in a network.
"""

from __future__ import annotations

import ipaddress

from salt.exceptions import CommandExecutionError

__virtualname__ = "kube_on_os"


def __virtual__():
    return __virtualname__


def _private_addresses() -> dict[str, list[str]]:
    """Mine data of ``network.ip_addrs``, which the pillar limits to the private network."""
    return __salt__["mine.get"]("*", "network.ip_addrs") or {}


def hosts_file() -> str:
    """
    /etc/hosts text: localhost, then each minion's first private address with its FQDN and short
    name, sorted by minion id so the file only changes when the cluster does.

    CLI Example:

    .. code-block:: bash

        salt '*' kube_on_os.hosts_file
    """
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost ip6-loopback"]
    for minion_id, addresses in sorted(_private_addresses().items()):
        if not addresses:
            continue
        short = minion_id.split(".", 1)[0]
        lines.append(f"{addresses[0]} {minion_id} {short}")
    return "\n".join(lines) + "\n"


def interface_in(cidr: str) -> str:
    """
    The local interface whose IPv4 address is in ``cidr``. Raises ``CommandExecutionError`` when
    none is, so a state using it fails instead of guessing an interface.

    CLI Example:

    .. code-block:: bash

        salt bastion.example kube_on_os.interface_in 10.0.0.0/16
    """
    try:
        network = ipaddress.ip_network(cidr)
    except (TypeError, ValueError):
        # The bastion's map has no default network: an unset pillar arrives here as None.
        raise CommandExecutionError(f"interface_in needs a network in CIDR notation, got {cidr!r}") from None
    for name, addresses in sorted((__grains__.get("ip4_interfaces") or {}).items()):
        if any(ipaddress.ip_address(address) in network for address in addresses):
            return name
    raise CommandExecutionError(f"no interface has an address in {cidr}")
