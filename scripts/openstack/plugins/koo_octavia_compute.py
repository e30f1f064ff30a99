"""Octavia's compute driver for the kit: amphorae without machines, whose interfaces are real
Neutron ports.

Octavia's no-op compute driver returns no interface from attach_network_or_port, so the real
network driver (octavia/network/drivers/neutron/allowed_address_pairs.py) cannot plug a VIP with
it; with the no-op network driver as well, the VIP port is invented and a floating IP on it fails.
This driver plays Nova's part instead, with Neutron as its only state: an amphora is an id, ACTIVE
from its build on, and its interfaces are the ports whose device_id is that id, which is all the
network driver reads (base.py, get_plugged_networks). The network driver creates the amphora's
VRRP port on the VIP network itself (_plug_amphora_vip) and hands it to attach_network_or_port,
as it would hand it to Nova.

Loaded by name from [controller_worker] compute_driver, through
koo_cloud_plugins-1.0.dist-info/entry_points.txt ([octavia.compute.drivers]).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

import openstack.exceptions as os_exceptions
from octavia.common import clients, constants, data_models, exceptions
from octavia.compute import compute_base
from oslo_log import log as logging

LOG = logging.getLogger(__name__)


@dataclass(frozen=True)
class Interface:
    """What novaclient's interface_attach returns, as far as the network driver reads it
    (octavia/network/drivers/neutron/base.py, _nova_interface_to_octavia_interface)."""

    port_id: str
    net_id: str
    fixed_ips: list[dict[str, str]]


@dataclass(frozen=True)
class ServerGroup:
    """What NovaServerGroupCreate reads of a server group: its id."""

    id: str = field(default_factory=lambda: str(uuid.uuid4()))


class PortComputeDriver(compute_base.ComputeBase):
    """Nova's side of the amphora flows, kept in Neutron's ports (the module's docstring)."""

    @property
    def _network(self) -> Any:
        # The network driver's own connection ([service_auth], [neutron]), made once a process.
        return clients.NeutronAuth.get_neutron_client().network

    def build(
        self,
        name: str = "amphora_name",
        amphora_flavor: str | None = None,
        image_tag: str | None = None,
        image_owner: str | None = None,
        key_name: str | None = None,
        sec_groups: list[str] | None = None,
        network_ids: list[str] | None = None,
        port_ids: list[str] | None = None,
        config_drive_files: dict[str, str] | None = None,
        user_data: str | None = None,
        server_group_id: str | None = None,
        availability_zone: dict[str, str] | None = None,
    ) -> str:
        """A new amphora, with the ports it was given (a failover's); ComputeCreate passes the
        networks of [controller_worker] amp_boot_network_list, which the kit leaves empty."""
        if network_ids:
            raise exceptions.ComputeBuildException(
                fault="the kit's amphorae have no management network: leave amp_boot_network_list empty"
            )
        compute_id = str(uuid.uuid4())
        for port_id in port_ids or []:
            self.attach_network_or_port(compute_id, port_id=port_id)
        LOG.info("Built amphora %s (%s) with ports %s", compute_id, name, port_ids or [])
        return compute_id

    def delete(self, compute_id: str) -> None:
        """As Nova deletes a server: the ports it did not create are unbound, not deleted. Octavia
        deletes its VRRP and member ports itself (deallocate_vip, DeleteAmphoraMemberPorts)."""
        for port in self._network.ports(device_id=compute_id):
            self.detach_port(compute_id, port.id)

    def status(self, compute_id: str) -> str:
        return constants.UP

    def get_amphora(
        self, compute_id: str, management_network_id: str | None = None
    ) -> tuple[data_models.Amphora, None]:
        """ACTIVE at once (ComputeWait then goes on), without a management address: nothing
        connects to an amphora, the amphora driver being the no-op one."""
        return data_models.Amphora(compute_id=compute_id, status=constants.ACTIVE), None

    def create_server_group(self, name: str, policy: str) -> ServerGroup:
        """Only with [nova] enable_anti_affinity (off): a group that places nothing."""
        return ServerGroup()

    def delete_server_group(self, server_group_id: str) -> None:
        pass

    def attach_network_or_port(
        self,
        compute_id: str,
        network_id: str | None = None,
        ip_address: str | None = None,
        port_id: str | None = None,
    ) -> Interface:
        """Binds the port to the amphora (its device_id), as Nova's interface_attach does. Its
        device_owner stays Octavia's: Neutron sends Nova events only for compute:* ports.

        Octavia attaches ports only (allowed_address_pairs.py, plug_port; compute_tasks.py,
        AttachPort), so a network alone is refused."""
        if port_id is None:
            raise exceptions.ComputeUnknownException(exc=f"attaching network {network_id} without a port")
        try:
            port = self._network.get_port(port_id)
        except os_exceptions.ResourceNotFound as error:
            raise exceptions.NotFound(resource="Port", id=port_id) from error
        if port.device_id and port.device_id != compute_id:
            raise exceptions.ComputePortInUseException(port=port_id)
        port = self._network.update_port(port_id, device_id=compute_id)
        return Interface(port_id=port.id, net_id=port.network_id, fixed_ips=list(port.fixed_ips))

    def detach_port(self, compute_id: str, port_id: str) -> None:
        """Unbinds the port, as Nova's interface_detach does; a port gone already is detached."""
        try:
            self._network.update_port(port_id, device_id="")
        except os_exceptions.ResourceNotFound:
            LOG.info("Port %s of amphora %s is gone already", port_id, compute_id)

    def validate_flavor(self, flavor_id: str) -> None:
        """Any compute flavor will do: an amphora here runs on none."""

    def validate_availability_zone(self, availability_zone: str) -> None:
        """Any compute zone will do: an amphora here runs in none."""
