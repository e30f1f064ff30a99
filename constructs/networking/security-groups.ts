import { Fn, TerraformIterator, Token } from "cdktf";
import { Construct } from "constructs";
import { NetworkingSecgroupRuleV2, NetworkingSecgroupRuleV2Config } from "../../.gen/providers/openstack/networking-secgroup-rule-v2";
import { NetworkingSecgroupV2 } from "../../.gen/providers/openstack/networking-secgroup-v2";
import { KUBE_API_PORT, SALT_PORTS } from "../../facts/ports";
import { sum } from "../cdktf-workarounds";

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

export interface SecurityGroupsProps {
  readonly namePrefix: string;
  readonly privateCidr: string;
  readonly sshAllowedCidrs: string[];
  readonly apiAllowedCidrs: string[];
}

export interface SecurityGroups {
  readonly groups: NetworkSecurityGroups;
  /**
   * The group created last. Neutron counts a group being created twice, its database row and its
   * quota reservation, until the API commits the reservation after the row exists
   * (neutron/quota/resource.py, TrackedResource.count: count_db_registers + count_reserved;
   * neutron/db/quota/driver_nolock.py, make_reservation). Groups created side by side near the
   * `security_group` quota then fail with OverQuota though they fit (seen on the real cloud at 9
   * of 10), so every group the stack makes waits for the one before.
   */
  readonly last: NetworkingSecgroupV2;
  /**
   * The security group rules created, counting the two egress rules (IPv4, IPv6) Neutron adds to
   * every new group from its default rule template (neutron/db/securitygroups_db.py,
   * create_security_group, _create_rules_from_template). A token: some rules are one per network.
   */
  readonly ruleCount: number;
}

/** The egress rules Neutron gives each new group (IPv4 and IPv6). */
const NEUTRON_DEFAULT_RULES = 2;

/** What every rule here shares: ingress over IPv4 into a group. */
type IngressRule = Omit<NetworkingSecgroupRuleV2Config, "securityGroupId" | "direction" | "ethertype" | "forEach" | "count">;

/**
 * The groups and their ingress rules: SSH to the bastion and the API to the master from the
 * allowed networks, HTTP(S) to the master from anywhere, everything between the cluster's machines,
 * Salt from the private network. Adds them to `network` (the Network construct), whose addresses
 * they keep.
 */
export function securityGroups(network: Construct, props: SecurityGroupsProps): SecurityGroups {
  const prefix = props.namePrefix;
  // One after another: Neutron counts a group twice while its creation completes (below), so
  // groups created side by side can pass the quota and still fail it.
  let previous: NetworkingSecgroupV2 | undefined;
  const group = (id: string, name: string, description: string) =>
    (previous = new NetworkingSecgroupV2(network, id, { name, description, dependsOn: previous && [previous] }));
  const groups: NetworkSecurityGroups = {
    bastion: group("BastionSecurityGroup", `${prefix}-bastion`, "SSH to the bastion"),
    kubeApi: group("KubeApiSecurityGroup", `${prefix}-kube-api`, "Kubernetes API and ingress on the master"),
    internal: group("InternalSecurityGroup", `${prefix}-internal`, "All traffic between the cluster's machines"),
    saltMaster: group("SaltMasterSecurityGroup", `${prefix}-salt-master`, "Salt publish and return ports"),
    kubeNodes: group(
      "KubeNodesSecurityGroup",
      `${prefix}-kube-nodes`,
      "Kubernetes API and NodePorts on the Kubernetes nodes from load balancers on the private network",
    ),
  };

  // Every rule's number of instances, as it is created: 1, or one per network of a list.
  const instances: number[] = [];
  const ingress = (id: string, into: NetworkingSecgroupV2, rule: IngressRule) => {
    new NetworkingSecgroupRuleV2(network, id, { securityGroupId: into.id, direction: "ingress", ethertype: "IPv4", ...rule });
    instances.push(1);
  };
  const ingressFromEach = (id: string, into: NetworkingSecgroupV2, sources: string[], rule: Omit<IngressRule, "remoteIpPrefix">) => {
    const source = TerraformIterator.fromList(sources);
    new NetworkingSecgroupRuleV2(network, id, {
      forEach: source,
      securityGroupId: into.id,
      direction: "ingress",
      ethertype: "IPv4",
      ...rule,
      remoteIpPrefix: source.value,
    });
    instances.push(Fn.lengthOf(sources));
  };

  ingressFromEach("BastionSshRule", groups.bastion, props.sshAllowedCidrs, {
    description: "SSH from an allowed network",
    protocol: "tcp",
    portRangeMin: 22,
    portRangeMax: 22,
  });
  ingressFromEach("KubeApiRule", groups.kubeApi, props.apiAllowedCidrs, {
    description: "Kubernetes API from an allowed network",
    protocol: "tcp",
    portRangeMin: KUBE_API_PORT,
    portRangeMax: KUBE_API_PORT,
  });
  for (const [id, port] of [
    ["KubeHttpRule", 80],
    ["KubeHttpsRule", 443],
  ] as const) {
    ingress(id, groups.kubeApi, {
      description: `Ingress controller port ${port} from anywhere`,
      protocol: "tcp",
      portRangeMin: port,
      portRangeMax: port,
      remoteIpPrefix: "0.0.0.0/0",
    });
  }
  ingress("InternalRule", groups.internal, {
    description: "Any protocol from another member of this group",
    remoteGroupId: groups.internal.id,
  });
  ingress("SaltMasterRule", groups.saltMaster, {
    description: "Salt publish and return ports from the private network only",
    protocol: "tcp",
    portRangeMin: SALT_PORTS.publish,
    portRangeMax: SALT_PORTS.ret,
    remoteIpPrefix: props.privateCidr,
  });

  // The rules per network first (tokens), then every fixed number as one.
  const perNetwork = instances.filter((count) => Token.isUnresolved(count));
  const fixed = instances.filter((count) => !Token.isUnresolved(count)).reduce((total, count) => total + count, 0);
  return { groups, last: previous!, ruleCount: sum([...perNetwork, fixed + NEUTRON_DEFAULT_RULES * Object.keys(groups).length]) };
}
