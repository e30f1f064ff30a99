import { Fn, Op, TerraformIterator, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackNetworkingNetworkV2 } from "../.gen/providers/openstack/data-openstack-networking-network-v2";
import { NetworkingNetworkV2 } from "../.gen/providers/openstack/networking-network-v2";
import { NetworkingRouterInterfaceV2 } from "../.gen/providers/openstack/networking-router-interface-v2";
import { NetworkingRouterV2 } from "../.gen/providers/openstack/networking-router-v2";
import { NetworkingSecgroupRuleV2 } from "../.gen/providers/openstack/networking-secgroup-rule-v2";
import { NetworkingSecgroupV2 } from "../.gen/providers/openstack/networking-secgroup-v2";
import { NetworkingSubnetV2 } from "../.gen/providers/openstack/networking-subnet-v2";
import { HOSTS } from "./cluster-layout";
import { parseIpv4Network } from "./cidr";

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
}

/**
 * The wiki's network layout: a router on the external network, a public network that reaches the
 * internet through it, and a private network whose gateway is the bastion (which NATs for it).
 */
export class Network extends Construct {
  static readonly DEFAULT_PUBLIC_CIDR = "10.0.0.0/16";
  static readonly DEFAULT_PRIVATE_CIDR = "10.1.0.0/16";
  static readonly DEFAULT_DNS_NAMESERVERS = ["1.1.1.1", "1.0.0.1"];
  static readonly KUBE_API_PORT = 16443;
  static readonly SALT_PORTS = { publish: 4505, ret: 4506 } as const;

  readonly externalNetwork: DataOpenstackNetworkingNetworkV2;
  readonly router: NetworkingRouterV2;
  readonly publicNetwork: NetworkingNetworkV2;
  readonly publicSubnet: NetworkingSubnetV2;
  /** Floating IPs on the public network need this link to the router first. */
  readonly publicRouterInterface: NetworkingRouterInterfaceV2;
  readonly privateNetwork: NetworkingNetworkV2;
  readonly privateSubnet: NetworkingSubnetV2;
  readonly securityGroups: NetworkSecurityGroups;
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

    this.externalNetwork = new DataOpenstackNetworkingNetworkV2(this, "ExternalNetwork", {
      name: props.externalNetworkName,
      external: true,
    });

    this.router = new NetworkingRouterV2(this, "Router", {
      name: `${prefix}-router`,
      adminStateUp: true,
      externalNetworkId: this.externalNetwork.id,
    });

    this.publicNetwork = new NetworkingNetworkV2(this, "PublicNetwork", { name: `${prefix}-public`, adminStateUp: true });
    this.publicSubnet = new NetworkingSubnetV2(this, "PublicSubnet", {
      name: `${prefix}-public`,
      networkId: this.publicNetwork.id,
      cidr: publicCidr,
      ipVersion: 4,
      gatewayIp: hostAddress(publicCidr, HOSTS.publicGateway),
      enableDhcp: true,
      dnsNameservers,
      allocationPool: [dhcpPool(publicCidr)],
    });
    this.publicRouterInterface = new NetworkingRouterInterfaceV2(this, "PublicRouterInterface", {
      routerId: this.router.id,
      subnetId: this.publicSubnet.id,
    });

    // The private network is not attached to the router: its gateway is the bastion's private
    // port, which masquerades outbound traffic through the bastion's public port.
    this.privateNetwork = new NetworkingNetworkV2(this, "PrivateNetwork", { name: `${prefix}-private`, adminStateUp: true });
    this.privateSubnet = new NetworkingSubnetV2(this, "PrivateSubnet", {
      name: `${prefix}-private`,
      networkId: this.privateNetwork.id,
      cidr: privateCidr,
      ipVersion: 4,
      gatewayIp: hostAddress(privateCidr, HOSTS.bastionPrivate),
      enableDhcp: true,
      dnsNameservers,
      allocationPool: [dhcpPool(privateCidr)],
      lifecycle: { precondition: [staticHostsBelowPool(privateCidr, props.lastPrivateStaticHost ?? HOSTS.kubeMasterPrivate)] },
    });

    this.securityGroups = {
      bastion: this.securityGroup("BastionSecurityGroup", `${prefix}-bastion`, "SSH to the bastion"),
      kubeApi: this.securityGroup("KubeApiSecurityGroup", `${prefix}-kube-api`, "Kubernetes API and ingress on the master"),
      internal: this.securityGroup("InternalSecurityGroup", `${prefix}-internal`, "All traffic between the cluster's machines"),
      saltMaster: this.securityGroup("SaltMasterSecurityGroup", `${prefix}-salt-master`, "Salt publish and return ports"),
    };

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

/** Number of the first host in the upper half of `cidr`: 2^(32 - prefix) / 2. */
function upperHalfStart(cidr: string): number {
  const prefixLength = Fn.tonumber(Fn.element(Fn.split("/", cidr), 1));
  return Token.asNumber(Op.div(Fn.pow(2, Op.sub(32, prefixLength)), 2));
}

/**
 * Checked at plan time, whatever the plan-time values: a fixed address inside the pool could be
 * taken by DHCP first (Neutron hands out pool addresses at random), and its port would fail.
 */
function staticHostsBelowPool(cidr: string, lastHost: number) {
  const poolStart = upperHalfStart(cidr);
  return {
    condition: Op.lt(lastHost, poolStart),
    errorMessage:
      `Invalid network layout: fixed private addresses reach host number ${lastHost}, inside the DHCP pool of ` +
      `private_network_cidr=${cidr} (its upper half, from host number ${poolStart}); use a larger private network or fewer num_kube_nodes.`,
  };
}

/** DHCP hands out the upper half of the network only; the lower half is for static hosts. */
function dhcpPool(cidr: string) {
  return { start: Fn.cidrhost(cidr, upperHalfStart(cidr)), end: Fn.cidrhost(cidr, -2) };
}
