import { Fn, Op, TerraformCount, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { DataOpenstackNetworkingPortIdsV2 } from "../../.gen/providers/openstack/data-openstack-networking-port-ids-v2";
import { DataOpenstackNetworkingPortV2 } from "../../.gen/providers/openstack/data-openstack-networking-port-v2";
import { DataOpenstackNetworkingSubnetIdsV2 } from "../../.gen/providers/openstack/data-openstack-networking-subnet-ids-v2";
import { DataOpenstackNetworkingSubnetV2 } from "../../.gen/providers/openstack/data-openstack-networking-subnet-v2";
import { NetworkingNetworkV2 } from "../../.gen/providers/openstack/networking-network-v2";
import { NetworkingSubnetV2 } from "../../.gen/providers/openstack/networking-subnet-v2";
import { DHCP_RESERVE } from "../../config/parameters";
import { HOST_NUMBERS } from "../../facts/hosts";
import { addressOf, MovedToFirstInstance, splat } from "../cdktf-workarounds";
import { addressNumber, dhcpPool, hostAddress, staticHostsBelowPool } from "./address-plan";

export interface PrivateNetworkProps {
  readonly namePrefix: string;
  readonly cidr: string;
  readonly dnsNameservers: string[];
  /** The highest host number a fixed address takes (a token when it follows a plan-time value). */
  readonly lastStaticHost: number;
  /** An existing network's ID, whose subnet with CIDR `cidr` is the private subnet, or "". */
  readonly existingNetworkId: string;
  /** The addresses DHCP must have left for the pools' workers, and to spare (a token). @default DHCP_RESERVE */
  readonly dhcpAddresses?: number;
  /** The name of the port that takes the gateway's address: the bastion's private port. */
  readonly gatewayPortName: string;
}

export interface PrivateNetwork {
  /** The network created here: count 0 with `existingNetworkId`. Read `networkId`. */
  readonly network: NetworkingNetworkV2;
  /** The subnet created here: count 0 with `existingNetworkId`. Read `subnetId`. */
  readonly subnet: NetworkingSubnetV2;
  /** The private network, new or `existingNetworkId`. */
  readonly networkId: string;
  /** The private subnet, new or the existing network's subnet with CIDR `cidr`. */
  readonly subnetId: string;
  /** 1 or 0, a token of a local that reads variables only: whether the network and subnet are created here. */
  readonly creates: number;
}

/**
 * The private network, which every machine is on. It is not attached to the router: its gateway
 * is the bastion's private port, which masquerades outbound traffic through the bastion's public
 * port. The project's own network may stand in (`existingNetworkId`, issue 39), read and checked
 * at plan time against the same layout. Adds its resources to `network` (the Network construct),
 * whose addresses they keep.
 */
export function privateNetwork(network: Construct, props: PrivateNetworkProps): PrivateNetwork {
  const { namePrefix: prefix, cidr, existingNetworkId } = props;
  // length() < 1, not == "" (Op drops a falsy right operand: constructs/cdktf-workarounds.ts).
  const creates = Token.asNumber(
    new TerraformLocal(network, "creates_private_network", Fn.conditional(Op.lt(Fn.lengthOf(existingNetworkId), 1), 1, 0)).expression,
  );
  const usesExisting = TerraformCount.of(Token.asNumber(Op.sub(1, creates)));

  const privateNetwork = new NetworkingNetworkV2(network, "PrivateNetwork", {
    count: TerraformCount.of(creates),
    name: `${prefix}-private`,
    adminStateUp: true,
  });
  const subnet = new NetworkingSubnetV2(network, "PrivateSubnet", {
    count: TerraformCount.of(creates),
    name: `${prefix}-private`,
    networkId: Token.asString(Fn.one(splat(privateNetwork, "id"))),
    cidr,
    ipVersion: 4,
    gatewayIp: hostAddress(cidr, HOST_NUMBERS.bastionPrivate),
    enableDhcp: true,
    dnsNameservers: props.dnsNameservers,
    allocationPool: [dhcpPool(cidr)],
    lifecycle: { precondition: [staticHostsBelowPool(cidr, props.lastStaticHost)] },
  });

  // The existing network's subnet, by its CIDR: a list, which may be empty, so that a missing
  // one fails in our words rather than the provider's.
  const givenSubnets = new DataOpenstackNetworkingSubnetIdsV2(network, "ExistingPrivateSubnets", {
    count: usesExisting,
    networkId: existingNetworkId,
    cidr,
    lifecycle: {
      postcondition: [
        {
          condition: "${length(self.ids) == 1}",
          errorMessage:
            `Invalid private network: private_network_id=${existingNetworkId} has no subnet whose CIDR is private_network_cidr=${cidr} ` +
            "(openstack subnet list --network <id>): set private_network_cidr to its subnet's CIDR.",
        },
      ],
    },
  });
  // The project the credentials are scoped to: only a network's owner may choose a port's fixed
  // address (neutron/conf/policies/port.py, create_port:fixed_ips:ip_address).
  const project = new DataOpenstackIdentityAuthScopeV3(network, "PrivateProject", { count: usesExisting, name: "kube-on-os-private" });
  const layout = new TerraformLocal(network, "private_layout", {
    gateway: hostAddress(cidr, HOST_NUMBERS.bastionPrivate),
    lastFixed: hostAddress(cidr, props.lastStaticHost),
    dhcpAddresses: props.dhcpAddresses ?? DHCP_RESERVE,
  });
  const givenSubnet = new DataOpenstackNetworkingSubnetV2(network, "ExistingPrivateSubnet", {
    count: usesExisting,
    subnetId: Token.asString(Fn.one(Fn.flatten(splat(givenSubnets, "ids")))),
    lifecycle: {
      postcondition: existingSubnetChecks(addressOf(layout), `one(${addressOf(project)}[*].project_id)`, existingNetworkId, cidr),
    },
  });

  // The gateway's address is the bastion's private port's: a port that holds it already (a
  // router's interface, most often) must be this deployment's bastion's, or the port fails.
  const gatewayHolders = new DataOpenstackNetworkingPortIdsV2(network, "PrivateGatewayHolders", {
    count: usesExisting,
    networkId: existingNetworkId,
    fixedIp: `\${${addressOf(layout)}.gateway}`,
  });
  const gatewayPortName = addressOf(new TerraformLocal(network, "private_gateway_port_name", props.gatewayPortName));
  new DataOpenstackNetworkingPortV2(network, "PrivateGatewayHolder", {
    count: TerraformCount.of(Token.asNumber(`\${length(flatten(${addressOf(gatewayHolders)}[*].ids))}`)),
    portId: `\${flatten(${addressOf(gatewayHolders)}[*].ids)[count.index]}`,
    lifecycle: {
      postcondition: [
        {
          condition: `\${self.name == ${gatewayPortName}}`,
          errorMessage:
            `Invalid private network: private_network_id=${existingNetworkId}'s gateway address \${${addressOf(layout)}.gateway} is held by port ` +
            `\${self.id} ("\${self.name}", device owner "\${self.device_owner}"), and the bastion's private port must take it: ` +
            "free it (openstack router remove subnet, or openstack port delete).",
        },
      ],
    },
  });

  // The one that exists, chosen by its count's condition (as public-side.ts chooses).
  const either = (id: string, created: string[], given: string[]) =>
    new TerraformLocal(network, id, Fn.conditional(Op.eq(creates, 1), Fn.one(created), Fn.one(given))).asString;
  // Before private_network_id these two had no count, and state holds them at their bare
  // addresses: moved to index 0, an existing deployment keeps them.
  for (const resource of [privateNetwork, subnet]) new MovedToFirstInstance(resource);
  return {
    network: privateNetwork,
    subnet,
    networkId: either("private_network_id", splat(privateNetwork, "id"), splat(givenSubnet, "network_id")),
    subnetId: either("private_subnet_id", splat(subnet, "id"), splat(givenSubnet, "id")),
    creates,
  };
}

/**
 * An existing private subnet must be the project's own (the machines' ports take fixed addresses
 * on it), hand out addresses by DHCP (the pools' workers take theirs so), have the bastion's
 * private address as its gateway (the bastion routes and masquerades for the private network),
 * and keep its allocation pools above the fixed addresses, where Neutron could hand one to another
 * port first. `layout` is a Terraform expression: the gateway's and the last fixed address.
 */
function existingSubnetChecks(layout: string, projectId: string, networkId: string, cidr: string) {
  const subnet = `the subnet ${cidr} of private_network_id=${networkId}`;
  return [
    {
      condition: `\${self.tenant_id == ${projectId}}`,
      errorMessage:
        `Invalid private network: ${subnet} belongs to project \${self.tenant_id}, not to this deployment's (\${${projectId}}): ` +
        "Neutron lets only a network's owner choose the machines' fixed addresses on it.",
    },
    {
      condition: "${self.enable_dhcp}",
      errorMessage: `Invalid private network: ${subnet} has DHCP off: the machines take their addresses by DHCP; turn it on (openstack subnet set --dhcp).`,
    },
    {
      condition: `\${self.gateway_ip == ${layout}.gateway}`,
      errorMessage:
        `Invalid private network: ${subnet} has gateway "\${self.gateway_ip}", not the bastion's private address \${${layout}.gateway} ` +
        `(host number ${HOST_NUMBERS.bastionPrivate} of private_network_cidr), which routes and masquerades for the private network: ` +
        `set it (openstack subnet set --gateway \${${layout}.gateway}), with no port holding that address.`,
    },
    {
      condition: `\${alltrue([for pool in self.allocation_pools : ${addressNumber("pool.start")} > ${addressNumber(`${layout}.lastFixed`)}])}`,
      errorMessage:
        `Invalid private network: ${subnet} must keep its allocation pools ` +
        `(\${join(", ", [for pool in self.allocation_pools : "\${pool.start}-\${pool.end}"])}) above the machines' fixed addresses, ` +
        `which reach \${${layout}.lastFixed}: shrink the pools (openstack subnet set --no-allocation-pool --allocation-pool start=...,end=...).`,
    },
    {
      condition: `\${sum(concat([0], [for pool in self.allocation_pools : ${addressNumber("pool.end")} - ${addressNumber("pool.start")} + 1])) >= ${layout}.dhcpAddresses}`,
      errorMessage:
        `Invalid private network: ${subnet} hands out \${sum(concat([0], [for pool in self.allocation_pools : ${addressNumber("pool.end")} - ${addressNumber("pool.start")} + 1]))} ` +
        `addresses by DHCP, fewer than \${${layout}.dhcpAddresses} (one per node pool worker, and ${DHCP_RESERVE} to spare): widen its pools or use fewer pool workers.`,
    },
  ];
}
