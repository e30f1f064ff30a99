import { Fn, ITerraformDependable, Op, TerraformCount, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { DataOpenstackNetworkingNetworkV2 } from "../../.gen/providers/openstack/data-openstack-networking-network-v2";
import { DataOpenstackNetworkingRouterV2 } from "../../.gen/providers/openstack/data-openstack-networking-router-v2";
import { DataOpenstackNetworkingSubnetIdsV2 } from "../../.gen/providers/openstack/data-openstack-networking-subnet-ids-v2";
import { DataOpenstackNetworkingSubnetV2 } from "../../.gen/providers/openstack/data-openstack-networking-subnet-v2";
import { NetworkingNetworkV2 } from "../../.gen/providers/openstack/networking-network-v2";
import { NetworkingRouterInterfaceV2 } from "../../.gen/providers/openstack/networking-router-interface-v2";
import { NetworkingRouterV2 } from "../../.gen/providers/openstack/networking-router-v2";
import { NetworkingSubnetV2 } from "../../.gen/providers/openstack/networking-subnet-v2";
import { disjoint } from "../../config/rules";
import { HOST_NUMBERS } from "../../facts/hosts";
import { addressOf, MovedToFirstInstance, splat } from "../cdktf-workarounds";
import { dhcpPool, hostAddress, inAllocationPools } from "./address-plan";

export interface PublicSideProps {
  readonly externalNetworkName: string;
  readonly namePrefix: string;
  readonly cidr: string;
  readonly dnsNameservers: string[];
  /** An existing router's ID, or "". */
  readonly routerId: string;
  /** An existing public network's ID, or "". */
  readonly publicNetworkId: string;
}

/** Network's public side, as its attributes of the same names describe it. */
export interface PublicSide {
  readonly externalNetwork: DataOpenstackNetworkingNetworkV2;
  readonly router: NetworkingRouterV2;
  readonly publicNetwork: NetworkingNetworkV2;
  readonly publicSubnet: NetworkingSubnetV2;
  readonly publicRouterInterface: NetworkingRouterInterfaceV2;
  readonly routerId: string;
  readonly publicNetworkId: string;
  readonly publicSubnetId: string;
  readonly floatingIpDependencies: ITerraformDependable[];
  /**
   * 1 or 0, as tokens of locals that read variables only: whether the public network (with its
   * subnet and router interface) and the router are created here.
   */
  readonly creates: { readonly publicNetwork: number; readonly router: number };
}

/**
 * The public side: the external network the floating IPs come from, the router that uplinks to
 * it, and the public network behind the router, each created here or an existing one read and
 * checked at plan time. Adds its resources to `network` (the Network construct), whose addresses
 * they keep.
 */
export function publicSide(network: Construct, props: PublicSideProps): PublicSide {
  const { namePrefix: prefix, cidr: publicCidr, routerId, publicNetworkId } = props;
  const externalNetwork = new DataOpenstackNetworkingNetworkV2(network, "ExternalNetwork", {
    name: props.externalNetworkName,
    external: true,
  });

  // length() < 1, not == "" (Op drops a falsy right operand: constructs/cdktf-workarounds.ts).
  const empty = (value: string) => Op.lt(Fn.lengthOf(value), 1);
  // One local per decision, named for it; each resource's count reads it.
  const counted = (id: string, condition: unknown) => {
    const count = Token.asNumber(new TerraformLocal(network, id, Fn.conditional(condition, 1, 0)).expression);
    return Object.assign(() => TerraformCount.of(count), { number: count });
  };
  const createsPublicNetwork = counted("creates_public_network", empty(publicNetworkId));
  const createsRouter = counted("creates_router", Op.and(empty(routerId), empty(publicNetworkId)));
  const existingRouter = counted("uses_existing_router", Op.not(empty(routerId)));
  const existingPublicNetwork = counted("uses_existing_public_network", Op.not(empty(publicNetworkId)));

  // The external network's subnets, read at plan: Neutron puts no two overlapping subnets on
  // one router (neutron/db/l3_db.py _check_for_dup_router_subnets, "Cidr ... overlaps with
  // cidr ..."), so a new public network that overlaps one fails the router's interface, after
  // most of the stack. Listed, not read by the network's subnet ids: a project may read only
  // its own and shared subnets (neutron/conf/policies/subnet.py get_subnet), and an external
  // network is often not shared; a list leaves out what it may not see, where a read would
  // fail. IPv6 subnets never overlap an IPv4 network (disjoint's try()).
  const externalSubnetIds = new DataOpenstackNetworkingSubnetIdsV2(network, "ExternalSubnetIds", {
    count: createsPublicNetwork(),
    networkId: externalNetwork.id,
  });
  const visibleExternalSubnets = Fn.flatten(splat(externalSubnetIds, "ids"));
  const publicCidrLocal = new TerraformLocal(network, "public_cidr", publicCidr);
  new DataOpenstackNetworkingSubnetV2(network, "ExternalSubnets", {
    count: TerraformCount.of(Token.asNumber(Fn.lengthOf(visibleExternalSubnets))),
    subnetId: `\${flatten(${externalSubnetIds.fqn}[*].ids)[count.index]}`,
    lifecycle: {
      postcondition: [
        {
          condition: `\${${disjoint("self.cidr", addressOf(publicCidrLocal))}}`,
          errorMessage:
            `Invalid public network: public_network_cidr=${publicCidr} overlaps \${self.cidr}, a subnet of ` +
            `external_network_name=${props.externalNetworkName}, and Neutron puts no two overlapping subnets on one router: ` +
            "choose a public_network_cidr outside it.",
        },
      ],
    },
  });

  const router = new NetworkingRouterV2(network, "Router", {
    count: createsRouter(),
    name: `${prefix}-router`,
    adminStateUp: true,
    externalNetworkId: externalNetwork.id,
  });
  // Floating IPs come from the external network through the router's gateway: a router whose
  // gateway is elsewhere (or missing) would fail the first floating IP at apply time. A router
  // that does not exist fails the read with the provider's "No Router found", which names no
  // variable and cannot be caught (no data source lists routers without failing on none): the
  // logical id makes the address it names read `data.openstack_networking_router_v2.router_id[0]`.
  const givenRouter = new DataOpenstackNetworkingRouterV2(network, "ExistingRouter", {
    count: existingRouter(),
    routerId,
    lifecycle: {
      postcondition: [
        {
          condition: `\${self.external_network_id == ${externalNetwork.fqn}.id}`,
          errorMessage:
            `Invalid router: router_id=${routerId} has its external gateway on network "\${self.external_network_id}", not on ` +
            `external_network_name=${props.externalNetworkName} (\${${externalNetwork.fqn}.id}), where the floating IPs come from; ` +
            "give it a gateway there (openstack router set --external-gateway) or use another router.",
        },
      ],
    },
  });
  givenRouter.overrideLogicalId("router_id");
  // Whichever exists: the router created here, or router_id's.
  // The one that exists, chosen by its count's condition: a known condition selects its branch
  // alone, so the value never waits on a resource or data source of the other mode (which
  // `tofu console`, reading the state only, would also leave unknown).
  const either = (id: string, useNew: { number: number }, created: string[], given: string[]) =>
    new TerraformLocal(network, id, Fn.conditional(Op.eq(useNew.number, 1), Fn.one(created), Fn.one(given))).asString;
  const chosenRouterId = either("router_id", createsRouter, splat(router, "id"), splat(givenRouter, "id"));

  const publicNetwork = new NetworkingNetworkV2(network, "PublicNetwork", {
    count: createsPublicNetwork(),
    name: `${prefix}-public`,
    adminStateUp: true,
  });
  const publicSubnet = new NetworkingSubnetV2(network, "PublicSubnet", {
    count: createsPublicNetwork(),
    name: `${prefix}-public`,
    networkId: Token.asString(Fn.one(splat(publicNetwork, "id"))),
    cidr: publicCidr,
    ipVersion: 4,
    gatewayIp: hostAddress(publicCidr, HOST_NUMBERS.publicGateway),
    enableDhcp: true,
    dnsNameservers: props.dnsNameservers,
    allocationPool: [dhcpPool(publicCidr)],
  });
  const publicRouterInterface = new NetworkingRouterInterfaceV2(network, "PublicRouterInterface", {
    count: createsPublicNetwork(),
    routerId: chosenRouterId,
    subnetId: Token.asString(Fn.one(splat(publicSubnet, "id"))),
  });

  // The existing network's subnet, by its CIDR: a list, which may be empty, so that a missing
  // one fails in our words rather than the provider's.
  const givenSubnets = new DataOpenstackNetworkingSubnetIdsV2(network, "ExistingPublicSubnets", {
    count: existingPublicNetwork(),
    networkId: publicNetworkId,
    cidr: publicCidr,
    lifecycle: {
      postcondition: [
        {
          condition: "${length(self.ids) == 1}",
          errorMessage:
            `Invalid public network: public_network_id=${publicNetworkId} has no subnet whose CIDR is public_network_cidr=${publicCidr} ` +
            "(openstack subnet list --network <id>): set public_network_cidr to its subnet's CIDR.",
        },
      ],
    },
  });
  const fixedAddresses = new TerraformLocal(network, "public_fixed_addresses", [
    hostAddress(publicCidr, HOST_NUMBERS.bastionPublic),
    hostAddress(publicCidr, HOST_NUMBERS.kubeMasterPublic),
  ]);
  // The project the credentials are scoped to: only the network's owner may choose a port's
  // fixed address (neutron/conf/policies/port.py, create_port:fixed_ips:ip_address).
  const project = new DataOpenstackIdentityAuthScopeV3(network, "Project", { count: existingPublicNetwork(), name: "kube-on-os-network" });
  const givenSubnet = new DataOpenstackNetworkingSubnetV2(network, "ExistingPublicSubnet", {
    count: existingPublicNetwork(),
    subnetId: Token.asString(Fn.one(Fn.flatten(splat(givenSubnets, "ids")))),
    lifecycle: {
      postcondition: existingSubnetChecks(
        addressOf(fixedAddresses),
        `one(${addressOf(project)}[*].project_id)`,
        publicNetworkId,
        publicCidr,
      ),
    },
  });

  const chosenNetworkId = either("public_network_id", createsPublicNetwork, splat(publicNetwork, "id"), splat(givenSubnet, "network_id"));
  const chosenSubnetId = either("public_subnet_id", createsPublicNetwork, splat(publicSubnet, "id"), splat(givenSubnet, "id"));
  // Before router_id and public_network_id these four had no count, and state holds them at
  // their bare addresses: moved to index 0, an existing deployment keeps them (docs/decisions.md).
  for (const resource of [router, publicNetwork, publicSubnet, publicRouterInterface]) {
    new MovedToFirstInstance(resource);
  }
  return {
    externalNetwork,
    router,
    publicNetwork,
    publicSubnet,
    publicRouterInterface,
    routerId: chosenRouterId,
    publicNetworkId: chosenNetworkId,
    publicSubnetId: chosenSubnetId,
    floatingIpDependencies: [publicRouterInterface],
    creates: { publicNetwork: createsPublicNetwork.number, router: createsRouter.number },
  };
}

/**
 * An existing public subnet must be the project's own, routed (a gateway), and the bastion's and the master's fixed
 * addresses must be neither its gateway nor in its allocation pools, where Neutron may hand them
 * to another port first. `addresses` is a Terraform expression for the two addresses.
 */
function existingSubnetChecks(addresses: string, projectId: string, networkId: string, cidr: string) {
  const subnet = `the subnet ${cidr} of public_network_id=${networkId}`;
  return [
    {
      condition: `\${self.tenant_id == ${projectId}}`,
      errorMessage:
        `Invalid public network: ${subnet} belongs to project \${self.tenant_id}, not to this deployment's (\${${projectId}}): ` +
        "Neutron lets only a network's owner choose the bastion's and the master's fixed addresses on it.",
    },
    {
      condition: '${self.gateway_ip != ""}',
      errorMessage: `Invalid public network: ${subnet} has no gateway: it must be routed to the external network, whose router is its gateway.`,
    },
    {
      condition: `\${alltrue([for address in ${addresses} : address != self.gateway_ip && !${inAllocationPools("address")}])}`,
      errorMessage:
        `Invalid public network: ${subnet} must leave the bastion's and the Kubernetes master's fixed addresses ` +
        `\${join(" and ", ${addresses})} (host numbers ${HOST_NUMBERS.bastionPublic} and ${HOST_NUMBERS.kubeMasterPublic} of public_network_cidr) ` +
        `outside its gateway (\${self.gateway_ip}) and its allocation pools (\${join(", ", [for pool in self.allocation_pools : "\${pool.start}-\${pool.end}"])}): ` +
        "shrink the pools (openstack subnet set --no-allocation-pool --allocation-pool start=...,end=...).",
    },
  ];
}
