import { TerraformVariable, Testing } from "cdktf";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { LbListenerV2 } from "../.gen/providers/openstack/lb-listener-v2";
import { LbLoadbalancerV2 } from "../.gen/providers/openstack/lb-loadbalancer-v2";
import { LbMonitorV2 } from "../.gen/providers/openstack/lb-monitor-v2";
import { LbPoolV2 } from "../.gen/providers/openstack/lb-pool-v2";
import { NetworkingSecgroupRuleV2 } from "../.gen/providers/openstack/networking-secgroup-rule-v2";
import { ApiLoadBalancer, ApiLoadBalancerProps } from "../constructs/api-load-balancer";
import { ClusterLayout } from "../constructs/cluster-layout";
import { Network } from "../constructs/networking";
import { KUBE_API_PORT } from "../facts/ports";

type Props = Partial<Omit<ApiLoadBalancerProps, "network" | "layout">>;

function synth(props: Props = {}): string {
  return Testing.synthScope((scope) => {
    const network = new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "lab.example" });
    const layout = new ClusterLayout(scope, { domain: "lab.example", publicCidr: "10.0.0.0/16", privateCidr: "10.1.0.0/16", nodeCount: 3 });
    new ApiLoadBalancer(scope, "ApiLoadBalancer", { network, layout, ...props });
  });
}

function json(props: Props = {}): any {
  return JSON.parse(synth(props));
}

/** The one resource of `type`, by its construct id. */
function resource(synthesized: any, type: string, id: string): any {
  const matches = Object.entries(synthesized.resource[type] ?? {}).filter(([key]) =>
    new RegExp(`^ApiLoadBalancer(_${id})?_[0-9A-F]{8}$`).test(key),
  );
  expect(matches).toHaveLength(1);
  return matches[0][1];
}

/** The count local's name and expression. */
function countLocal(synthesized: any): [string, string] {
  const matches = Object.entries(synthesized.locals as Record<string, string>).filter(([key]) =>
    /^ApiLoadBalancer_count_[0-9A-F]{8}$/.test(key),
  );
  expect(matches).toHaveLength(1);
  return matches[0];
}

const CATALOG_TYPES = "data.openstack_identity_auth_scope_v3.ApiLoadBalancer_Catalog_C2AB9A31.service_catalog[*].type";

