import { ITerraformDependable, Op, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackNetworkingNetworkV2 } from "../../.gen/providers/openstack/data-openstack-networking-network-v2";
import { NetworkingNetworkV2 } from "../../.gen/providers/openstack/networking-network-v2";
import { NetworkingRouterInterfaceV2 } from "../../.gen/providers/openstack/networking-router-interface-v2";
import { NetworkingRouterV2 } from "../../.gen/providers/openstack/networking-router-v2";
import { NetworkingSecgroupV2 } from "../../.gen/providers/openstack/networking-secgroup-v2";
import { NetworkingSubnetV2 } from "../../.gen/providers/openstack/networking-subnet-v2";
import { ACCESS_ROLES, AccessRole } from "../../config/access";
import { VARIABLES } from "../../config/parameters";
import { UUID_PATTERN } from "../../config/rules";
import { parseIpv4Network } from "../../facts/cidr";
import { HOST_NUMBERS } from "../../facts/hosts";
import { privateNetwork } from "./private-network";
import { publicSide } from "./public-side";
import { RoleAccessProps, roleAccess } from "./role-access";
import { NetworkSecurityGroups, securityGroups } from "./security-groups";

export type { NetworkSecurityGroups } from "./security-groups";

export interface NetworkProps {
  /** Name of the external network the router uplinks to; looked up, not created. */
  readonly externalNetworkName: string;
  /** Prefix of every OpenStack resource name, so two deployments in one project never clash. */
  readonly namePrefix: string;
  /** @default VARIABLES.public_network_cidr.default */
  readonly publicCidr?: string;
  /** @default VARIABLES.private_network_cidr.default */
  readonly privateCidr?: string;
  /** @default VARIABLES.dns_nameservers.default */
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
  /**
   * ID of an existing network of the project whose subnet with CIDR `privateCidr` is the private
   * subnet, checked at plan time against the layout (./private-network.ts). @default "" - create it
   */
  readonly privateNetworkId?: string;
  /** The addresses DHCP must have for the pools' workers and to spare (a token). @default DHCP_RESERVE */
  readonly privateDhcpAddresses?: number;
  /** The bastion's private port's name, which takes the private gateway's address. @default "<namePrefix>-gateway" */
  readonly privateGatewayPortName?: string;
  /** Sources allowed to SSH to the bastion. @default VARIABLES.ssh_allowed_cidrs.default */
  readonly sshAllowedCidrs?: string[];
  /** Sources allowed to reach the Kubernetes API on the master. @default VARIABLES.api_allowed_cidrs.default */
  readonly apiAllowedCidrs?: string[];
  /**
   * Each role's ingress rules and the project's groups for it (<role>_ingress_rules,
   * <role>_security_groups). @default none for any role
   */
  readonly access?: Partial<Readonly<Record<AccessRole, RoleAccessProps>>>;
  /**
   * The highest host number a fixed address takes on the private network (a token when it
   * follows a plan-time value). The plan fails if it reaches the DHCP pool. @default the master's
   */
  readonly lastPrivateStaticHost?: number;
}

/**
 * The wiki's network layout: a router on the external network, a public network that reaches the
 * internet through it, and a private network whose gateway is the bastion (which NATs for it).
 * The public side may be the project's own instead: an existing router (`routerId`) for a new
 * public subnet, or an existing routed network (`publicNetworkId`); and so may the private network
 * (`privateNetworkId`). Each is read and checked at plan time against the layout.
 *
 * Built by job, as cluster-api-provider-openstack's networking service is (pkg/cloud/services/
 * networking, whose name the folder takes): the public side (./public-side.ts), the private
 * network (./private-network.ts), the security groups (./security-groups.ts), and the address
 * plan they share (./address-plan.ts). Each adds its resources to this construct, so their
 * addresses are Network's.
 */
export class Network extends Construct {
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
  /** The private network this network creates: count 0 with `privateNetworkId`. Read `privateNetworkId`. */
  readonly privateNetwork: NetworkingNetworkV2;
  /** The private subnet this network creates: count 0 with `privateNetworkId`. Read `privateSubnetId`. */
  readonly privateSubnet: NetworkingSubnetV2;
  /** The private network, new or `privateNetworkId`. */
  readonly privateNetworkId: string;
  /** The private subnet, new or the existing network's subnet with CIDR `privateCidr`. */
  readonly privateSubnetId: string;
  readonly securityGroups: NetworkSecurityGroups;
  /** The groups of every Kubernetes node's private port, whatever its pool: internal and kubeNodes. */
  readonly kubeNodePrivateGroups: NetworkingSecgroupV2[];
  /**
   * Per role, the groups its machines' ports take besides the stack's own (./role-access.ts): the
   * group of its ingress rules, if any, and the project's groups given for it. A token list.
   */
  readonly roleGroupIds: Readonly<Record<AccessRole, string[]>>;
  /** The security groups this network creates (a token): the stack's five and one per role with rules. */
  readonly securityGroupCount: number;
  /**
   * The security group rules this network creates, counted from the rules themselves, with the two
   * egress rules Neutron adds to every new group (./security-groups.ts).
   */
  readonly securityGroupRuleCount: number;
  readonly publicCidr: string;
  readonly privateCidr: string;

