"""An ML2 mechanism driver for a cloud with no agents: it binds every port, on any host.

ML2 binds a port (sets binding:vif_type) only when a mechanism driver calls
PortContext.set_binding from bind_port (neutron_lib/plugins/ml2/api.py, MechanismDriver.bind_port).
Neutron's own drivers bind only where their agent reports in (openvswitch, linuxbridge) or where
OVN runs, so without a data plane every port Nova binds would be binding_failed. This driver stands
in for the agent: the binding is what an Open vSwitch agent's would be, and the port goes ACTIVE at
once, as it would once the agent had wired it. An ACTIVE port is a VIF Nova does not wait for
(nova/network/neutron.py, _build_vif_model sets `active`; the virt drivers wait for the
network-vif-plugged event of inactive VIFs only), so no agent's event is ever missed.
"""

from __future__ import annotations

from neutron_lib import constants
from neutron_lib.api.definitions import portbindings
from neutron_lib.plugins import directory
from neutron_lib.plugins.ml2 import api

# What Nova reads of an OVS binding's details (nova/network/model.py, VIF_DETAILS_*): security
# groups filter the port, which is plugged straight into the integration bridge.
VIF_DETAILS = {
    portbindings.CAP_PORT_FILTER: True,
    portbindings.OVS_HYBRID_PLUG: False,
    portbindings.VIF_DETAILS_CONNECTIVITY: portbindings.CONNECTIVITY_L2,
}


class BindAnywhereMechanismDriver(api.MechanismDriver):
    """Binds any port, of any VNIC type, on any host, to the first segment offered."""

    def initialize(self) -> None:
        """Nothing to connect to: there is no controller and there are no agents."""

    def bind_port(self, context: api.PortContext) -> None:
        # segments_to_bind holds the network's static segments, one for flat and VXLAN networks.
        segments = context.segments_to_bind
        if not segments:
            return
        context.set_binding(segments[0][api.ID], portbindings.VIF_TYPE_OVS, VIF_DETAILS, status=status_of(context))

    def update_port_postcommit(self, context: api.PortContext) -> None:
        # An agent reports a bound port again when its admin state changes (update_device_up or
        # _down); ML2's own RPC handler does the same with update_port_status, which calls this
        # method again, with the admin state unchanged.
        if context.vif_type != portbindings.VIF_TYPE_OVS:
            return
        if context.current["admin_state_up"] == context.original["admin_state_up"]:
            return
        directory.get_plugin().update_port_status(
            context.plugin_context, context.current["id"], status_of(context), context.host
        )


def status_of(context: api.PortContext) -> str:
    """An agent wires a port that is administratively down too, but reports it DOWN."""
    return constants.PORT_STATUS_ACTIVE if context.current["admin_state_up"] else constants.PORT_STATUS_DOWN
