import { TerraformStack, Testing, Token } from "cdktf";
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
import { Network, NetworkProps } from "../constructs/networking";
import { KUBE_API_PORT } from "../facts/ports";
import { localById } from "./support/synth";

function synthNetwork(props: Partial<NetworkProps> = {}): string {
  return Testing.synthScope((scope) => {
    new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "kube-on-os", ...props });
  });
}

function resources(synthesized: string, type: string): Record<string, any>[] {
  return Object.values(JSON.parse(synthesized).resource?.[type] ?? {});
}

const ROUTER = "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d";
const NETWORK = "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93";

/** The count a resource's or data source's `count` local gives, evaluated for the literal props. */
function countOf(synthesized: string, block: Record<string, any>): string {
  const local = /^\$\{local\.(\w+)\}$/.exec(block.count)![1];
  return JSON.parse(synthesized).locals[local];
}

describe("Network", () => {
  const synthesized = synthNetwork();

  it("looks the external network up by name instead of creating it", () => {
    expect(synthesized).toHaveDataSourceWithProperties(DataOpenstackNetworkingNetworkV2, { name: "vlan1066", external: true });
    expect(resources(synthesized, NetworkingNetworkV2.tfResourceType)).toHaveLength(2);
  });

  it("uplinks a router to the external network", () => {
    expect(synthesized).toHaveResourceWithProperties(NetworkingRouterV2, {
      name: "kube-on-os-router",
      admin_state_up: true,
      external_network_id: "${data.openstack_networking_network_v2.Network_ExternalNetwork_2FE1A5D2.id}",
    });
  });

  it("creates the public network 10.0.0.0/16 with the router as gateway 10.0.0.1", () => {
    expect(synthesized).toHaveResourceWithProperties(NetworkingNetworkV2, { name: "kube-on-os-public" });
    expect(synthesized).toHaveResourceWithProperties(NetworkingSubnetV2, {
      name: "kube-on-os-public",
      cidr: "10.0.0.0/16",
      ip_version: 4,
      gateway_ip: '${cidrhost("10.0.0.0/16", 1)}',
      dns_nameservers: ["1.1.1.1", "1.0.0.1"],
    });
    const interfaces = resources(synthesized, NetworkingRouterInterfaceV2.tfResourceType);
    expect(interfaces).toHaveLength(1);
    expect(interfaces[0].subnet_id).toMatch(/^\$\{one\(openstack_networking_subnet_v2\.Network_PublicSubnet_\w+\[\*\]\.id\)\}$/);
  });

  it("creates the private network 10.1.0.0/16 whose gateway is the bastion's 10.1.0.1, off the router", () => {
    expect(synthesized).toHaveResourceWithProperties(NetworkingSubnetV2, {
      name: "kube-on-os-private",
      cidr: "10.1.0.0/16",
      gateway_ip: '${cidrhost("10.1.0.0/16", 1)}',
    });
    const interfaces = resources(synthesized, NetworkingRouterInterfaceV2.tfResourceType);
    expect(interfaces.some((i) => String(i.subnet_id).includes("PrivateSubnet"))).toBe(false);
  });

  it("keeps DHCP in the upper half of each network, clear of the static hosts", () => {
    const subnets = resources(synthesized, NetworkingSubnetV2.tfResourceType);
    for (const subnet of subnets) {
      expect(subnet.allocation_pool).toEqual([
        {
          start: `\${cidrhost("${subnet.cidr}", (pow(2, (32 - tonumber(element(split("/", "${subnet.cidr}"), 1)))) / 2))}`,
          end: `\${cidrhost("${subnet.cidr}", -2)}`,
        },
      ]);
    }
  });

  it("creates exactly the security groups of the design, and a role's own only when it has rules", () => {
    const groups = resources(synthesized, NetworkingSecgroupV2.tfResourceType);
    expect(
      groups
        .filter((g) => g.count === undefined)
        .map((g) => g.name)
        .sort(),
    ).toEqual(["kube-on-os-bastion", "kube-on-os-internal", "kube-on-os-kube-api", "kube-on-os-kube-nodes", "kube-on-os-salt-master"]);
    expect(groups.filter((g) => g.count !== undefined).map((g) => g.name)).toEqual([
      "kube-on-os-bastion-ingress",
      "kube-on-os-control-plane-ingress",
      "kube-on-os-worker-ingress",
    ]);
    const withRules = synthNetwork({
      access: { worker: { ingressRules: ["tcp/30443 from 192.0.2.0/24"], securityGroups: [] } },
    });
    const counts = resources(withRules, NetworkingSecgroupV2.tfResourceType)
      .filter((g) => g.count !== undefined)
      .map((g) => [g.name, g.count]);
    expect(counts).toEqual([
      ["kube-on-os-bastion-ingress", expect.stringMatching(/^\$\{local\.Network_bastion_ingress_group_\w+\}$/)],
      ["kube-on-os-control-plane-ingress", expect.stringMatching(/^\$\{local\.Network_control_plane_ingress_group_\w+\}$/)],
      ["kube-on-os-worker-ingress", expect.stringMatching(/^\$\{local\.Network_worker_ingress_group_\w+\}$/)],
    ]);
    const json = JSON.parse(withRules);
    const local = (name: string) => localById(json, `Network_${name}`)[1];
    expect([local("bastion_ingress_group"), local("worker_ingress_group")]).toEqual([
      "${(length([]) >= 1) ? 1 : 0}",
      '${(length(["tcp/30443 from 192.0.2.0/24"]) >= 1) ? 1 : 0}',
    ]);
  });

  it("creates its groups one after another, so that Neutron never counts one twice near the quota", () => {
    // security-groups.ts, SecurityGroups.last: a group being created counts twice until its
    // reservation is committed, so side by side near the quota they fail though they fit.
    const groups = JSON.parse(synthesized).resource[NetworkingSecgroupV2.tfResourceType] as Record<string, any>;
    const chain: string[] = [];
    let next = Object.keys(groups).find((name) => groups[name].depends_on === undefined);
    while (next !== undefined) {
      chain.push(groups[next].name);
      const after = `${NetworkingSecgroupV2.tfResourceType}.${next}`;
      next = Object.keys(groups).find((name) => (groups[name].depends_on ?? []).includes(after));
    }
    expect(chain).toEqual([
      "kube-on-os-bastion",
      "kube-on-os-kube-api",
      "kube-on-os-internal",
      "kube-on-os-salt-master",
      "kube-on-os-kube-nodes",
      "kube-on-os-bastion-ingress",
      "kube-on-os-control-plane-ingress",
      "kube-on-os-worker-ingress",
    ]);
    expect(Object.values(groups).filter((g) => (g.depends_on ?? []).length > 1)).toEqual([]);
  });

  it("opens SSH on the bastion only from the allowed networks", () => {
    const rules = resources(synthNetwork({ sshAllowedCidrs: ["203.0.113.0/24"] }), NetworkingSecgroupRuleV2.tfResourceType);
    const ssh = rules.filter((r) => r.port_range_min === 22);
    expect(ssh).toHaveLength(1);
    expect(ssh[0]).toMatchObject({
      direction: "ingress",
      protocol: "tcp",
      port_range_max: 22,
      for_each: '${toset(["203.0.113.0/24"])}',
      remote_ip_prefix: "${each.value}",
    });
    expect(ssh[0].security_group_id).toContain("Network_BastionSecurityGroup");
  });

  it("opens the Kubernetes API only from the allowed networks, and HTTP(S) ingress to all", () => {
    const rules = resources(synthNetwork({ apiAllowedCidrs: ["198.51.100.0/24"] }), NetworkingSecgroupRuleV2.tfResourceType);
    const api = rules.filter((r) => r.port_range_min === KUBE_API_PORT);
    expect(api).toHaveLength(1);
    expect(api[0]).toMatchObject({ for_each: '${toset(["198.51.100.0/24"])}', remote_ip_prefix: "${each.value}" });
    for (const port of [80, 443]) {
      const rule = rules.find((r) => r.port_range_min === port);
      expect(rule).toMatchObject({ port_range_max: port, remote_ip_prefix: "0.0.0.0/0" });
      expect(rule?.security_group_id).toContain("Network_KubeApiSecurityGroup");
    }
  });

  it("allows all traffic between members of the internal group, and nothing else in", () => {
    const rules = resources(synthesized, NetworkingSecgroupRuleV2.tfResourceType).filter((r) =>
      String(r.security_group_id).includes("InternalSecurityGroup"),
    );
    expect(rules).toHaveLength(1);
    expect(rules[0].protocol).toBeUndefined();
    expect(rules[0].remote_group_id).toBe(rules[0].security_group_id);
  });

  it("opens Salt's 4505-4506 only from the private network", () => {
    expect(synthesized).toHaveResourceWithProperties(NetworkingSecgroupRuleV2, {
      direction: "ingress",
      protocol: "tcp",
      port_range_min: 4505,
      port_range_max: 4506,
      remote_ip_prefix: "10.1.0.0/16",
    });
  });

  it("names every OpenStack resource from the prefix, not the construct path", () => {
    const named = [NetworkingNetworkV2, NetworkingSubnetV2, NetworkingRouterV2, NetworkingSecgroupV2].flatMap((type) =>
      resources(synthNetwork({ namePrefix: "prod.example" }), type.tfResourceType),
    );
    expect(named.length).toBeGreaterThan(0);
    for (const resource of named) expect(resource.name).toMatch(/^prod\.example-/);
  });

  it("exposes typed attributes for the machines that come next", () => {
    const stack = new TerraformStack(Testing.app(), "test");
    const network = new Network(stack, "Network", { externalNetworkName: "ext", namePrefix: "p" });
    expect(network.privateSubnet).toBeInstanceOf(NetworkingSubnetV2);
    expect(network.securityGroups.internal).toBeInstanceOf(NetworkingSecgroupV2);
  });

  describe("rejects bad props by name", () => {
    it.each([
      [{ externalNetworkName: " " }, 'Network: externalNetworkName must not be empty (got " ")'],
      [{ namePrefix: "" }, 'Network: namePrefix must not be empty (got "")'],
      [{ publicCidr: "10.0.0.0/33" }, 'Network: publicCidr "10.0.0.0/33" has a prefix length above 32'],
      [{ privateCidr: "10.1.0.5/16" }, 'Network: privateCidr "10.1.0.5/16" has host bits set; the network address is 10.1.0.0/16'],
      [{ privateCidr: "fd00::/64" }, 'Network: privateCidr "fd00::/64" is not an IPv4 CIDR such as 10.0.0.0/16'],
      [{ routerId: "lab-router" }, 'Network: routerId must be empty or a Neutron ID, a lower-case UUID (got "lab-router")'],
      [
        { publicNetworkId: ROUTER.toUpperCase() },
        `Network: publicNetworkId must be empty or a Neutron ID, a lower-case UUID (got "${ROUTER.toUpperCase()}")`,
      ],
      [
        { routerId: ROUTER, publicNetworkId: NETWORK },
        `Network: routerId must be empty with publicNetworkId, an already routed network (got "${ROUTER}")`,
      ],
    ])("%j", (props, message) => {
      expect(() => synthNetwork(props)).toThrow(message);
    });
  });
});

