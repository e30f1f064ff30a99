import { Fn, IResolvable, Op, ref, TerraformCount, TerraformLocal, TerraformResource, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { LbListenerV2 } from "../.gen/providers/openstack/lb-listener-v2";
import { LbLoadbalancerV2 } from "../.gen/providers/openstack/lb-loadbalancer-v2";
import { LbMemberV2 } from "../.gen/providers/openstack/lb-member-v2";
import { LbMonitorV2 } from "../.gen/providers/openstack/lb-monitor-v2";
import { LbPoolV2 } from "../.gen/providers/openstack/lb-pool-v2";
import { NetworkingFloatingipAssociateV2 } from "../.gen/providers/openstack/networking-floatingip-associate-v2";
import { NetworkingFloatingipV2 } from "../.gen/providers/openstack/networking-floatingip-v2";
import { NetworkingSecgroupRuleV2 } from "../.gen/providers/openstack/networking-secgroup-rule-v2";
import { API_LOAD_BALANCER_MODES, VARIABLES } from "../config/parameters";
import { KUBE_API_PORT } from "../facts/ports";
import { addressOf, hclOf, splat } from "./cdktf-workarounds";
import { ClusterLayout } from "./cluster-layout";
import { floatingIp } from "./floating-ips";
import { Network } from "./networking";

/** The service type Octavia registers in the Keystone catalog. */
export const OCTAVIA_SERVICE_TYPE = "load-balancer";

export interface ApiLoadBalancerProps {
  readonly network: Network;
  /** The control plane, whose nodes are the members, at their fixed private addresses. */
  readonly layout: ClusterLayout;
  /** "auto" (when the catalog lists Octavia), "on" or "off" (a token: api_load_balancer). @default VARIABLES.api_load_balancer.default */
  readonly mode?: string;
  /** Networks the listener admits; an empty list closes it. @default VARIABLES.api_allowed_cidrs.default */
  readonly allowedCidrs?: string[];
  /** A floating IP the project holds, by address (floating-ips.ts), or "" to allocate one. @default VARIABLES.api_floating_ip.default */
  readonly floatingIp?: string;
}

/**
 * An Octavia load balancer in front of the control plane: a TCP listener on the API port, a
 * pool with a TCP health monitor, one member per control-plane node, and a floating IP on its VIP,
 * which sits on the public subnet (the router's). With three voters the API stays reachable
 * while any one node is down, which one master floating IP cannot do.
 *
 * `mode` "auto" creates it when the project's catalog lists Octavia (read at plan time from the
 * token), "on" requires it (the plan fails in one line on a cloud without it), "off" never.
 */
export class ApiLoadBalancer extends Construct {
  /** 1 or 0, as a token: whether the load balancer exists. */
  readonly count: number;
  /** The security group rules this construct adds (a token: 0 or 1, its way in to its members). */
  readonly securityGroupRules: number;
  readonly loadBalancer: LbLoadbalancerV2;
  readonly listener: LbListenerV2;
  readonly pool: LbPoolV2;
  readonly monitor: LbMonitorV2;
  readonly members: LbMemberV2;
  /** The floating IP allocated here: count 0 without a load balancer or with api_floating_ip. */
  readonly floatingIp: NetworkingFloatingipV2;
  /** 1 or 0 (a token): whether its floating IP is allocated here. */
  readonly floatingIpAllocated: number;
  /** The floating IP, or null without a load balancer. */
  readonly address: string;
  /** The VIP's address on the public network, or null. */
  readonly vipAddress: string;

  constructor(scope: Construct, id: string, props: ApiLoadBalancerProps) {
    super(scope, id);
    const mode = props.mode ?? VARIABLES.api_load_balancer.default;
    if (!Token.isUnresolved(mode) && !(API_LOAD_BALANCER_MODES as readonly string[]).includes(mode)) {
      throw new Error(`ApiLoadBalancer: mode must be one of ${API_LOAD_BALANCER_MODES.join(", ")} (got "${mode}")`);
    }
    const allowedCidrs = props.allowedCidrs ?? VARIABLES.api_allowed_cidrs.default;
    const givenFloatingIp = props.floatingIp ?? VARIABLES.api_floating_ip.default;
    const { network, layout } = props;
    const port = KUBE_API_PORT;

    // The catalog of the token the provider holds: the services this project can use.
    const catalog = new DataOpenstackIdentityAuthScopeV3(this, "Catalog", {
      name: "kube-on-os-api-load-balancer",
      lifecycle: {
        postcondition: [
          {
            condition: `\${${hclOf(mode)} != "on" || contains(self.service_catalog[*].type, "${OCTAVIA_SERVICE_TYPE}")}`,
            errorMessage: `api_load_balancer is "on", but this cloud's catalog lists no ${OCTAVIA_SERVICE_TYPE} (Octavia) service: set it to "auto" or "off".`,
          },
          {
            condition: `\${${hclOf(givenFloatingIp)} == "" || contains(self.service_catalog[*].type, "${OCTAVIA_SERVICE_TYPE}")}`,
            errorMessage: `Invalid api_floating_ip: it is set, but this cloud's catalog lists no ${OCTAVIA_SERVICE_TYPE} (Octavia) service, so there is no API load balancer to give it to: leave it empty.`,
          },
        ],
      },
    });
    const serviceTypes = Token.asList(ref(`${addressOf(catalog)}.service_catalog[*].type`, TerraformStack.of(this)));
    const hasOctavia = Fn.contains(serviceTypes, OCTAVIA_SERVICE_TYPE);
    this.count = Token.asNumber(
      new TerraformLocal(this, "count", Fn.conditional(Op.or(Op.eq(mode, "on"), Op.and(Op.eq(mode, "auto"), hasOctavia)), 1, 0)).expression,
    );
    const counted = () => TerraformCount.of(this.count);
    this.securityGroupRules = this.count;
    const one = (resource: TerraformResource, attribute: string) => Token.asString(Fn.one(splat(resource, attribute)));

    const name = `${layout.domain}-kube-api`;
    this.loadBalancer = new LbLoadbalancerV2(this, "LoadBalancer", {
      count: counted(),
      name,
      description: "The Kubernetes API over the control plane",
      vipSubnetId: network.publicSubnetId,
      // The VIP may only be plumbed once the subnet reaches the router, as a floating IP needs.
      dependsOn: network.floatingIpDependencies,
    });
    const loadBalancerId = one(this.loadBalancer, "id");
    this.listener = new LbListenerV2(this, "Listener", {
      count: counted(),
      name,
      loadbalancerId: loadBalancerId,
      protocol: "TCP",
      protocolPort: port,
      allowedCidrs,
      // No allowed network closes the API, as api_allowed_cidrs = [] closes it on the master;
      // Octavia reads an empty allowed_cidrs as "everyone".
      // Literal: Op drops a falsy right operand (constructs/cdktf-workarounds.ts).
      adminStateUp: Token.asAny(`\${length(${hclOf(allowedCidrs)}) > 0}`) as IResolvable,
    });
    this.pool = new LbPoolV2(this, "Pool", {
      count: counted(),
      name,
      listenerId: one(this.listener, "id"),
      protocol: "TCP",
      lbMethod: "ROUND_ROBIN",
    });
    const poolId = one(this.pool, "id");
    this.monitor = new LbMonitorV2(this, "Monitor", {
      count: counted(),
      name,
      poolId,
      type: "TCP",
      delay: 5,
      timeout: 5,
      maxRetries: 3,
    });
    // One member per control-plane node: the first nodes of kube_node_addresses.
    const members = TerraformCount.of(Token.asNumber(Op.mul(this.count, Fn.lengthOf(layout.controlPlane))));
    this.members = new LbMemberV2(this, "Member", {
      count: members,
      name: Fn.element(layout.controlPlane, members.index),
      poolId,
      address: Fn.element(layout.kubeNodeAddresses, members.index),
      protocolPort: port,
      subnetId: network.privateSubnetId,
    });

    const fip = floatingIp(this, "FloatingIp", {
      network,
      variable: "api_floating_ip",
      given: givenFloatingIp,
      owner: { loadBalancerName: name },
      wanted: this.count,
      description: `${layout.domain} Kubernetes API`,
    });
    this.floatingIp = fip.allocated;
    this.floatingIpAllocated = fip.allocates;
    new NetworkingFloatingipAssociateV2(this, "FloatingIpAssociation", {
      count: counted(),
      floatingIp: fip.address,
      portId: one(this.loadBalancer, "vip_port_id"),
    });
    this.address = fip.address;
    this.vipAddress = one(this.loadBalancer, "vip_address");

    // The load balancer reaches the members (and checks them) from its port on the private network.
    new NetworkingSecgroupRuleV2(this, "MemberRule", {
      count: counted(),
      securityGroupId: network.securityGroups.kubeNodes.id,
      description: "Kubernetes API from the API load balancer on the private network",
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "tcp",
      portRangeMin: port,
      portRangeMax: port,
      remoteIpPrefix: network.privateCidr,
    });
  }
}