describe("ApiLoadBalancer", () => {
  const text = synth();
  const synthesized = JSON.parse(text);
  const [count] = countLocal(synthesized);

  it("makes a load balancer, listener, pool, monitor, members, floating IP and member rule, all counted by one local", () => {
    const counted = [
      ["openstack_lb_loadbalancer_v2", ""],
      ["openstack_lb_listener_v2", "Listener"],
      ["openstack_lb_pool_v2", "Pool"],
      ["openstack_lb_monitor_v2", "Monitor"],
      ["openstack_networking_floatingip_associate_v2", "FloatingIpAssociation"],
      ["openstack_networking_secgroup_rule_v2", "MemberRule"],
    ];
    for (const [type, id] of counted) expect(resource(synthesized, type, id).count).toBe(`\${local.${count}}`);
    // The floating IP it allocates: by the same local, unless api_floating_ip gives one.
    const allocated = /^\$\{local\.(\w+)\}$/.exec(resource(synthesized, "openstack_networking_floatingip_v2", "FloatingIp").count)![1];
    expect(synthesized.locals[allocated]).toBe(`\${((local.${count} == 1) && (length("") < 1)) ? 1 : 0}`);
    // One member per control-plane node, or none.
    expect(resource(synthesized, "openstack_lb_member_v2", "Member").count).toBe(`\${(local.${count} * length(local.kube_control_plane))}`);
    const types = Object.keys(synthesized.resource).filter((type) =>
      Object.keys(synthesized.resource[type]).some((key) => key.startsWith("ApiLoadBalancer")),
    );
    expect(types.sort()).toEqual([...counted.map(([type]) => type), "openstack_lb_member_v2", "openstack_networking_floatingip_v2"].sort());
  });

  it.each([
    ["on", '("on" == "on") || (("on" == "auto")'],
    ["auto", '("auto" == "on") || (("auto" == "auto")'],
    ["off", '("off" == "on") || (("off" == "auto")'],
  ])('counts 1 for "on", for "auto" when the catalog lists load-balancer, else 0: mode %s', (mode, test) => {
    expect(countLocal(json({ mode }))[1]).toBe(`\${(${test} && contains(${CATALOG_TYPES}, "load-balancer"))) ? 1 : 0}`);
  });

  it('defaults to "auto"', () => {
    expect(countLocal(synthesized)[1]).toBe(countLocal(json({ mode: "auto" }))[1]);
  });

  it('reads the catalog of the provider\'s token, whose postcondition fails "on" without Octavia in one line', () => {
    const postcondition = {
      condition: `\${"on" != "on" || contains(self.service_catalog[*].type, "load-balancer")}`,
      error_message:
        'api_load_balancer is "on", but this cloud\'s catalog lists no load-balancer (Octavia) service: set it to "auto" or "off".',
    };
    const floatingIp = {
      condition: `\${"" == "" || contains(self.service_catalog[*].type, "load-balancer")}`,
      error_message:
        "Invalid api_floating_ip: it is set, but this cloud's catalog lists no load-balancer (Octavia) service, so there is no API load balancer to give it to: leave it empty.",
    };
    expect(synth({ mode: "on" })).toHaveDataSourceWithProperties(DataOpenstackIdentityAuthScopeV3, {
      name: "kube-on-os-api-load-balancer",
      lifecycle: { postcondition: [postcondition, floatingIp] },
    });
  });

  it("takes the mode as a token: the variable decides at plan time", () => {
    const synthesized = JSON.parse(
      Testing.synthScope((scope) => {
        const mode = new TerraformVariable(scope, "api_load_balancer", { type: "string" }).stringValue;
        const network = new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "lab.example" });
        const layout = new ClusterLayout(scope, {
          domain: "lab.example",
          publicCidr: "10.0.0.0/16",
          privateCidr: "10.1.0.0/16",
          nodeCount: 3,
        });
        new ApiLoadBalancer(scope, "ApiLoadBalancer", { network, layout, mode });
      }),
    );
    expect(countLocal(synthesized)[1]).toContain('(var.api_load_balancer == "on") || ((var.api_load_balancer == "auto")');
    const [catalog] = Object.values(synthesized.data.openstack_identity_auth_scope_v3) as any[];
    expect(catalog.lifecycle.postcondition[0].condition).toMatch(/^\$\{var\.api_load_balancer != "on" \|\| /);
  });

  it("names the load balancer, listener, pool and monitor after the domain", () => {
    for (const type of [LbLoadbalancerV2, LbListenerV2, LbPoolV2, LbMonitorV2]) {
      expect(text).toHaveResourceWithProperties(type, { name: "lab.example-kube-api" });
    }
  });

  it("puts the VIP on the public subnet once the router reaches it, with a floating IP from the external network", () => {
    const lb = resource(synthesized, "openstack_lb_loadbalancer_v2", "");
    // The public subnet id is a local choosing the created subnet or public_network_id's.
    const [, local] = lb.vip_subnet_id.match(/^\$\{local\.(Network_public_subnet_id_\w+)\}$/) ?? [];
    expect(synthesized.locals[local]).toMatch(
      /^\$\{\(local\.Network_creates_public_network_\w+ == 1\) \? one\(openstack_networking_subnet_v2\.Network_PublicSubnet_\w+\[\*\]\.id\) : /,
    );
    expect(lb.depends_on).toEqual([expect.stringMatching(/^openstack_networking_router_interface_v2\.Network_PublicRouterInterface_\w+$/)]);
    expect(resource(synthesized, "openstack_networking_floatingip_v2", "FloatingIp").pool).toMatch(
      /^\$\{data\.openstack_networking_network_v2\.Network_ExternalNetwork_\w+\.name\}$/,
    );
    expect(resource(synthesized, "openstack_networking_floatingip_associate_v2", "FloatingIpAssociation").port_id).toMatch(
      /^\$\{one\(openstack_lb_loadbalancer_v2\.ApiLoadBalancer_\w+\[\*\]\.vip_port_id\)\}$/,
    );
  });

  it.each([
    [undefined, ["0.0.0.0/0"], '${length(["0.0.0.0/0"]) > 0}'],
    [["203.0.113.0/24", "198.51.100.0/24"], ["203.0.113.0/24", "198.51.100.0/24"], '${length(["203.0.113.0/24","198.51.100.0/24"]) > 0}'],
    // Octavia reads an empty allowed_cidrs as everyone: no network closes the listener instead.
    [[], [], "${length([]) > 0}"],
  ])("listens on TCP 16443 for the allowed networks %j, and is up only when there is one", (allowedCidrs, cidrs, up) => {
    expect(synth({ allowedCidrs })).toHaveResourceWithProperties(LbListenerV2, {
      protocol: "TCP",
      protocol_port: KUBE_API_PORT,
      allowed_cidrs: cidrs,
      admin_state_up: up,
    });
  });

  it("balances the control plane round-robin, at the nodes' private addresses on the API port, checked over TCP", () => {
    expect(text).toHaveResourceWithProperties(LbPoolV2, { protocol: "TCP", lb_method: "ROUND_ROBIN" });
    expect(text).toHaveResourceWithProperties(LbMonitorV2, { type: "TCP", delay: 5, timeout: 5, max_retries: 3 });
    const member = resource(synthesized, "openstack_lb_member_v2", "Member");
    expect(member).toMatchObject({
      name: "${element(local.kube_control_plane, count.index)}",
      address: "${element(local.kube_node_addresses, count.index)}",
      protocol_port: KUBE_API_PORT,
    });
    // The private subnet, the stack's own or private_network_id's (constructs/networking/private-network.ts).
    expect(member.subnet_id).toMatch(/^\$\{local\.Network_private_subnet_id_\w+\}$/);
  });

  it("lets the load balancer reach the members from the private network on the API port only", () => {
    expect(text).toHaveResourceWithProperties(NetworkingSecgroupRuleV2, {
      direction: "ingress",
      protocol: "tcp",
      port_range_min: KUBE_API_PORT,
      port_range_max: KUBE_API_PORT,
      remote_ip_prefix: "10.1.0.0/16",
    });
    expect(resource(synthesized, "openstack_networking_secgroup_rule_v2", "MemberRule").security_group_id).toMatch(
      /KubeNodesSecurityGroup/,
    );
  });

  it.each(["yes", "ON", ""])("rejects the mode %j by name", (mode) => {
    expect(() => synth({ mode })).toThrow(`ApiLoadBalancer: mode must be one of auto, on, off (got "${mode}")`);
  });
});
