import { ref, TerraformCount, TerraformResource, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";
import { NetworkingFloatingipAssociateV2 } from "../.gen/providers/openstack/networking-floatingip-associate-v2";
import { NetworkingFloatingipV2 } from "../.gen/providers/openstack/networking-floatingip-v2";
import { NetworkingNetworkV2 } from "../.gen/providers/openstack/networking-network-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { NetworkingSecgroupV2 } from "../.gen/providers/openstack/networking-secgroup-v2";
import { NetworkingSubnetV2 } from "../.gen/providers/openstack/networking-subnet-v2";
import { Network } from "./network";

/** What every machine construct needs besides its own role. */
export interface MachineProps {
  readonly network: Network;
  /** Glance image every machine boots from. */
  readonly imageId: string;
  /** Domain of the machine's FQDN, which is also its Salt minion id. */
  readonly domain: string;
  /** Nova keypair for the deploy user. @default - none: access comes from cloud-init and Salt */
  readonly keyPair?: string;
}

/** `<host>.<domain>`: hostname, FQDN, OpenStack name and Salt minion id at once. */
export function fqdn(host: string, domain: string): string {
  return `${host}.${domain}`;
}

export interface FixedPortOptions {
  readonly name: string;
  readonly network: NetworkingNetworkV2;
  readonly subnet: NetworkingSubnetV2;
  readonly address: string;
  readonly securityGroups: NetworkingSecgroupV2[];
  /** Other addresses the port may send from (routed or pod traffic). @default none */
  readonly allowedAddressPairs?: string[];
  /** One port per index when the port belongs to a counted resource. */
  readonly count?: TerraformCount;
}

/** A port with one fixed address: machines never take a DHCP address, so addresses are stable. */
export function fixedPort(scope: Construct, id: string, options: FixedPortOptions): NetworkingPortV2 {
  return new NetworkingPortV2(scope, id, {
    count: options.count,
    name: options.name,
    networkId: options.network.id,
    adminStateUp: true,
    fixedIp: [{ subnetId: options.subnet.id, ipAddress: options.address }],
    securityGroupIds: options.securityGroups.map((group) => group.id),
    allowedAddressPairs: (options.allowedAddressPairs ?? []).map((ipAddress) => ({ ipAddress })),
  });
}

/**
 * A floating IP from the external network, associated with a public port. The association waits
 * for the router interface: Neutron refuses a floating IP for a subnet the router cannot reach.
 */
export function floatingIpFor(scope: Construct, id: string, network: Network, port: NetworkingPortV2): NetworkingFloatingipV2 {
  const floatingIp = new NetworkingFloatingipV2(scope, id, { pool: network.externalNetwork.name });
  new NetworkingFloatingipAssociateV2(scope, `${id}Association`, {
    floatingIp: floatingIp.address,
    portId: port.id,
    dependsOn: [network.publicRouterInterface],
  });
  return floatingIp;
}

/**
 * `<resource>[count.index].<attribute>` for a counted resource, written literally: cdktf would
 * nest `${count.index}` inside the reference, which Terraform rejects.
 */
export function atCountIndex(resource: { fqn: string }, attribute: string): string {
  return Token.asString(`\${${resource.fqn}[count.index].${attribute}}`);
}

/**
 * `<resource>[*].<attribute>` of a counted resource as a reference that nests inside other
 * expressions (`one(...)`, `concat(...)`), where an interpolated string would not.
 */
export function splat(resource: TerraformResource, attribute: string): string[] {
  return Token.asList(ref(`${resource.terraformResourceType}.${resource.friendlyUniqueId}[*].${attribute}`, TerraformStack.of(resource)));
}
