"""Neutron: ML2 with no agents, the L3 API, and the external network the stack's floating IPs use.

Only the API runs. With rpc_workers = 0 ML2 neither sets up DHCP scheduling nor starts its agent
notifiers (neutron/plugins/ml2/plugin.py, _setup_dhcp and _start_rpc_notifiers), so nothing waits
for an agent, and the two other server processes have nothing to do:

- neutron-rpc-server serves the agents' RPC (neutron/server/rpc.py; ML2's start_rpc_listeners), and
  there are no agents;
- neutron-periodic-workers runs the plugins' workers (neutron/service.py, start_periodic_workers):
  the agents' health checks, the L3 janitor that removes floating IP ports whose floating IP
  creation failed (neutron/db/l3_db.py, _clean_garbage), and the removal of expired quota
  reservations, which the quota engine already ignores when it counts (neutron/db/quota/api.py,
  get_reservations_for_resources with expired=False).
"""

from __future__ import annotations

import shutil
from typing import TYPE_CHECKING

from .kit import REGION, Kit, write_ini
from .service import Service, gunicorn, keystone_authtoken

if TYPE_CHECKING:
    from openstack.connection import Connection

#: The external network, as the double seeds it (__tests__/doubles/openstack/server.ts).
EXTERNAL_NETWORK = "vlan1066"
EXTERNAL_CIDR = "192.0.2.0/24"
#: The physical network the external network is flat on: a name only, nothing is wired.
PHYSNET = "physnet1"

#: The project quotas of the double (__tests__/doubles/openstack/neutron.ts, NEUTRON_DEFAULT_QUOTAS),
#: equal to Neutron's own defaults (neutron/conf/quota.py, DEFAULT_QUOTA_*); written out so that
#: a change of Neutron's defaults does not go unnoticed. quota_router_route (30) the double lacks.
QUOTAS = {
    "quota_network": 100,
    "quota_subnet": 100,
    "quota_port": 500,
    "quota_router": 10,
    "quota_floatingip": 50,
    "quota_security_group": 10,
    "quota_security_group_rule": 100,
    "quota_rbac_policy": 10,
    # subnetpool has no option of its own: default_quota, unlimited.
    "default_quota": -1,
}


class Neutron(Service):
    name = "neutron"
    databases = ("neutron",)
    catalog = (("network", "neutron", ""),)
    manage_tool = "neutron-db-manage"

    def configure(self, kit: Kit) -> None:
        # The pip install puts the paste file under the venv, not in /etc/neutron. Beside the
        # configuration, oslo.service finds it by its default name (oslo_service/wsgi.py, Loader:
        # conf.find_file), so the deprecated api_paste_config stays unset.
        shutil.copyfile(kit.venv / "etc" / "neutron" / "api-paste.ini", kit.etc("neutron") / "api-paste.ini")
        write_ini(
            self.config_file(kit),
            {
                "DEFAULT": {
                    "use_stderr": True,
                    "debug": False,
                    "core_plugin": "ml2",
                    # Routers and floating IPs; tag, timestamp, revisions and the others come by
                    # default (neutron/plugins/common/constants.py, DEFAULT_SERVICE_PLUGINS).
                    "service_plugins": ["router"],
                    "auth_strategy": "keystone",
                    "transport_url": kit.transport_url,
                    "rpc_workers": 0,
                    "rpc_state_report_workers": 0,
                    # No DHCP agent: no DHCP port, scheduler or provisioning block
                    # (neutron/conf/common.py, enable_traditional_dhcp).
                    "enable_traditional_dhcp": False,
                    "state_path": kit.data("neutron"),
                },
                "database": {"connection": kit.database_url("neutron")},
                "oslo_policy": kit.policy("neutron"),
                "keystone_authtoken": keystone_authtoken(kit, "neutron"),
                # Port events for Nova (network-vif-plugged, -changed), sent only for ports whose
                # device_owner is compute:* (neutron/notifiers/nova.py), as the nova user.
                "nova": {**keystone_authtoken(kit, "nova"), "region_name": REGION, "endpoint_type": "public"},
                # Deleting a network loads the segments plugin whatever service_plugins says
                # (neutron/services/segments/db.py, _delete_segments_for_network); its notifier then
                # asks Placement for the segment's resource provider, and without credentials here
                # fails in a thread of its own with a traceback (plugin.py, NovaSegmentNotifier).
                "placement": {**keystone_authtoken(kit, "neutron"), "endpoint_type": "public"},
                "oslo_concurrency": {"lock_path": kit.tmp / "neutron-locks"},
                "quotas": QUOTAS,
                "ml2": {
                    "type_drivers": ["flat", "vxlan"],
                    # VXLAN needs no agent to allocate a segment, and gives the double's MTU:
                    # 1500 less 50 (neutron/plugins/ml2/drivers/type_vxlan.py, get_mtu).
                    "project_network_types": ["vxlan"],
                    "mechanism_drivers": ["koo_bind_anywhere"],
                    "extension_drivers": ["port_security", "dns"],
                },
                "ml2_type_flat": {"flat_networks": [PHYSNET]},
                # ML2 writes one allocation row per VNI at start: a thousand is plenty.
                "ml2_type_vxlan": {"vni_ranges": ["1001:2000"]},
            },
        )

    def migrate(self, kit: Kit) -> None:
        self.manage(kit, "upgrade", "heads")

    def start(self, kit: Kit) -> None:
        config = self.config_file(kit)
        gunicorn(
            kit,
            "neutron",
            "neutron.wsgi.api:application",
            ["neutron-api"],
            # neutron/server/__init__.py, _get_config_files: ';'-separated names in the directory.
            {"OS_NEUTRON_CONFIG_DIR": str(config.parent), "OS_NEUTRON_CONFIG_FILES": config.name},
        )

    def wait(self, kit: Kit) -> None:
        kit.wait_http("neutron", "neutron-api", "/")

    def seed(self, kit: Kit, admin: Connection) -> None:
        """The external network a public cloud shares with every project: flat, DHCP off."""
        network = admin.network.create_network(
            name=EXTERNAL_NETWORK,
            is_router_external=True,
            is_shared=True,
            provider_network_type="flat",
            provider_physical_network=PHYSNET,
        )
        admin.network.create_subnet(
            network_id=network.id,
            name=f"{EXTERNAL_NETWORK}-subnet",
            cidr=EXTERNAL_CIDR,
            ip_version=4,
            is_dhcp_enabled=False,
        )
