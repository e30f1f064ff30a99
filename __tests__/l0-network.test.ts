import { TerraformStack, Testing } from "cdktf";
import { DataOpenstackNetworkingNetworkV2 } from "../.gen/providers/openstack/data-openstack-networking-network-v2";
import { NetworkingNetworkV2 } from "../.gen/providers/openstack/networking-network-v2";
import { NetworkingRouterInterfaceV2 } from "../.gen/providers/openstack/networking-router-interface-v2";
import { NetworkingRouterV2 } from "../.gen/providers/openstack/networking-router-v2";
import { NetworkingSecgroupRuleV2 } from "../.gen/providers/openstack/networking-secgroup-rule-v2";
import { NetworkingSecgroupV2 } from "../.gen/providers/openstack/networking-secgroup-v2";
import { NetworkingSubnetV2 } from "../.gen/providers/openstack/networking-subnet-v2";
import { Network, NetworkProps } from "../constructs/network";

function synthNetwork(props: Partial<NetworkProps> = {}): string {
  return Testing.synthScope((scope) => {
    new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "kube-on-os", ...props });
  });
}

function resources(synthesized: string, type: string): Record<string, any>[] {
  return Object.values(JSON.parse(synthesized).resource?.[type] ?? {});
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
    expect(interfaces[0].subnet_id).toMatch(/^\$\{openstack_networking_subnet_v2\.Network_PublicSubnet_\w+\.id\}$/);
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

  it("creates exactly the security groups of the design", () => {
    const names = resources(synthesized, NetworkingSecgroupV2.tfResourceType).map((g) => g.name);
    expect(names.sort()).toEqual(["kube-on-os-bastion", "kube-on-os-internal", "kube-on-os-kube-api", "kube-on-os-salt-master"]);
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
    const api = rules.filter((r) => r.port_range_min === Network.KUBE_API_PORT);
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
    ])("%j", (props, message) => {
      expect(() => synthNetwork(props)).toThrow(message);
    });
  });
});