  constructor(scope: Construct, id: string, props: NetworkProps) {
    super(scope, id);
    const publicCidr = props.publicCidr ?? VARIABLES.public_network_cidr.default;
    const privateCidr = props.privateCidr ?? VARIABLES.private_network_cidr.default;
    const dnsNameservers = props.dnsNameservers ?? VARIABLES.dns_nameservers.default;
    const sshAllowedCidrs = props.sshAllowedCidrs ?? VARIABLES.ssh_allowed_cidrs.default;
    const apiAllowedCidrs = props.apiAllowedCidrs ?? VARIABLES.api_allowed_cidrs.default;
    const routerId = props.routerId ?? "";
    const publicNetworkId = props.publicNetworkId ?? "";
    const namePrefix = props.namePrefix;

    requireName("externalNetworkName", props.externalNetworkName);
    requireName("namePrefix", namePrefix);
    for (const [prop, cidr] of [
      ["publicCidr", publicCidr],
      ["privateCidr", privateCidr],
    ] as const) {
      if (!Token.isUnresolved(cidr)) {
        const parsed = parseIpv4Network(cidr);
        if (typeof parsed === "string") throw new Error(`Network: ${prop} "${cidr}" ${parsed}`);
      }
    }
    for (const [prop, id] of [
      ["routerId", routerId],
      ["publicNetworkId", publicNetworkId],
      ["privateNetworkId", props.privateNetworkId ?? ""],
    ] as const) {
      if (!Token.isUnresolved(id) && id !== "" && !new RegExp(UUID_PATTERN).test(id)) {
        throw new Error(`Network: ${prop} must be empty or a Neutron ID, a lower-case UUID (got "${id}")`);
      }
    }
    if (!Token.isUnresolved(routerId) && !Token.isUnresolved(publicNetworkId) && routerId !== "" && publicNetworkId !== "") {
      throw new Error(`Network: routerId must be empty with publicNetworkId, an already routed network (got "${routerId}")`);
    }
    this.publicCidr = publicCidr;
    this.privateCidr = privateCidr;

    const publicNetwork = publicSide(this, {
      externalNetworkName: props.externalNetworkName,
      namePrefix,
      cidr: publicCidr,
      dnsNameservers,
      routerId,
      publicNetworkId,
    });
    this.externalNetwork = publicNetwork.externalNetwork;
    this.router = publicNetwork.router;
    this.publicNetwork = publicNetwork.publicNetwork;
    this.publicSubnet = publicNetwork.publicSubnet;
    this.publicRouterInterface = publicNetwork.publicRouterInterface;
    this.routerId = publicNetwork.routerId;
    this.publicNetworkId = publicNetwork.publicNetworkId;
    this.publicSubnetId = publicNetwork.publicSubnetId;
    this.floatingIpDependencies = publicNetwork.floatingIpDependencies;
    const privateSide = privateNetwork(this, {
      namePrefix,
      cidr: privateCidr,
      dnsNameservers,
      lastStaticHost: props.lastPrivateStaticHost ?? HOST_NUMBERS.kubeMasterPrivate,
      existingNetworkId: props.privateNetworkId ?? "",
      dhcpAddresses: props.privateDhcpAddresses,
      gatewayPortName: props.privateGatewayPortName ?? `${namePrefix}-gateway`,
    });
    this.privateNetwork = privateSide.network;
    this.privateSubnet = privateSide.subnet;
    this.privateNetworkId = privateSide.networkId;
    this.privateSubnetId = privateSide.subnetId;

    // From the counts' locals, which read variables only: a reference to the resources would
    // make the quota data sources wait for them, and the quota check happen at apply time.
    const newPublic = publicNetwork.creates.publicNetwork;
    const newPrivate = privateSide.creates;
    this.created = {
      networks: Token.asNumber(Op.add(newPrivate, newPublic)),
      subnets: Token.asNumber(Op.add(newPrivate, newPublic)),
      routers: publicNetwork.creates.router,
      // Each new network's DHCP port, and the router's interface with a new public network.
      ports: Token.asNumber(Op.add(newPrivate, Op.mul(2, newPublic))),
    };

    const groups = securityGroups(this, { namePrefix, privateCidr, sshAllowedCidrs, apiAllowedCidrs });
    this.securityGroups = groups.groups;
    this.kubeNodePrivateGroups = [this.securityGroups.internal, this.securityGroups.kubeNodes];
    const none: RoleAccessProps = { ingressRules: [], securityGroups: [] };
    const access = roleAccess(
      this,
      namePrefix,
      Object.fromEntries(ACCESS_ROLES.map((role) => [role, props.access?.[role] ?? none])) as Record<AccessRole, RoleAccessProps>,
      groups.last,
    );
    this.roleGroupIds = access.groupIds;
    this.securityGroupCount = Token.asNumber(Op.add(Object.keys(this.securityGroups).length, access.groupCount));
    this.securityGroupRuleCount = Token.asNumber(Op.add(groups.ruleCount, access.ruleCount));
  }
}

function requireName(prop: string, value: string): void {
  if (!Token.isUnresolved(value) && value.trim() === "") {
    throw new Error(`Network: ${prop} must not be empty (got "${value}")`);
  }
}