describe("Network with an existing router or public network", () => {
  function only(synthesized: string, kind: "resource" | "data", type: string, id: string): Record<string, any> {
    const blocks = Object.entries(JSON.parse(synthesized)[kind]?.[type] ?? {}).filter(([name]) => name.includes(id) || name === id);
    expect(blocks).toHaveLength(1);
    return blocks[0][1] as Record<string, any>;
  }

  it("creates the router, the public network, its subnet and the interface when neither is given", () => {
    const synthesized = synthNetwork();
    for (const [type, id] of [
      [NetworkingRouterV2.tfResourceType, "Router"],
      [NetworkingNetworkV2.tfResourceType, "PublicNetwork"],
      [NetworkingSubnetV2.tfResourceType, "PublicSubnet"],
      [NetworkingRouterInterfaceV2.tfResourceType, "PublicRouterInterface"],
    ]) {
      expect(countOf(synthesized, only(synthesized, "resource", type, `Network_${id}_`))).toMatch(/\? 1 : 0\}$/);
    }
    expect(countOf(synthesized, only(synthesized, "resource", NetworkingRouterV2.tfResourceType, "Network_Router_"))).toBe(
      '${((length("") < 1) && (length("") < 1)) ? 1 : 0}',
    );
  });

  it("with routerId, looks the router up, checks its gateway, and attaches the new public subnet to it", () => {
    const synthesized = synthNetwork({ routerId: ROUTER });
    const router = only(synthesized, "data", DataOpenstackNetworkingRouterV2.tfResourceType, "router_id");
    expect(router.router_id).toBe(ROUTER);
    expect(countOf(synthesized, router)).toBe(`\${!(length("${ROUTER}") < 1) ? 1 : 0}`);
    expect(router.lifecycle.postcondition[0].condition).toBe(
      "${self.external_network_id == data.openstack_networking_network_v2.Network_ExternalNetwork_2FE1A5D2.id}",
    );
    expect(countOf(synthesized, only(synthesized, "resource", NetworkingRouterV2.tfResourceType, "Network_Router_"))).toBe(
      `\${((length("${ROUTER}") < 1) && (length("") < 1)) ? 1 : 0}`,
    );
    expect(only(synthesized, "resource", NetworkingRouterInterfaceV2.tfResourceType, "PublicRouterInterface").router_id).toMatch(
      /^\$\{local\.Network_router_id_\w+\}$/,
    );
    expect(localById(JSON.parse(synthesized), "Network_router_id")[1]).toBe(
      "${(local.Network_creates_router_0208F909 == 1) ? one(openstack_networking_router_v2.Network_Router_B43C5A1B[*].id) : one(data.openstack_networking_router_v2.router_id[*].id)}",
    );
  });

  it("with publicNetworkId, finds the subnet by network and CIDR, checks it, and takes its IDs", () => {
    const synthesized = synthNetwork({ publicNetworkId: NETWORK, publicCidr: "10.20.0.0/16" });
    const subnets = only(synthesized, "data", DataOpenstackNetworkingSubnetIdsV2.tfResourceType, "ExistingPublicSubnets");
    expect(subnets).toMatchObject({ network_id: NETWORK, cidr: "10.20.0.0/16" });
    expect(subnets.lifecycle.postcondition[0].condition).toBe("${length(self.ids) == 1}");
    const subnet = only(synthesized, "data", DataOpenstackNetworkingSubnetV2.tfResourceType, "ExistingPublicSubnet_");
    expect(subnet.lifecycle.postcondition.map((p: any) => p.error_message)).toEqual([
      expect.stringContaining("belongs to project"),
      expect.stringContaining("has no gateway"),
      expect.stringContaining("fixed addresses"),
    ]);
    for (const type of [NetworkingNetworkV2, NetworkingSubnetV2, NetworkingRouterInterfaceV2]) {
      const name = type === NetworkingNetworkV2 ? "PublicNetwork" : type === NetworkingSubnetV2 ? "PublicSubnet" : "PublicRouterInterface";
      expect(countOf(synthesized, only(synthesized, "resource", type.tfResourceType, `Network_${name}_`))).toBe(
        `\${(length("${NETWORK}") < 1) ? 1 : 0}`,
      );
    }
    const json = JSON.parse(synthesized);
    expect(localById(json, "Network_public_subnet_id")[1]).toBe(
      "${(local.Network_creates_public_network_71C2778E == 1) ? one(openstack_networking_subnet_v2.Network_PublicSubnet_F7F151DA[*].id) : one(data.openstack_networking_subnet_v2.Network_ExistingPublicSubnet_DBB1425F[*].id)}",
    );
    expect(localById(json, "Network_public_network_id")[1]).toBe(
      "${(local.Network_creates_public_network_71C2778E == 1) ? one(openstack_networking_network_v2.Network_PublicNetwork_95DA8D1B[*].id) : one(data.openstack_networking_subnet_v2.Network_ExistingPublicSubnet_DBB1425F[*].network_id)}",
    );
  });

  it("gives the machines and the load balancer IDs, not resources that may not exist", () => {
    const stack = new TerraformStack(Testing.app(), "test");
    const network = new Network(stack, "Network", { externalNetworkName: "ext", namePrefix: "p", publicNetworkId: NETWORK });
    for (const id of [network.routerId, network.publicNetworkId, network.publicSubnetId]) expect(Token.isUnresolved(id)).toBe(true);
    expect(network.floatingIpDependencies).toEqual([network.publicRouterInterface]);
  });
});
