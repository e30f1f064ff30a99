/**
 * The cloud an L3 journey runs on, either of the two targets: the OpenStack API double
 * (__tests__/doubles/openstack/) or a project of the real services (openstack-kit.ts). A journey
 * written against this runs on both, and what it asks of the cloud is the same.
 */
import type { OpenStackDouble } from "../doubles/openstack/server";
import type { Target } from "./workspace";

/** An object as an OpenStack API answers it (or as the double keeps it). */
type Item = Record<string, unknown>;

export interface Keypair {
  readonly name: string;
  readonly publicKey: string;
}

export interface Server {
  readonly name: string;
  readonly id: string;
  /** Nova's status: ACTIVE, BUILD, ERROR… */
  readonly status: string;
  /** The ID of the image it booted from; "" when it booted from a volume (Nova's server.image). */
  readonly image: string;
  /** Its flavor's name: Nova's server.flavor.original_name from microversion 2.47 (the double stores the flavor itself). */
  readonly flavor: string;
}

/** Orders a target's listings by name, as both targets list them. */
export function byName(a: { name: string }, b: { name: string }): number {
  return a.name.localeCompare(b.name);
}

/** A server as Nova's API shows it, as a Server. */
export function serverOf(server: Item): Server {
  const image = server.image as { id: string } | "" | undefined;
  const flavor = server.flavor as { original_name?: string; name?: string };
  return {
    name: server.name as string,
    id: server.id as string,
    status: server.status as string,
    image: image ? image.id : "",
    flavor: String(flavor.original_name ?? flavor.name),
  };
}

export interface LoadBalancer {
  readonly name: string;
  readonly vipAddress: string;
  /** The floating IP on the VIP's port; null without one. */
  readonly floatingIp: string | null;
}

export interface CloudTarget extends Target {
  /** "double" or "openstack", for test names. */
  readonly name: string;
  /** Keystone's v3 URL, straight (not through a recorder). */
  readonly authUrl: string;
  /** The project the provider works in. */
  readonly projectId: string;
  /**
   * What the project holds, as "<kind>: <name or id>" lines, sorted: servers, server groups,
   * keypairs, networks, subnets, routers, ports, floating IPs, security groups (but "default")
   * with their rules, volumes, load balancers and application credentials. [] after a complete
   * destroy. The ports are those the project made and its servers': the ports Neutron and
   * Octavia make for themselves (a router's interfaces, DHCP, a load balancer's VIP) go with
   * what they serve, and the two targets do not make the same ones (the real cloud has no DHCP
   * agent).
   */
  resources(): Promise<string[]>;
  /** The project's servers, by name. */
  servers(): Promise<Server[]>;
  /** The keypairs of the project's user (Nova keeps them per user), with their public keys, by name. */
  keypairs(): Promise<Keypair[]>;
  /** The project's load balancers, each with its VIP address and the floating IP on its VIP port. */
  loadBalancers(): Promise<LoadBalancer[]>;
  /**
   * Seeds a router of the project's, as made before a deployment (router_id), with its gateway
   * on the external network; resources() leaves it out. Returns its ID.
   */
  seedRouter(name: string): Promise<string>;
  /**
   * Seeds a floating IP of the project's on the external network, as allocated before a
   * deployment (bastion_floating_ip ...); resources() leaves it out. Returns its address.
   */
  seedFloatingIp(): Promise<string>;
  /** The floating IPs seedFloatingIp made, by address: the port each is associated with, or null. */
  seededFloatingIps(): Promise<Record<string, string | null>>;
  /**
   * Seeds a security group of the project's with one ingress rule, as made before a deployment
   * (<role>_security_groups); resources() leaves it and its rules out. Returns its ID.
   */
  seedSecurityGroup(name: string, ingress: SeededIngress): Promise<string>;
  /**
   * Seeds a network of the project's with a subnet of `cidr` made to fit the layout (gateway host
   * 1, DHCP on, pools in the upper half), as made before a deployment (private_network_id);
   * resources() leaves them out. Returns the network's ID.
   */
  seedPrivateNetwork(name: string, cidr: string): Promise<string>;
}

/** A /16's subnet as the layout wants a private one: gateway host 1, DHCP in the upper half. */
export function privateSubnetOf(cidr: string): { gatewayIp: string; allocationPools: { start: string; end: string }[] } {
  const [a, b] = cidr.split(".");
  if (!cidr.endsWith(".0.0/16")) throw new Error(`seedPrivateNetwork: a /16 only (got ${cidr})`);
  return { gatewayIp: `${a}.${b}.0.1`, allocationPools: [{ start: `${a}.${b}.128.0`, end: `${a}.${b}.255.254` }] };
}

