/**
 * The cloud an L3 journey runs on, either of the two targets: the OpenStack API double
 * (__tests__/doubles/openstack/) or a project of the real services (openstack-kit.ts). A journey
 * written against this runs on both, and what it asks of the cloud is the same.
 */
import type { OpenStackDouble } from "../doubles/openstack/server";
import type { Target } from "./workspace";

export interface Keypair {
  readonly name: string;
  readonly publicKey: string;
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
   * keypairs, networks, subnets, routers, floating IPs, security groups (but "default"),
   * volumes, load balancers and application credentials. [] after a complete destroy. Ports are
   * left out: the real cloud's services own some in the project (a router's interfaces, a load
   * balancer's VIP) that the double does not model as the project's.
   */
  resources(): Promise<string[]>;
  /** The keypairs of the project's user (Nova keeps them per user), with their public keys, by name. */
  keypairs(): Promise<Keypair[]>;
  /** The project's load balancers, each with its VIP address and the floating IP on its VIP port. */
  loadBalancers(): Promise<LoadBalancer[]>;
  /**
   * Seeds a router of the project's, as made before a deployment (router_id), with its gateway
   * on the external network; resources() leaves it out. Returns its ID.
   */
  seedRouter(name: string): Promise<string>;
}

/** The double as a target: its memory, read as the real cloud's project is listed. */
export function doubleTarget(double: OpenStackDouble): CloudTarget {
  const external = () => double.neutron.networks.all().find((n) => n["router:external"] === true)!.id;
  const named = (kind: string, items: readonly Record<string, unknown>[]) =>
    items.filter((i) => i.seeded !== true).map((i) => `${kind}: ${(i.name as string) || (i.id as string)}`);
  return {
    name: "double",
    authUrl: double.authUrl,
    projectId: double.identity.project.id,
    passwordEnv: () => double.passwordEnv(),
    seedRouter: async (name) => double.neutron.seedRouter(name, external()).id,
    keypairs: async () =>
      double.nova.keypairs
        .all()
        .filter((k) => k.seeded !== true)
        .map((k) => ({ name: k.name as string, publicKey: k.public_key as string }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    loadBalancers: async () =>
      double.octavia.loadBalancers
        .all()
        .map((lb) => ({
          name: lb.name as string,
          vipAddress: lb.vip_address as string,
          floatingIp: (double.neutron.floatingips.all().find((f) => f.port_id === lb.vip_port_id)?.floating_ip_address as string) ?? null,
        }))
        .sort((a, b) => a.name.localeCompare(b.name)),
    resources: async () =>
      [
        ...named("server", double.nova.servers.all()),
        ...named("server group", double.nova.serverGroups.all()),
        ...named("keypair", double.nova.keypairs.all()),
        ...named("network", double.neutron.networks.all()),
        ...named("subnet", double.neutron.subnets.all()),
        ...named("router", double.neutron.routers.all()),
        ...double.neutron.floatingips.all().map((f) => `floating IP: ${f.floating_ip_address as string}`),
        ...named(
          "security group",
          double.neutron.securityGroups.all().filter((g) => g.name !== "default"),
        ),
        ...named("volume", double.cinder.volumes.all()),
        ...named("load balancer", double.octavia.loadBalancers.all()),
        ...named("application credential", double.keystone.applicationCredentials.all()),
      ].sort(),
  };
}
