import { Fn, ITerraformDependable, Op, TerraformCount, TerraformIterator, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { DataOpenstackNetworkingNetworkV2 } from "../.gen/providers/openstack/data-openstack-networking-network-v2";
import { DataOpenstackNetworkingRouterV2 } from "../.gen/providers/openstack/data-openstack-networking-router-v2";
import { DataOpenstackNetworkingSubnetIdsV2 } from "../.gen/providers/openstack/data-openstack-networking-subnet-ids-v2";
import { DataOpenstackNetworkingSubnetV2 } from "../.gen/providers/openstack/data-openstack-networking-subnet-v2";
import { NetworkingNetworkV2 } from "../.gen/providers/openstack/networking-network-v2";
import { NetworkingRouterInterfaceV2 } from "../.gen/providers/openstack/networking-router-interface-v2";
import { NetworkingRouterV2 } from "../.gen/providers/openstack/networking-router-v2";
import { NetworkingSecgroupRuleV2 } from "../.gen/providers/openstack/networking-secgroup-rule-v2";
import { NetworkingSecgroupV2 } from "../.gen/providers/openstack/networking-secgroup-v2";
import { NetworkingSubnetV2 } from "../.gen/providers/openstack/networking-subnet-v2";
import { disjoint, UUID_PATTERN } from "../config/rules";
import { parseIpv4Network } from "../facts/cidr";
import { Arithmetic, firstDhcpHost, LAST_DHCP_HOST } from "../facts/dhcp-range";
import { HOST_NUMBERS } from "../facts/hosts";
import { addressOf, MovedToFirstInstance, splat } from "./cdktf-workarounds";

export interface NetworkProps {
  /** Name of the external network the router uplinks to; looked up, not created. */
  readonly externalNetworkName: string;
  /** Prefix of every OpenStack resource name, so two deployments in one project never clash. */
  readonly namePrefix: string;
  /** @default Network.DEFAULT_PUBLIC_CIDR */
  readonly publicCidr?: string;
  /** @default Network.DEFAULT_PRIVATE_CIDR */
  readonly privateCidr?: string;
  /** @default Network.DEFAULT_DNS_NAMESERVERS */
  readonly dnsNameservers?: string[];
  /**
   * ID of an existing router for the public subnet's interface, instead of a new one; its external
   * gateway must be on the external network (checked at plan time). @default "" - create a router
   */
  readonly routerId?: string;
  /**
   * ID of an existing, already routed network whose subnet with CIDR `publicCidr` is the public
   * subnet; no public network, subnet, router or router interface is created then. Not with
   * `routerId`. @default "" - create the public network, its subnet and a router
   */
  readonly publicNetworkId?: string;
  /** Sources allowed to SSH to the bastion. @default ["0.0.0.0/0"] */
  readonly sshAllowedCidrs?: string[];
  /** Sources allowed to reach the Kubernetes API on the master. @default ["0.0.0.0/0"] */
  readonly apiAllowedCidrs?: string[];
  /**
   * The highest host number a fixed address takes on the private network (a token when it
   * follows a plan-time value). The plan fails if it reaches the DHCP pool. @default the master's
   */
  readonly lastPrivateStaticHost?: number;
}

/** The security groups that the machines' ports attach to. */
export interface NetworkSecurityGroups {
  /** SSH from `sshAllowedCidrs`; on the bastion's public port. */
  readonly bastion: NetworkingSecgroupV2;
  /** Kubernetes API from `apiAllowedCidrs`, plus HTTP(S) ingress; on the master's public port. */
  readonly kubeApi: NetworkingSecgroupV2;
  /** Everything between members; on every private port. */
  readonly internal: NetworkingSecgroupV2;
  /** Salt's publish and return ports from the private network; on the Salt master. */
  readonly saltMaster: NetworkingSecgroupV2;
  /**
   * What load balancers on the private network reach on the Kubernetes nodes (the API
   * load balancer's members, LoadBalancer Services' NodePorts); on every Kubernetes node's
   * private port, and no other machine's. Its rules come with those features.
   */
  readonly kubeNodes: NetworkingSecgroupV2;
}

/**
 * The wiki's network layout: a router on the external network, a public network that reaches the
 * internet through it, and a private network whose gateway is the bastion (which NATs for it).
 * The public side may be the project's own instead: an existing router (`routerId`) for a new
 * public subnet, or an existing routed network (`publicNetworkId`). Either is read and checked at
 * plan time; the private side is always created here.
 */
export class Network extends Construct {
  static readonly DEFAULT_PUBLIC_CIDR = "10.0.0.0/16";
  static readonly DEFAULT_PRIVATE_CIDR = "10.1.0.0/16";
  static readonly DEFAULT_DNS_NAMESERVERS = ["1.1.1.1", "1.0.0.1"];
  static readonly KUBE_API_PORT = 16443;
  static readonly SALT_PORTS = { publish: 4505, ret: 4506 } as const;

  readonly externalNetwork: DataOpenstackNetworkingNetworkV2;
  /** The router this network creates: count 0 with `routerId` or `publicNetworkId`. Read `routerId`. */
  readonly router: NetworkingRouterV2;
  /** The public network this network creates: count 0 with `publicNetworkId`. Read `publicNetworkId`. */
  readonly publicNetwork: NetworkingNetworkV2;
  /** The public subnet this network creates: count 0 with `publicNetworkId`. Read `publicSubnetId`. */
  readonly publicSubnet: NetworkingSubnetV2;
  /** The public subnet's link to the router: count 0 with `publicNetworkId`. */
  readonly publicRouterInterface: NetworkingRouterInterfaceV2;
  /** The router the public subnet is attached to, new or `routerId`'s; null with `publicNetworkId`. */
  readonly routerId: string;
  /** The public network, new or `publicNetworkId`. */
  readonly publicNetworkId: string;
  /** The public subnet, new or the existing network's subnet with CIDR `publicCidr`. */
  readonly publicSubnetId: string;
  /**
   * What a floating IP on the public subnet (or a VIP that gets one) waits for: the subnet's link
   * to the router, when this network makes it. Neutron refuses a floating IP for a subnet no router
   * connects to the external network.
   */
  readonly floatingIpDependencies: ITerraformDependable[];
  /**
   * The Neutron resources this network creates, as its project's quotas count them (tokens):
   * networks, subnets, routers, and ports besides the machines' (the router's interface and one
   * DHCP port per network with a DHCP-enabled subnet).
   */
  readonly created: { readonly networks: number; readonly subnets: number; readonly routers: number; readonly ports: number };
  readonly privateNetwork: NetworkingNetworkV2;
  readonly privateSubnet: NetworkingSubnetV2;
  readonly securityGroups: NetworkSecurityGroups;
  /** The groups of every Kubernetes node's private port, whatever its pool: internal and kubeNodes. */
  readonly kubeNodePrivateGroups: NetworkingSecgroupV2[];
  /**
   * The security group rules this network creates, counting the two egress rules (IPv4, IPv6)
   * Neutron adds to every new group from its default rule template (neutron/db/securitygroups_db.py,
   * create_security_group, _create_rules_from_template).
   */
  readonly securityGroupRuleCount: number;
  readonly publicCidr: string;
  readonly privateCidr: string;

  constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id);
    const publicCidr = props.publicCidr ?? Network.DEFAULT_PUBLIC_CIDR;
    const privateCidr = props.privateCidr ?? Network.DEFAULT_PRIVATE_CIDR;
    const dnsNameservers = props.dnsNameservers ?? Network.DEFAULT_DNS_NAMESERVERS;
    const sshAllowedCidrs = props.sshAllowedCidrs ?? ["0.0.0.0/0"];
    const apiAllowedCidrs = props.apiAllowedCidrs ?? ["0.0.0.0/0"];
    const prefix = props.namePrefix;

    requireName("externalNetworkName", props.externalNetworkName);
    requireName("namePrefix", prefix);
    for (const [prop, cidr] of [
      ["publicCidr", publicCidr],
      ["privateCidr", privateCidr],
    ] as const) {
      if (!Token.isUnresolved(cidr)) {
        const parsed = parseIpv4Network(cidr);
        if (typeof parsed === "string") throw new Error(`Network: ${prop} "${cidr}" ${parsed}`);
      }
    }
    this.publicCidr = publicCidr;
    this.privateCidr = privateCidr;
    const routerId = props.routerId ?? "";
    const publicNetworkId = props.publicNetworkId ?? "";
    for (const [prop, id] of [
      ["routerId", routerId],
      ["publicNetworkId", publicNetworkId],
    ] as const) {
      if (!Token.isUnresolved(id) && id !== "" && !new RegExp(UUID_PATTERN).test(id)) {
        throw new Error(`Network: ${prop} must be empty or a Neutron ID, a lower-case UUID (got "${id}")`);
      }
    }
    if (!Token.isUnresolved(routerId) && !Token.isUnresolved(publicNetworkId) && routerId !== "" && publicNetworkId !== "") {
      throw new Error(`Network: routerId must be empty with publicNetworkId, an already routed network (got "${routerId}")`);
    }

    this.externalNetwork = new DataOpenstackNetworkingNetworkV2(this, "ExternalNetwork", {
      name: props.externalNetworkName,
      external: true,
    });

    const empty = (value: string) => Op.lt(Fn.lengthOf(value), 1);
    // One local per decision, named for it; each resource's count reads it.
    const counted = (id: string, condition: unknown) => {
      const count = Token.asNumber(new TerraformLocal(this, id, Fn.conditional(condition, 1, 0)).expression);
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
    const externalSubnetIds = new DataOpenstackNetworkingSubnetIdsV2(this, "ExternalSubnetIds", {
      count: createsPublicNetwork(),
      networkId: this.externalNetwork.id,
    });
    const visibleExternalSubnets = Fn.flatten(splat(externalSubnetIds, "ids"));
    const publicCidrLocal = new TerraformLocal(this, "public_cidr", publicCidr);
    new DataOpenstackNetworkingSubnetV2(this, "ExternalSubnets", {
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

    this.router = new NetworkingRouterV2(this, "Router", {
      count: createsRouter(),
      name: `${prefix}-router`,
      adminStateUp: true,
      externalNetworkId: this.externalNetwork.id,
    });
    // Floating IPs come from the external network through the router's gateway: a router whose
    // gateway is elsewhere (or missing) would fail the first floating IP at apply time. A router
    // that does not exist fails the read with the provider's "No Router found", which names no
    // variable and cannot be caught (no data source lists routers without failing on none): the
    // logical id makes the address it names read `data.openstack_networking_router_v2.router_id[0]`.
    const givenRouter = new DataOpenstackNetworkingRouterV2(this, "ExistingRouter", {
      count: existingRouter(),
      routerId,
      lifecycle: {
        postcondition: [
          {
            condition: `\${self.external_network_id == ${this.externalNetwork.fqn}.id}`,
            errorMessage:
              `Invalid router: router_id=${routerId} has its external gateway on network "\${self.external_network_id}", not on ` +
              `external_network_name=${props.externalNetworkName} (\${${this.externalNetwork.fqn}.id}), where the floating IPs come from; ` +
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
      new TerraformLocal(this, id, Fn.conditional(Op.eq(useNew.number, 1), Fn.one(created), Fn.one(given))).asString;
    this.routerId = either("router_id", createsRouter, splat(this.router, "id"), splat(givenRouter, "id"));

    this.publicNetwork = new NetworkingNetworkV2(this, "PublicNetwork", {
      count: createsPublicNetwork(),
      name: `${prefix}-public`,
      adminStateUp: true,
    });
    this.publicSubnet = new NetworkingSubnetV2(this, "PublicSubnet", {
      count: createsPublicNetwork(),
      name: `${prefix}-public`,
      networkId: Token.asString(Fn.one(splat(this.publicNetwork, "id"))),
      cidr: publicCidr,
      ipVersion: 4,
      gatewayIp: hostAddress(publicCidr, HOST_NUMBERS.publicGateway),
      enableDhcp: true,
      dnsNameservers,
      allocationPool: [dhcpPool(publicCidr)],
    });
    this.publicRouterInterface = new NetworkingRouterInterfaceV2(this, "PublicRouterInterface", {
      count: createsPublicNetwork(),
      routerId: this.routerId,
      subnetId: Token.asString(Fn.one(splat(this.publicSubnet, "id"))),
    });

    // The existing network's subnet, by its CIDR: a list, which may be empty, so that a missing
    // one fails in our words rather than the provider's.
    const givenSubnets = new DataOpenstackNetworkingSubnetIdsV2(this, "ExistingPublicSubnets", {
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
    const fixedAddresses = new TerraformLocal(this, "public_fixed_addresses", [
      hostAddress(publicCidr, HOST_NUMBERS.bastionPublic),
      hostAddress(publicCidr, HOST_NUMBERS.kubeMasterPublic),
    ]);
    // The project the credentials are scoped to: only the network's owner may choose a port's
    // fixed address (neutron/conf/policies/port.py, create_port:fixed_ips:ip_address).
    const project = new DataOpenstackIdentityAuthScopeV3(this, "Project", { count: existingPublicNetwork(), name: "kube-on-os-network" });
    const givenSubnet = new DataOpenstackNetworkingSubnetV2(this, "ExistingPublicSubnet", {
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

    this.publicNetworkId = either(
      "public_network_id",
      createsPublicNetwork,
      splat(this.publicNetwork, "id"),
      splat(givenSubnet, "network_id"),
    );
    this.publicSubnetId = either("public_subnet_id", createsPublicNetwork, splat(this.publicSubnet, "id"), splat(givenSubnet, "id"));
    this.floatingIpDependencies = [this.publicRouterInterface];
    // Before router_id and public_network_id these four had no count, and state holds them at
    // their bare addresses: moved to index 0, an existing deployment keeps them (docs/decisions.md).
    for (const resource of [this.router, this.publicNetwork, this.publicSubnet, this.publicRouterInterface]) {
      new MovedToFirstInstance(resource);
    }
    // From the counts' locals, which read variables only: a reference to the resources would
    // make the quota data sources wait for them, and the quota check happen at apply time.
    const newPublic = createsPublicNetwork.number;
    this.created = {
      networks: Token.asNumber(Op.add(1, newPublic)),
      subnets: Token.asNumber(Op.add(1, newPublic)),
      routers: createsRouter.number,
      // The private network's DHCP port; the public one's and the router's interface when new.
      ports: Token.asNumber(Op.add(1, Op.mul(2, newPublic))),
    };

    // The private network is not attached to the router: its gateway is the bastion's private
    // port, which masquerades outbound traffic through the bastion's public port.
    this.privateNetwork = new NetworkingNetworkV2(this, "PrivateNetwork", { name: `${prefix}-private`, adminStateUp: true });
    this.privateSubnet = new NetworkingSubnetV2(this, "PrivateSubnet", {
      name: `${prefix}-private`,
      networkId: this.privateNetwork.id,
      cidr: privateCidr,
      ipVersion: 4,
      gatewayIp: hostAddress(privateCidr, HOST_NUMBERS.bastionPrivate),
      enableDhcp: true,
      dnsNameservers,
      allocationPool: [dhcpPool(privateCidr)],
      lifecycle: { precondition: [staticHostsBelowPool(privateCidr, props.lastPrivateStaticHost ?? HOST_NUMBERS.kubeMasterPrivate)] },
    });

    this.securityGroups = {
      bastion: this.securityGroup("BastionSecurityGroup", `${prefix}-bastion`, "SSH to the bastion"),
      kubeApi: this.securityGroup("KubeApiSecurityGroup", `${prefix}-kube-api`, "Kubernetes API and ingress on the master"),
      internal: this.securityGroup("InternalSecurityGroup", `${prefix}-internal`, "All traffic between the cluster's machines"),
      saltMaster: this.securityGroup("SaltMasterSecurityGroup", `${prefix}-salt-master`, "Salt publish and return ports"),
      kubeNodes: this.securityGroup(
        "KubeNodesSecurityGroup",
        `${prefix}-kube-nodes`,
        "Kubernetes API and NodePorts on the Kubernetes nodes from load balancers on the private network",
      ),
    };
    this.kubeNodePrivateGroups = [this.securityGroups.internal, this.securityGroups.kubeNodes];

    const sshSources = TerraformIterator.fromList(sshAllowedCidrs);
    new NetworkingSecgroupRuleV2(this, "BastionSshRule", {
      forEach: sshSources,
      securityGroupId: this.securityGroups.bastion.id,
      description: "SSH from an allowed network",
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "tcp",
      portRangeMin: 22,
      portRangeMax: 22,
      remoteIpPrefix: sshSources.value,
    });

    const apiSources = TerraformIterator.fromList(apiAllowedCidrs);
    new NetworkingSecgroupRuleV2(this, "KubeApiRule", {
      forEach: apiSources,
      securityGroupId: this.securityGroups.kubeApi.id,
      description: "Kubernetes API from an allowed network",
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "tcp",
      portRangeMin: Network.KUBE_API_PORT,
      portRangeMax: Network.KUBE_API_PORT,
      remoteIpPrefix: apiSources.value,
    });
    for (const [id, port] of [
      ["KubeHttpRule", 80],
      ["KubeHttpsRule", 443],
    ] as const) {
      new NetworkingSecgroupRuleV2(this, id, {
        securityGroupId: this.securityGroups.kubeApi.id,
        description: `Ingress controller port ${port} from anywhere`,
        direction: "ingress",
        ethertype: "IPv4",
        protocol: "tcp",
        portRangeMin: port,
        portRangeMax: port,
        remoteIpPrefix: "0.0.0.0/0",
      });
    }

    new NetworkingSecgroupRuleV2(this, "InternalRule", {
      securityGroupId: this.securityGroups.internal.id,
      description: "Any protocol from another member of this group",
      direction: "ingress",
      ethertype: "IPv4",
      remoteGroupId: this.securityGroups.internal.id,
    });

    const groups = Object.keys(this.securityGroups).length;
    // SSH and API rules per allowed network; HTTP, HTTPS, internal and Salt once each.
    this.securityGroupRuleCount = Token.asNumber(
      Op.add(Op.add(Fn.lengthOf(sshAllowedCidrs), Fn.lengthOf(apiAllowedCidrs)), 4 + 2 * groups),
    );
    new NetworkingSecgroupRuleV2(this, "SaltMasterRule", {
      securityGroupId: this.securityGroups.saltMaster.id,
      description: "Salt publish and return ports from the private network only",
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "tcp",
      portRangeMin: Network.SALT_PORTS.publish,
      portRangeMax: Network.SALT_PORTS.ret,
      remoteIpPrefix: privateCidr,
    });
  }

  private securityGroup(id: string, name: string, description: string): NetworkingSecgroupV2 {
    return new NetworkingSecgroupV2(this, id, { name, description });
  }
}

function requireName(prop: string, value: string): void {
  if (!Token.isUnresolved(value) && value.trim() === "") {
    throw new Error(`Network: ${prop} must not be empty (got "${value}")`);
  }
}

/** cidrhost() evaluated by Terraform, so a plan-time CIDR override moves every address with it. */
function hostAddress(cidr: string, host: number): string {
  return Fn.cidrhost(cidr, host);
}

/** The DHCP range's arithmetic (facts/dhcp-range.ts) as cdktf tokens, which Terraform evaluates at plan time. */
const IN_TOKENS: Arithmetic<number> = {
  prefixLength: (cidr) => Fn.tonumber(Fn.element(Fn.split("/", cidr), 1)),
  pow: (base, exponent) => Fn.pow(base, exponent),
  sub: (minuend, subtrahend) => Op.sub(minuend, subtrahend),
  div: (dividend, divisor) => Token.asNumber(Op.div(dividend, divisor)),
};

/**
 * Checked at plan time, whatever the plan-time values: a fixed address inside the pool could be
 * taken by DHCP first (Neutron hands out pool addresses at random), and its port would fail.
 */
function staticHostsBelowPool(cidr: string, lastHost: number) {
  const poolStart = firstDhcpHost(cidr, IN_TOKENS);
  return {
    condition: Op.lt(lastHost, poolStart),
    errorMessage:
      `Invalid network layout: fixed private addresses reach host number ${lastHost}, inside the DHCP pool of ` +
      `private_network_cidr=${cidr} (its upper half, from host number ${poolStart}); use a larger private network or fewer num_kube_nodes.`,
  };
}

/** DHCP hands out the upper half of the network only (facts/dhcp-range.ts); the lower half is for static hosts. */
function dhcpPool(cidr: string) {
  return { start: Fn.cidrhost(cidr, firstDhcpHost(cidr, IN_TOKENS)), end: Fn.cidrhost(cidr, LAST_DHCP_HOST) };
}

/** A dotted IPv4 address as a number, in Terraform, so that addresses compare in order. */
function addressNumber(address: string): string {
  return `sum([for i, octet in split(".", ${address}) : tonumber(octet) * pow(256, 3 - i)])`;
}

/**
 * An existing public subnet must be the project's own, routed (a gateway), and the bastion's and the master's fixed
 * addresses must be neither its gateway nor in its allocation pools, where Neutron may hand them
 * to another port first. `addresses` is a Terraform expression for the two addresses.
 */
function existingSubnetChecks(addresses: string, projectId: string, networkId: string, cidr: string) {
  const inPool = (address: string) =>
    `anytrue([for pool in self.allocation_pools : ${addressNumber("pool.start")} <= ${addressNumber(address)} && ${addressNumber(address)} <= ${addressNumber("pool.end")}])`;
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
      condition: `\${alltrue([for address in ${addresses} : address != self.gateway_ip && !${inPool("address")}])}`,
      errorMessage:
        `Invalid public network: ${subnet} must leave the bastion's and the Kubernetes master's fixed addresses ` +
        `\${join(" and ", ${addresses})} (host numbers ${HOST_NUMBERS.bastionPublic} and ${HOST_NUMBERS.kubeMasterPublic} of public_network_cidr) ` +
        `outside its gateway (\${self.gateway_ip}) and its allocation pools (\${join(", ", [for pool in self.allocation_pools : "\${pool.start}-\${pool.end}"])}): ` +
        "shrink the pools (openstack subnet set --no-allocation-pool --allocation-pool start=...,end=...).",
    },
  ];
}