/** A seeded group's ingress rule, in Neutron's fields. */
export interface SeededIngress {
  readonly protocol: string;
  readonly port_range_min: number;
  readonly port_range_max: number;
  readonly remote_ip_prefix: string;
}

/**
 * resources()'s lines for Neutron's ports and security groups with their rules, from the API's
 * objects (`seeded` tells what the test seeded, which is left out).
 */
export function networkLines(
  ports: readonly Item[],
  groups: readonly Item[],
  rules: readonly Item[],
  seeded: (item: Item) => boolean,
): string[] {
  const own = (port: Item) => port.device_owner === "" || String(port.device_owner).startsWith("compute:");
  const listed = new Map(groups.filter((g) => g.name !== "default" && !seeded(g)).map((g) => [g.id as string, g.name as string]));
  const range = (rule: Item) => (rule.port_range_min === null ? "" : ` ${rule.port_range_min as number}-${rule.port_range_max as number}`);
  const from = (rule: Item) =>
    (rule.remote_ip_prefix ?? listed.get(rule.remote_group_id as string) ?? rule.remote_group_id ?? "anywhere") as string;
  return [
    ...ports.filter((p) => own(p) && !seeded(p)).map((p) => `port: ${(p.name as string) || (p.id as string)}`),
    ...[...listed.values()].map((name) => `security group: ${name}`),
    ...rules
      .filter((r) => listed.has(r.security_group_id as string))
      .map(
        (r) =>
          `security group rule: ${listed.get(r.security_group_id as string)!} ${r.direction as string} ${r.ethertype as string} ` +
          `${(r.protocol as string | null) ?? "any"}${range(r)} ${r.direction === "ingress" ? "from" : "to"} ${from(r)}`,
      ),
  ];
}

/** The double as a target: its memory, read as the real cloud's project is listed. */
export function doubleTarget(double: OpenStackDouble): CloudTarget {
  const external = () => double.neutron.networks.all().find((n) => n["router:external"] === true)!.id;
  const seeded = (item: Item) => item.seeded === true;
  const named = (kind: string, items: readonly Item[]) =>
    items.filter((i) => !seeded(i)).map((i) => `${kind}: ${(i.name as string) || (i.id as string)}`);
  return {
    name: "double",
    authUrl: double.authUrl,
    projectId: double.identity.project.id,
    passwordEnv: () => double.passwordEnv(),
    seedRouter: async (name) => double.neutron.seedRouter(name, external()).id,
    seedFloatingIp: async () => String(double.neutron.seedFloatingIp(null, external()).floating_ip_address),
    seedPrivateNetwork: async (name, cidr) => String(double.neutron.seedNetwork(name, { cidr, ...privateSubnetOf(cidr) }).network.id),
    seedSecurityGroup: async (name, ingress) => double.neutron.seedSecurityGroup(name, { ingress: { ethertype: "IPv4", ...ingress } }).id,
    seededFloatingIps: async () =>
      Object.fromEntries(
        double.neutron.floatingips
          .all()
          .filter(seeded)
          .map((f) => [String(f.floating_ip_address), (f.port_id as string | null) ?? null]),
      ),
    keypairs: async () =>
      double.nova.keypairs
        .all()
        .filter((k) => !seeded(k))
        .map((k) => ({ name: k.name as string, publicKey: k.public_key as string }))
        .sort(byName),
    loadBalancers: async () =>
      double.octavia.loadBalancers
        .all()
        .map((lb) => ({
          name: lb.name as string,
          vipAddress: lb.vip_address as string,
          floatingIp: (double.neutron.floatingips.all().find((f) => f.port_id === lb.vip_port_id)?.floating_ip_address as string) ?? null,
        }))
        .sort(byName),
    servers: async () => double.nova.servers.all().map(serverOf).sort(byName),
    resources: async () =>
      [
        ...named("server", double.nova.servers.all()),
        ...named("server group", double.nova.serverGroups.all()),
        ...named("keypair", double.nova.keypairs.all()),
        ...named("network", double.neutron.networks.all()),
        ...named("subnet", double.neutron.subnets.all()),
        ...named("router", double.neutron.routers.all()),
        ...double.neutron.floatingips
          .all()
          .filter((f) => !seeded(f))
          .map((f) => `floating IP: ${f.floating_ip_address as string}`),
        ...networkLines(double.neutron.ports.all(), double.neutron.securityGroups.all(), double.neutron.securityGroupRules.all(), seeded),
        ...named("volume", double.cinder.volumes.all()),
        ...named("load balancer", double.octavia.loadBalancers.all()),
        ...named("application credential", double.keystone.applicationCredentials.all()),
      ].sort(),
  };
}
