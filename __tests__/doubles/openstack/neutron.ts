import { randomBytes, randomInt, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import * as ipaddr from "ipaddr.js";
import { ApiError, Collection, filterBy, notFound, now, registerCollection, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;

interface FixedIp {
  subnet_id: string;
  ip_address: string;
}

function toUint32(address: string): number {
  return ipaddr.IPv4.parse(address)
    .toByteArray()
    .reduce((acc, byte) => acc * 256 + byte, 0);
}

function fromUint32(value: number): string {
  return [24, 16, 8, 0].map((shift) => Math.floor(value / 2 ** shift) % 256).join(".");
}

function inCidr(address: string, cidr: string): boolean {
  return ipaddr.IPv4.isValidFourPartDecimal(address) && ipaddr.IPv4.parse(address).match(ipaddr.IPv4.parseCIDR(cidr));
}

/**
 * Neutron's default quotas (neutron/conf/quota.py, DEFAULT_QUOTA_*; subnetpool unlimited). Tests
 * change them per double. -1 is unlimited.
 */
export const NEUTRON_DEFAULT_QUOTAS = {
  network: 100,
  subnet: 100,
  port: 500,
  router: 10,
  floatingip: 50,
  security_group: 10,
  security_group_rule: 100,
  rbac_policy: 10,
  subnetpool: -1,
};
export type NeutronQuota = keyof typeof NEUTRON_DEFAULT_QUOTAS;

/**
 * The fields Neutron shows to admins (and, for a port's binding, to services) alone, by kind:
 * the `get_<kind>:<field>` rules of neutron/conf/policies/ (lib_rules.ADMIN, ADMIN_OR_SERVICE).
 */
const ADMIN_ONLY_FIELDS: Record<string, readonly string[]> = {
  network: ["segments", "provider:network_type", "provider:physical_network", "provider:segmentation_id"],
  subnet: ["segment_id"],
  port: ["binding:vif_type", "binding:vif_details", "binding:host_id", "binding:profile", "resource_request", "hints", "trusted"],
  router: ["distributed", "ha"],
};

/** Owners of ports Neutron deletes itself with their subnet (db_base_plugin_v2.py, AUTO_DELETE_PORT_OWNERS). */
const DHCP_OWNER = "network:dhcp";
/** The DHCP agent's host id, part of its port's device id. */
const DHCP_HOST_UUID = randomUUID().replace(/-/g, "").slice(0, 32);

/** How many free addresses Neutron's IPAM picks among (neutrondb_ipam/driver.py, MAX_WIN). */
const MAX_WIN = 1000;

/** neutron-lib's NAME_FIELD_SIZE and DESCRIPTION_FIELD_SIZE (neutron_lib/db/constants.py). */
const MAX_LENGTHS: Record<string, number> = { name: 255, description: 255 };

/**
 * A body attribute that fails neutron-lib's validators (neutron_lib/api/validators/__init__.py,
 * e.g. validate_string: "'<value>' exceeds maximum length of 255"), as the API reports it.
 */
function invalidInput(attribute: string, reason: string): ApiError {
  return new ApiError(400, "HTTPBadRequest", `Invalid input for ${attribute}. Reason: ${reason}.`);
}

function checkLengths(body: Record<string, unknown>): void {
  for (const [attribute, max] of Object.entries(MAX_LENGTHS)) {
    const value = body[attribute];
    if (typeof value === "string" && value.length > max) throw invalidInput(attribute, `'${value}' exceeds maximum length of ${max}`);
  }
}

/** A neutron_lib BadRequest for `resource` (neutron_lib/exceptions/__init__.py). */
function badRequest(resource: string, message: string): ApiError {
  return new ApiError(400, "BadRequest", `Bad ${resource} request: ${message}.`);
}

function macAddress(): string {
  return ["fa", "16", "3e", ...[...randomBytes(3)].map((b) => b.toString(16).padStart(2, "0"))].join(":");
}

/**
 * Neutron v2.0: networks, subnets, routers and their interfaces, ports with fixed IPs and
 * allowed address pairs, floating IPs, security groups and rules. IP allocation follows Neutron:
 * a requested fixed IP must be free (else 409 IpAddressAlreadyAllocated), others come from the
 * subnet's allocation pools in order.
 */
export class Neutron {
  readonly networks = new Collection("Network", "NetworkNotFound");
  readonly subnets = new Collection("Subnet", "SubnetNotFound");
  readonly routers = new Collection("Router", "RouterNotFound");
  readonly ports = new Collection("Port", "PortNotFound");
  readonly floatingips = new Collection("Floating IP", "FloatingIPNotFound");
  readonly securityGroups = new Collection("Security group", "SecurityGroupNotFound");
  readonly securityGroupRules = new Collection("Security group rule", "SecurityGroupRuleNotFound");
  /** The project's quota limits; a test may change any of them. */
  readonly quotas: Record<NeutronQuota, number> = { ...NEUTRON_DEFAULT_QUOTAS };

  constructor(private readonly projectId: string) {}

  /** What the project uses of each quota: its own resources, the seeded shared network excluded. */
  usage(): Partial<Record<NeutronQuota, number>> {
    const own = (collection: Collection) => collection.all().filter((r) => r.project_id === this.projectId && r.shared !== true).length;
    return {
      network: own(this.networks),
      subnet: this.subnets.all().filter((s) => !this.networks.find(String(s.network_id))?.shared).length,
      port: own(this.ports),
      router: own(this.routers),
      floatingip: own(this.floatingips),
      security_group: own(this.securityGroups),
      security_group_rule: own(this.securityGroupRules),
    };
  }

  /**
   * neutron/db/quota/driver.py, DbQuotaDriver (OverQuota with the sorted overs): creating `count`
   * more of `quota` beyond its limit is a 409 OverQuota (neutron_lib/exceptions OverQuota: "Quota
   * exceeded for resources: ['port']."; the list is Python's repr).
   */
  private checkQuota(quota: NeutronQuota, count = 1): void {
    const limit = this.quotas[quota];
    if (limit >= 0 && (this.usage()[quota] ?? 0) + count > limit) {
      throw new ApiError(409, "OverQuota", `Quota exceeded for resources: ['${quota}'].`);
    }
  }

  /** Everything a test created; the seeded external network is not counted. */
  resourceCount(): number {
    const seeded = (r: Resource) => r.seeded === true;
    return [this.networks, this.subnets, this.routers, this.ports, this.floatingips, this.securityGroups, this.securityGroupRules]
      .map((c) => c.all().filter((r) => !seeded(r)).length)
      .reduce((a, b) => a + b, 0);
  }

  /** A port another service asks for through Neutron's API (Octavia's VIP port): the port quota applies. */
  createServicePort(body: Record<string, unknown>): Resource {
    this.checkQuota("port");
    return this.createPort(body);
  }

  /** A port another service deletes through Neutron's API, with what that does (its floating IPs let go). */
  deletePort(id: string): void {
    this.remove(this.ports, id);
  }

  /** Seeds the project's default security group, which Neutron creates for every project. */
  seedDefaultSecurityGroup(): Resource {
    const group = this.createSecurityGroup({ name: "default", description: "Default security group" });
    for (const rule of group.security_group_rules as Resource[]) this.securityGroupRules.update(rule.id, { seeded: true });
    return this.securityGroups.update(group.id, { seeded: true });
  }

  /** Seeds an external network with a subnet that floating IPs are allocated from. */
  seedExternalNetwork(name: string, cidr: string): Resource {
    const network = this.createNetwork({ name, "router:external": true, shared: true }, true);
    this.createSubnet({ network_id: network.id, cidr, ip_version: 4, name: `${name}-subnet`, enable_dhcp: false }, true);
    return this.networks.get(network.id);
  }

  /**
   * Seeds a router of the project, as one made before the deployment: through createRouter, as
   * POST /v2.0/routers makes one, with its gateway on `externalNetworkId` unless that is null.
   */
  seedRouter(name: string, externalNetworkId: string | null): Resource {
    const router = this.createRouter({ name, external_gateway_info: externalNetworkId ? { network_id: externalNetworkId } : null });
    return this.routers.update(router.id, { seeded: true });
  }

  /**
   * Seeds a network of the project with one subnet, as made before the deployment: through
   * createNetwork and createSubnet (its DHCP port included), attached to `routerId` through
   * addRouterInterface when given, as PUT /v2.0/routers/{id}/add_router_interface attaches one.
   * Every port this makes is seeded too, so a destroy that leaves it alone leaves resourceCount() 0.
   * With `ownerProjectId`, the network and subnet belong to that project and are shared with this
   * one (an RBAC access_as_shared policy in Neutron; `shared` here).
   */
  seedNetwork(
    name: string,
    subnet: {
      readonly cidr: string;
      readonly gatewayIp?: string | null;
      readonly allocationPools?: readonly { start: string; end: string }[];
      readonly enableDhcp?: boolean;
    },
    routerId?: string,
    ownerProjectId?: string,
  ): { network: Resource; subnet: Resource } {
    const owner = ownerProjectId === undefined ? {} : { project_id: ownerProjectId, tenant_id: ownerProjectId, shared: true };
    const network = this.networks.update(this.createNetwork({ name, ...owner }).id, { seeded: true });
    const created = this.createSubnet(
      {
        network_id: network.id,
        name,
        cidr: subnet.cidr,
        ip_version: 4,
        ...(subnet.gatewayIp === undefined ? {} : { gateway_ip: subnet.gatewayIp }),
        ...(subnet.allocationPools === undefined ? {} : { allocation_pools: subnet.allocationPools }),
        ...(subnet.enableDhcp === undefined ? {} : { enable_dhcp: subnet.enableDhcp }),
        ...(ownerProjectId === undefined ? {} : { project_id: ownerProjectId, tenant_id: ownerProjectId }),
      },
      true,
    );
    if (routerId !== undefined) this.addRouterInterface(routerId, { subnet_id: created.id });
    for (const port of this.ports.all().filter((p) => p.network_id === network.id)) this.ports.update(port.id, { seeded: true });
    return { network: this.networks.get(network.id), subnet: this.subnets.get(created.id) };
  }

  /**
   * Seeds a floating IP held before the deployment (bastion_floating_ip and its kind): through
   * createFloatingIp, as POST /v2.0/floatingips allocates one, at `address` (null: the next free) on the external
   * network `networkId`; held by `ownerProjectId` when given (as another project's), and
   * associated with `portId` when given (a port of a seeded network, behind a router).
   */
  seedFloatingIp(address: string | null, networkId: string, options: { ownerProjectId?: string; portId?: string } = {}): Resource {
    const owner = options.ownerProjectId === undefined ? {} : { project_id: options.ownerProjectId, tenant_id: options.ownerProjectId };
    const at = address === null ? {} : { floating_ip_address: address };
    const fip = this.createFloatingIp({ floating_network_id: networkId, ...at, port_id: options.portId, ...owner });
    return this.floatingips.update(fip.id, { seeded: true });
  }

  /**
   * Seeds a security group held before the deployment (<role>_security_groups), with Neutron's
   * default egress rules and, when given, one ingress rule; another project's with `ownerProjectId`.
   */
  seedSecurityGroup(name: string, options: { ownerProjectId?: string; ingress?: Record<string, unknown> } = {}): Resource {
    const owner = options.ownerProjectId === undefined ? {} : { project_id: options.ownerProjectId, tenant_id: options.ownerProjectId };
    const group = this.createSecurityGroup({ name, description: `${name}, the project's own`, ...owner });
    if (options.ingress) this.createSecurityGroupRule({ security_group_id: group.id, direction: "ingress", ...options.ingress });
    for (const rule of this.securityGroupRules.all().filter((r) => r.security_group_id === group.id)) {
      this.securityGroupRules.update(rule.id, { seeded: true, ...owner });
    }
    return this.securityGroups.update(group.id, { seeded: true });
  }

  /**
   * Seeds a port of the project on a seeded network, at `address`, as another machine of the
   * project holds one (a floating IP's port that is not the deployment's).
   */
  seedPort(name: string, networkId: string, address: string): Resource {
    const subnet = this.subnets.all().find((s) => s.network_id === networkId)!;
    const port = this.createPort({ name, network_id: networkId, fixed_ips: [{ subnet_id: subnet.id, ip_address: address }] });
    return this.ports.update(port.id, { seeded: true });
  }

  /**
   * `auth` authenticates a request; `roles` gives its token's role names, which decide the
   * fields an admin alone sees (ADMIN_ONLY_FIELDS).
   */
  register(app: FastifyInstance, auth: (request: FastifyRequest) => void, roles: (request: FastifyRequest) => readonly string[]): void {
    const base = "/network/v2.0";
    const admin = (request: FastifyRequest) => roles(request).includes("admin");
    const crud = (plural: string, singular: string, collection: Collection, create: (body: Record<string, unknown>) => Resource) =>
      registerCollection(app, auth, {
        path: `${base}/${plural}`,
        plural: plural.replace(/-/g, "_"),
        singular,
        // neutron/conf/policies/floatingip.py, get_floatingip: a project reads its own floating IPs; an admin every project's.
        // neutron/conf/policies/security_group.py, get_security_group: its own groups, and shared ones.
        list: (request) =>
          filterBy(collection.all(), request.query as Query)
            .filter((r) => admin(request) || this.visible(collection, r))
            .map((r) => this.view(r, singular, admin(request))),
        show: (id, request) => {
          const item = collection.get(id);
          if (!admin(request) && !this.visible(collection, item)) throw notFound(collection.notFoundType, collection.label, id);
          return this.view(item, singular, admin(request));
        },
        create: (body, request) => {
          if (!body) throw new ApiError(400, "BadRequest", `Resource body required: ${singular}`);
          checkLengths(body);
          this.checkQuota(singular as NeutronQuota);
          return this.view(create(body), singular, admin(request));
        },
        update: (id, changes, request) => {
          checkLengths(changes);
          return this.view(this.update(collection, id, changes), singular, admin(request));
        },
        remove: (id) => this.remove(collection, id),
      });

    crud("networks", "network", this.networks, (b) => this.createNetwork(b));
    crud("subnets", "subnet", this.subnets, (b) => this.createSubnet(b));
    crud("routers", "router", this.routers, (b) => this.createRouter(b));
    crud("ports", "port", this.ports, (b) => this.createPort(b));
    crud("floatingips", "floatingip", this.floatingips, (b) => this.createFloatingIp(b));
    crud("security-groups", "security_group", this.securityGroups, (b) => this.createSecurityGroup(b));
    crud("security-group-rules", "security_group_rule", this.securityGroupRules, (b) => this.createSecurityGroupRule(b));

    // neutron/extensions/quotasv2.py, QuotaSetsController.show: the project's limits.
    app.get(`${base}/quotas/:project`, async (request) => {
      auth(request);
      return { quota: { ...this.quotas } };
    });
    app.get(`${base}/quotas/:project/details`, async (request) => {
      auth(request);
      const used = this.usage();
      return {
        quota: Object.fromEntries(
          (Object.keys(this.quotas) as NeutronQuota[]).map((q) => [q, { limit: this.quotas[q], used: used[q] ?? 0, reserved: 0 }]),
        ),
      };
    });

    app.put(`${base}/routers/:id/add_router_interface`, async (request) => {
      auth(request);
      return this.addRouterInterface((request.params as { id: string }).id, request.body as Record<string, string>);
    });
    app.put(`${base}/routers/:id/remove_router_interface`, async (request) => {
      auth(request);
      return this.removeRouterInterface((request.params as { id: string }).id, request.body as Record<string, string>);
    });
    app.put(`${base}/:kind/:id/tags`, async (request) => {
      auth(request);
      const { kind, id } = request.params as { kind: string; id: string };
      const tags = ((request.body as { tags?: string[] })?.tags ?? []).map(String);
      this.update(this.collectionFor(kind), id, { tags });
      return { tags };
    });
  }

  private collectionFor(kind: string): Collection {
    const byKind: Record<string, Collection> = {
      networks: this.networks,
      subnets: this.subnets,
      routers: this.routers,
      ports: this.ports,
      floatingips: this.floatingips,
      "security-groups": this.securityGroups,
    };
    const collection = byKind[kind];
    if (!collection) throw new ApiError(404, "HTTPNotFound", `The resource could not be found: ${kind}`);
    return collection;
  }

  /** What the API shows: internal bookkeeping fields removed, and those for admins alone unless `admin`. */
  private view(resource: Resource, kind: string, admin: boolean): Resource {
    const { seeded: _seeded, created_by_nova: _createdByNova, ...all } = resource;
    const visible: Resource = { ...all } as Resource;
    if (!admin) for (const field of ADMIN_ONLY_FIELDS[kind] ?? []) delete visible[field];
    // neutron/db/external_net_db.py, _extend_subnet_dict_l3: whether its network is external.
    if (kind === "subnet")
      return { ...visible, "router:external": this.networks.get(String(resource.network_id))["router:external"] === true } as Resource;
    // Neutron 29 lists a group's rules with their (empty) tags, and a rule alone without: as the
    // real services answered the provider (__tests__/l3-openstack.test.ts).
    if (kind === "security_group")
      return {
        ...visible,
        security_group_rules: (resource.security_group_rules as Resource[]).map((r) => ({ ...r, tags: [] })),
      } as Resource;
    // neutron_lib/api/definitions/vlantransparent.py, get_vlan_transparent: false unless asked for.
    if (kind === "network") return { ...visible, vlan_transparent: visible.vlan_transparent ?? false } as Resource;
    if (kind === "floatingip") return { ...visible, port_details: this.portDetails(resource.port_id as string | null) } as Resource;
    // neutron/plugins/ml2/extensions/dns_integration.py, _get_dns_names_for_port, under Neutron's
    // default dns_domain (openstacklocal.), where a port's dns_name names none of its addresses.
    if (kind === "port") {
      const dnsAssignment = (resource.fixed_ips as FixedIp[]).map(({ ip_address }) => {
        const hostname = `host-${ip_address.replace(/[.:]/g, "-")}`;
        return { ip_address, hostname, fqdn: `${hostname}.openstacklocal.` };
      });
      return { ...visible, dns_assignment: dnsAssignment } as Resource;
    }
    return visible as Resource;
  }

  /** neutron/db/l3_fip_port_details.py: the associated port's summary, or null. */
  private portDetails(portId: string | null): Record<string, unknown> | null {
    const port = portId ? this.ports.find(portId) : undefined;
    if (!port) return null;
    const { name, network_id, mac_address, admin_state_up, status, device_id, device_owner } = port;
    return { name, network_id, mac_address, admin_state_up, status, device_id, device_owner };
  }

  private common(kind: string, body: Record<string, unknown>): Record<string, unknown> {
    const timestamp = now();
    return {
      // Floating IPs and security group rules have no name (neutron-lib's api/definitions,
      // l3.py and security_groups.py), and rules take no tags (the real cloud's rules list none).
      ...(kind === "floatingip" || kind === "security_group_rule" ? {} : { name: "" }),
      description: "",
      tenant_id: this.projectId,
      project_id: this.projectId,
      ...(kind === "security_group_rule" ? {} : { tags: [] }),
      created_at: timestamp,
      updated_at: timestamp,
      revision_number: 1,
      ...body,
      ...(kind === "network" || kind === "router" || kind === "port" ? { status: "ACTIVE" } : {}),
    };
  }

  private update(collection: Collection, id: string, changes: Record<string, unknown>): Resource {
    const current = collection.get(id);
    const forbidden = ["id", "tenant_id", "project_id", "network_id", "cidr", "ip_version"].filter(
      (key) => key in changes && changes[key] !== current[key],
    );
    if (forbidden.length > 0) throw new ApiError(400, "HTTPBadRequest", `Cannot update read-only attribute ${forbidden[0]}`);
    const extra: Record<string, unknown> = {};
    if (collection === this.ports && "fixed_ips" in changes) {
      extra.fixed_ips = this.allocateFixedIps(current.network_id as string, changes.fixed_ips, id);
    }
    if (collection === this.floatingips && "port_id" in changes) {
      Object.assign(
        extra,
        this.association(
          changes.port_id as string | null,
          changes.fixed_ip_address as string | undefined,
          String(current.floating_network_id),
          current,
        ),
      );
    }
    if (collection === this.ports && "allowed_address_pairs" in changes) {
      extra.allowed_address_pairs = this.addressPairs(changes.allowed_address_pairs, current.mac_address as string);
    }
    if (collection === this.routers && "external_gateway_info" in changes) {
      Object.assign(extra, { external_gateway_info: this.gatewayInfo(changes.external_gateway_info, id) });
    }
    return collection.update(id, {
      ...changes,
      ...extra,
      updated_at: now(),
      revision_number: (current.revision_number as number) + 1,
    });
  }

  private remove(collection: Collection, id: string): void {
    const item = collection.get(id);
    if (collection === this.networks) {
      const inUse = this.ports.all().some((p) => p.network_id === id && p.device_owner !== DHCP_OWNER);
      if (inUse)
        throw new ApiError(
          409,
          "NetworkInUse",
          `Unable to complete operation on network ${id}. There are one or more ports still in use on the network.`,
        );
      for (const port of this.ports.all().filter((p) => p.network_id === id)) this.ports.delete(port.id);
      for (const subnet of this.subnets.all().filter((s) => s.network_id === id)) this.subnets.delete(subnet.id);
    }
    if (collection === this.subnets) {
      // neutron/db/db_base_plugin_v2.py, _subnet_check_ip_allocations: DHCP ports do not count,
      // Neutron removes their address itself.
      const inUse = this.ports
        .all()
        .some((p) => p.device_owner !== DHCP_OWNER && (p.fixed_ips as FixedIp[]).some((ip) => ip.subnet_id === id));
      if (inUse)
        throw new ApiError(
          409,
          "SubnetInUse",
          `Unable to complete operation on subnet ${id}: One or more ports have an IP allocation from this subnet.`,
        );
      this.releaseDhcpAddress(id);
      this.update(this.networks, item.network_id as string, {
        subnets: (this.networks.get(item.network_id as string).subnets as string[]).filter((s) => s !== id),
      });
    }
    if (collection === this.routers) {
      if (this.ports.all().some((p) => p.device_id === id && p.device_owner === "network:router_interface")) {
        throw new ApiError(409, "RouterInUse", `Router ${id} still has ports`);
      }
    }
    if (collection === this.ports && item.device_owner === "network:router_interface") {
      throw new ApiError(
        409,
        "L3PortInUse",
        `Port ${id} cannot be deleted directly via the port API: has device owner network:router_interface.`,
      );
    }
    if (collection === this.securityGroups) {
      if (this.ports.all().some((p) => (p.security_groups as string[]).includes(id))) {
        throw new ApiError(409, "SecurityGroupInUse", `Security Group ${id} in use.`);
      }
      for (const rule of this.securityGroupRules.all().filter((r) => r.security_group_id === id)) this.securityGroupRules.delete(rule.id);
    }
    if (collection === this.securityGroupRules) {
      const group = this.securityGroups.find(item.security_group_id as string);
      if (group)
        this.securityGroups.update(group.id, {
          security_group_rules: (group.security_group_rules as Resource[]).filter((r) => r.id !== id),
        });
    }
    if (collection === this.ports) {
      for (const fip of this.floatingips.all().filter((f) => f.port_id === id)) {
        this.floatingips.update(fip.id, { port_id: null, fixed_ip_address: null, status: "DOWN" });
      }
    }
    collection.delete(id);
  }

  createNetwork(body: Record<string, unknown>, seeded = false): Resource {
    return this.networks.add({
      ...this.common("network", {
        admin_state_up: true,
        shared: false,
        "router:external": false,
        mtu: 1450,
        port_security_enabled: true,
        availability_zone_hints: [],
        availability_zones: ["nova"],
        ipv4_address_scope: null,
        ipv6_address_scope: null,
        qos_policy_id: null,
        dns_domain: "",
        is_default: false,
        l2_adjacency: true,
        ...body,
      }),
      subnets: [],
      seeded,
    });
  }

  createSubnet(body: Record<string, unknown>, seeded = false): Resource {
    const network = this.networks.get(String(body.network_id));
    const cidr = String(body.cidr ?? "");
    if (!ipaddr.IPv4.isValidCIDR(cidr))
      throw new ApiError(400, "HTTPBadRequest", `Invalid input for cidr. Reason: '${cidr}' is not a valid IP subnet.`);
    const [address, prefix] = ipaddr.IPv4.parseCIDR(cidr);
    const network0 = toUint32(ipaddr.IPv4.networkAddressFromCIDR(cidr).toString());
    const size = 2 ** (32 - prefix);
    void address;
    const overlapping = this.subnets
      .all()
      .find(
        (s) => s.network_id === network.id && (inCidr(String(s.cidr).split("/")[0], cidr) || inCidr(cidr.split("/")[0], String(s.cidr))),
      );
    if (overlapping)
      throw new ApiError(
        400,
        "InvalidInput",
        `Invalid input for operation: Requested subnet with cidr: ${cidr} for network: ${network.id} overlaps with another subnet.`,
      );
    const gateway = body.gateway_ip === undefined ? fromUint32(network0 + 1) : (body.gateway_ip as string | null);
    // neutron/ipam/utils.py, check_gateway_invalid_in_subnet: a gateway outside the subnet is
    // accepted (nothing to check it against); inside, it cannot be the network or broadcast address.
    if (gateway !== null && inCidr(gateway, cidr) && [network0, network0 + size - 1].includes(toUint32(gateway))) {
      throw new ApiError(400, "InvalidInput", "Invalid input for operation: Gateway is not valid on subnet.");
    }
    const nameservers = (body.dns_nameservers as string[] | undefined) ?? [];
    const duplicate = nameservers.find((server, index) => nameservers.indexOf(server) !== index);
    // neutron_lib/api/validators/__init__.py, validate_nameservers.
    if (duplicate !== undefined) throw invalidInput("dns_nameservers", `Duplicate nameserver '${duplicate}'`);
    const pools =
      (body.allocation_pools as { start: string; end: string }[] | undefined) ??
      [{ start: fromUint32(network0 + 1), end: fromUint32(network0 + size - 2) }].map((pool) =>
        gateway === fromUint32(network0 + 1) ? { ...pool, start: fromUint32(network0 + 2) } : pool,
      );
    for (const pool of pools) {
      if (!inCidr(pool.start, cidr) || !inCidr(pool.end, cidr) || toUint32(pool.start) > toUint32(pool.end)) {
        throw new ApiError(
          400,
          "InvalidAllocationPool",
          `The allocation pool ${pool.start}-${pool.end} spans beyond the subnet cidr ${cidr}.`,
        );
      }
      if (gateway !== null && toUint32(gateway) >= toUint32(pool.start) && toUint32(gateway) <= toUint32(pool.end)) {
        throw new ApiError(
          409,
          "GatewayConflictWithAllocationPools",
          `Gateway ip ${gateway} conflicts with allocation pool ${pool.start}-${pool.end}`,
        );
      }
    }
    const subnet = this.subnets.add({
      ...this.common("subnet", {
        ip_version: 4,
        enable_dhcp: true,
        dns_nameservers: [],
        host_routes: [],
        ipv6_address_mode: null,
        ipv6_ra_mode: null,
        subnetpool_id: null,
        segment_id: null,
        service_types: [],
        dns_publish_fixed_ip: false,
        ...body,
      }),
      cidr,
      gateway_ip: gateway,
      allocation_pools: pools,
      seeded,
    });
    this.networks.update(network.id, { subnets: [...(network.subnets as string[]), subnet.id] });
    if (subnet.enable_dhcp === true) this.takeDhcpAddress(subnet);
    return subnet;
  }

  /**
   * The DHCP agent's port (neutron/agent/linux/dhcp.py, DeviceManager.setup_dhcp_port): one per
   * network, owner network:dhcp, device id "dhcp<host uuid>-<network id>", with an address from
   * the pool of every DHCP-enabled subnet, taken like any other port's.
   */
  private takeDhcpAddress(subnet: Resource): void {
    const networkId = String(subnet.network_id);
    const existing = this.ports.all().find((p) => p.network_id === networkId && p.device_owner === DHCP_OWNER);
    const address = { subnet_id: subnet.id, ip_address: this.nextFree(subnet) };
    if (existing) {
      this.ports.update(existing.id, { fixed_ips: [...(existing.fixed_ips as FixedIp[]), address] });
      return;
    }
    this.createPort({
      network_id: networkId,
      device_owner: DHCP_OWNER,
      device_id: `dhcp${DHCP_HOST_UUID}-${networkId}`,
      fixed_ips: [address],
      security_groups: [],
      port_security_enabled: false,
    });
  }

  /** Neutron drops the DHCP port's address with its subnet, and the port with its last address. */
  private releaseDhcpAddress(subnetId: string): void {
    for (const port of this.ports.all().filter((p) => p.device_owner === DHCP_OWNER)) {
      const kept = (port.fixed_ips as FixedIp[]).filter((ip) => ip.subnet_id !== subnetId);
      if (kept.length === 0) this.ports.delete(port.id);
      else this.ports.update(port.id, { fixed_ips: kept });
    }
  }

  private usedAddresses(subnetId: string, exceptPort?: string): Set<string> {
    const used = new Set<string>();
    for (const port of this.ports.all()) {
      if (port.id === exceptPort) continue;
      for (const ip of port.fixed_ips as FixedIp[]) if (ip.subnet_id === subnetId) used.add(ip.ip_address);
    }
    for (const fip of this.floatingips.all()) used.add(String(fip.floating_ip_address));
    for (const router of this.routers.all()) {
      const info = router.external_gateway_info as { external_fixed_ips?: FixedIp[] } | null;
      for (const ip of info?.external_fixed_ips ?? []) if (ip.subnet_id === subnetId) used.add(ip.ip_address);
    }
    return used;
  }

  /**
   * A free address from the subnet's allocation pools, picked at random among the first 1000
   * free ones, as neutron/ipam/drivers/neutrondb_ipam/driver.py (_generate_ips, MAX_WIN) does;
   * 409 when there is none.
   */
  private nextFree(subnet: Resource, exceptPort?: string): string {
    const used = this.usedAddresses(subnet.id, exceptPort);
    const window: string[] = [];
    for (const pool of subnet.allocation_pools as { start: string; end: string }[]) {
      for (let n = toUint32(pool.start); n <= toUint32(pool.end) && window.length < MAX_WIN; n++) {
        const candidate = fromUint32(n);
        if (!used.has(candidate) && candidate !== subnet.gateway_ip) window.push(candidate);
      }
    }
    if (window.length === 0) {
      throw new ApiError(409, "IpAddressGenerationFailure", `No more IP addresses available on network ${subnet.network_id}.`);
    }
    return window[randomInt(window.length)];
  }

  private allocateFixedIps(networkId: string, requested: unknown, exceptPort?: string): FixedIp[] {
    const subnets = this.subnets.all().filter((s) => s.network_id === networkId);
    const wanted = (requested as Partial<FixedIp>[] | undefined) ?? (subnets[0] ? [{ subnet_id: subnets[0].id }] : []);
    const result: FixedIp[] = [];
    for (const ip of wanted) {
      const subnet = ip.subnet_id
        ? this.subnets.get(ip.subnet_id)
        : subnets.find((s) => ip.ip_address !== undefined && inCidr(ip.ip_address, String(s.cidr)));
      if (!subnet || subnet.network_id !== networkId) {
        throw new ApiError(
          400,
          "InvalidInput",
          `Invalid input for operation: IP address ${ip.ip_address ?? ""} is not a valid IP for the specified subnet.`,
        );
      }
      if (ip.ip_address !== undefined) {
        if (!inCidr(ip.ip_address, String(subnet.cidr))) {
          throw new ApiError(400, "InvalidIpForSubnet", `IP address ${ip.ip_address} is not a valid IP for the specified subnet.`);
        }
        const taken = this.usedAddresses(subnet.id, exceptPort).has(ip.ip_address) || result.some((r) => r.ip_address === ip.ip_address);
        if (taken) {
          throw new ApiError(409, "IpAddressAlreadyAllocated", `IP address ${ip.ip_address} already allocated in subnet ${subnet.id}`);
        }
        result.push({ subnet_id: subnet.id, ip_address: ip.ip_address });
      } else {
        result.push({ subnet_id: subnet.id, ip_address: this.nextFree(subnet, exceptPort) });
      }
    }
    return result;
  }

  /** Neutron fills in the port's own MAC for an address pair given without one. */
  private addressPairs(pairs: unknown, mac: string): { ip_address: string; mac_address: string }[] {
    return ((pairs as { ip_address: string; mac_address?: string }[] | undefined) ?? []).map((pair) => ({
      ip_address: pair.ip_address,
      mac_address: pair.mac_address ?? mac,
    }));
  }

  createPort(body: Record<string, unknown>): Resource {
    const network = this.networks.get(String(body.network_id));
    const mac = (body.mac_address as string | undefined) ?? macAddress();
    const securityGroups = (body.security_groups as string[] | undefined) ?? [this.defaultSecurityGroup().id];
    // neutron/db/securitygroups_db.py, _get_security_groups_on_port: a port takes its project's
    // groups and shared ones; another project's is "not found" to it.
    for (const group of securityGroups) {
      if (!this.visible(this.securityGroups, this.securityGroups.get(group))) {
        throw notFound(this.securityGroups.notFoundType, this.securityGroups.label, group);
      }
    }
    return this.ports.add({
      ...this.common("port", {
        admin_state_up: true,
        device_id: "",
        device_owner: "",
        allowed_address_pairs: [],
        extra_dhcp_opts: [],
        binding_vnic_type: "normal",
        "binding:vnic_type": "normal",
        "binding:host_id": "",
        "binding:profile": {},
        "binding:vif_details": {},
        "binding:vif_type": "unbound",
        port_security_enabled: network.port_security_enabled,
        dns_name: "",
        dns_assignment: [],
        qos_policy_id: null,
        qos_network_policy_id: null,
        propagate_uplink_status: false,
        ...body,
      }),
      mac_address: mac,
      allowed_address_pairs: this.addressPairs(body.allowed_address_pairs, mac),
      network_id: network.id,
      security_groups: body.port_security_enabled === false ? [] : securityGroups,
      fixed_ips: this.allocateFixedIps(network.id, body.fixed_ips),
    });
  }

  private gatewayInfo(info: unknown, routerId?: string) {
    const requested = info as { network_id?: string; enable_snat?: boolean; external_fixed_ips?: FixedIp[] } | null | undefined;
    if (!requested?.network_id) return null;
    const network = this.networks.get(requested.network_id);
    const subnet = this.subnets.all().find((s) => s.network_id === network.id);
    if (!subnet) throw new ApiError(400, "BadRequest", `Bad router request: No subnets defined on external network ${network.id}.`);
    const current = routerId ? (this.routers.find(routerId)?.external_gateway_info as { external_fixed_ips?: FixedIp[] } | null) : null;
    return {
      network_id: network.id,
      enable_snat: requested.enable_snat ?? true,
      external_fixed_ips: current?.external_fixed_ips ??
        requested.external_fixed_ips ?? [{ subnet_id: subnet.id, ip_address: this.nextFree(subnet) }],
    };
  }

  createRouter(body: Record<string, unknown>): Resource {
    return this.routers.add({
      ...this.common("router", {
        admin_state_up: true,
        distributed: false,
        ha: false,
        availability_zone_hints: [],
        availability_zones: ["nova"],
        routes: [],
        flavor_id: null,
        ...body,
      }),
      external_gateway_info: this.gatewayInfo(body.external_gateway_info),
    });
  }

  private addRouterInterface(routerId: string, body: Record<string, string>) {
    const router = this.routers.get(routerId);
    let port: Resource;
    if (body.subnet_id) {
      const subnet = this.subnets.get(body.subnet_id);
      if (!subnet.gateway_ip) throw new ApiError(400, "BadRequest", `Bad router request: Subnet ${subnet.id} does not have a gateway IP.`);
      const attached = this.ports
        .all()
        .some((p) => p.device_id === routerId && (p.fixed_ips as FixedIp[]).some((ip) => ip.subnet_id === subnet.id));
      if (attached) throw new ApiError(400, "BadRequest", `Bad router request: Router already has a port on subnet ${subnet.id}.`);
      this.checkRouterSubnetOverlap(router, subnet);
      port = this.createPort({
        network_id: subnet.network_id,
        fixed_ips: [{ subnet_id: subnet.id, ip_address: subnet.gateway_ip }],
        device_id: routerId,
        device_owner: "network:router_interface",
        security_groups: [],
        port_security_enabled: false,
      });
    } else if (body.port_id) {
      port = this.update(this.ports, body.port_id, { device_id: routerId, device_owner: "network:router_interface" });
    } else {
      throw new ApiError(400, "BadRequest", "Bad router request: Either subnet_id or port_id must be specified.");
    }
    const fixedIps = port.fixed_ips as FixedIp[];
    // neutron/db/l3_db.py, _make_router_interface_info: the project, not the tenant.
    return {
      id: router.id,
      project_id: this.projectId,
      port_id: port.id,
      network_id: port.network_id,
      subnet_id: fixedIps[0]?.subnet_id,
      subnet_ids: fixedIps.map((ip) => ip.subnet_id),
    };
  }

  /**
   * neutron/db/l3_db.py, _check_for_dup_router_subnets and _raise_on_subnets_overlap: a new
   * interface's subnet may not overlap a subnet the router already has, its external gateway
   * network's subnets included.
   */
  private checkRouterSubnetOverlap(router: Resource, subnet: Resource): void {
    const gatewayNetwork = (router.external_gateway_info as { network_id?: string } | null)?.network_id;
    const routerSubnets = [
      ...this.subnets.all().filter((s) => s.network_id === gatewayNetwork),
      ...this.ports
        .all()
        .filter((p) => p.device_id === router.id && p.device_owner === "network:router_interface")
        .flatMap((p) => (p.fixed_ips as FixedIp[]).map((ip) => this.subnets.get(ip.subnet_id))),
    ];
    for (const existing of routerSubnets) {
      const [a, b] = [String(existing.cidr), String(subnet.cidr)];
      if (inCidr(a.split("/")[0], b) || inCidr(b.split("/")[0], a)) {
        throw badRequest("router", `Cidr ${b} of subnet ${subnet.id} overlaps with cidr ${a} of subnet ${existing.id}`);
      }
    }
  }

  private removeRouterInterface(routerId: string, body: Record<string, string>) {
    this.routers.get(routerId);
    const port = this.ports
      .all()
      .find(
        (p) =>
          p.device_id === routerId &&
          p.device_owner === "network:router_interface" &&
          (p.id === body.port_id || (p.fixed_ips as FixedIp[]).some((ip) => ip.subnet_id === body.subnet_id)),
      );
    if (!port) {
      throw new ApiError(
        404,
        "RouterInterfaceNotFoundForSubnet",
        `Router ${routerId} has no interface on subnet ${body.subnet_id ?? body.port_id}`,
      );
    }
    // neutron/db/l3_db.py, _confirm_router_interface_not_in_use: a floating IP on a port of the
    // interface's subnet still needs it.
    for (const ip of port.fixed_ips as FixedIp[]) {
      const cidr = String(this.subnets.get(ip.subnet_id).cidr);
      const needed = this.floatingips.all().some((fip) => {
        const fixed = this.ports.find(String(fip.port_id));
        return fixed && fip.fixed_ip_address && inCidr(String(fip.fixed_ip_address), cidr) && fixed.network_id === port.network_id;
      });
      if (needed) {
        throw new ApiError(
          409,
          "RouterInterfaceInUseByFloatingIP",
          `Router interface for subnet ${ip.subnet_id} on router ${routerId} cannot be deleted, as it is required by one or more floating IPs.`,
        );
      }
    }
    this.ports.delete(port.id);
    const fixedIps = port.fixed_ips as FixedIp[];
    return {
      id: routerId,
      project_id: this.projectId,
      port_id: port.id,
      network_id: port.network_id,
      subnet_id: fixedIps[0]?.subnet_id,
      subnet_ids: fixedIps.map((ip) => ip.subnet_id),
    };
  }

  createFloatingIp(body: Record<string, unknown>): Resource {
    const network = this.networks.get(String(body.floating_network_id));
    if (network["router:external"] !== true)
      throw new ApiError(400, "BadRequest", `Network ${network.id} is not a valid external network.`);
    const subnet = this.subnets.all().find((s) => s.network_id === network.id);
    if (!subnet) throw new ApiError(400, "BadRequest", `No subnets on external network ${network.id}.`);
    const address = (body.floating_ip_address as string | undefined) ?? this.nextFree(subnet);
    if (this.usedAddresses(subnet.id).has(address)) {
      throw new ApiError(409, "IpAddressAlreadyAllocated", `IP address ${address} already allocated in subnet ${subnet.id}`);
    }
    const association = this.association(
      body.port_id as string | undefined,
      body.fixed_ip_address as string | undefined,
      network.id,
      undefined,
    );
    return this.floatingips.add({
      ...this.common("floatingip", { dns_domain: "", dns_name: "", port_details: null, qos_policy_id: null, router_id: null, ...body }),
      floating_network_id: network.id,
      floating_ip_address: address,
      ...association,
    });
  }

  /**
   * neutron/db/l3_db.py, _check_and_get_fip_assoc with _internal_fip_assoc_data and
   * _get_router_for_floatingip: the port must be one a floating IP can serve (not DHCP's), the
   * fixed address must be the port's, a router with a gateway on the floating IP's network must
   * have an interface on that address's subnet (else 404), and no other floating IP of that
   * network may hold the same fixed address (409).
   */
  private association(portId: string | undefined | null, fixedIp: string | undefined | null, externalNetworkId: string, fip?: Resource) {
    if (!portId) {
      if (fixedIp) throw badRequest("floatingip", "fixed_ip_address cannot be specified without a port_id");
      return { port_id: null, fixed_ip_address: null, status: "DOWN", router_id: null };
    }
    const port = this.ports.get(portId);
    // The message is upstream's as it is: its %(id)s is never filled in.
    if (port.device_owner === DHCP_OWNER) throw badRequest("floatingip", "Port %(id)s is unable to be assigned a floating IP");
    const fixedIps = (port.fixed_ips as FixedIp[]).filter((ip) => ipaddr.IPv4.isValidFourPartDecimal(ip.ip_address));
    let internal: FixedIp | undefined;
    if (fixedIp) {
      internal = fixedIps.find((ip) => ip.ip_address === fixedIp);
      if (!internal) throw badRequest("floatingip", `Port ${port.id} does not have fixed ip ${fixedIp}`);
    } else {
      if (fixedIps.length === 0)
        throw badRequest("floatingip", `Cannot add floating IP to port ${port.id} that has no fixed IPv4 addresses`);
      if (fixedIps.length > 1) {
        throw badRequest(
          "floatingip",
          `Port ${port.id} has multiple fixed IPv4 addresses.  Must provide a specific IPv4 address when assigning a floating IP`,
        );
      }
      internal = fixedIps[0];
    }
    const router = this.routers
      .all()
      .find(
        (r) =>
          (r.external_gateway_info as { network_id?: string } | null)?.network_id === externalNetworkId &&
          this.ports
            .all()
            .some(
              (p) =>
                p.device_id === r.id &&
                p.device_owner === "network:router_interface" &&
                (p.fixed_ips as FixedIp[]).some((ip) => ip.subnet_id === internal?.subnet_id),
            ),
      );
    if (!router) {
      throw new ApiError(
        404,
        "ExternalGatewayForFloatingIPNotFound",
        `External network ${externalNetworkId} is not reachable from subnet ${internal.subnet_id}.  Therefore, cannot associate Port ${port.id} with a Floating IP.`,
      );
    }
    const holder = this.floatingips
      .all()
      .find(
        (f) =>
          f.id !== fip?.id &&
          f.port_id === port.id &&
          f.floating_network_id === externalNetworkId &&
          f.fixed_ip_address === internal?.ip_address,
      );
    if (holder && fip?.port_id !== port.id) {
      throw new ApiError(
        409,
        "FloatingIPPortAlreadyAssociated",
        `Cannot associate floating IP ${String(fip?.floating_ip_address ?? null)} (${fip?.id ?? ""}) with port ${port.id} using fixed IP ${internal.ip_address}, as that fixed IP already has a floating IP on external network ${externalNetworkId}.`,
      );
    }
    return { port_id: port.id, fixed_ip_address: internal.ip_address, status: "ACTIVE", router_id: router.id };
  }

  /** Whether the project's member sees `item`: every project's network objects but its own floating IPs and security groups. */
  private visible(collection: Collection, item: Resource): boolean {
    if (collection !== this.floatingips && collection !== this.securityGroups) return true;
    return item.project_id === this.projectId || (collection === this.securityGroups && item.shared === true);
  }

  private defaultSecurityGroup(): Resource {
    return (
      this.securityGroups.all().find((g) => g.name === "default") ??
      this.createSecurityGroup({ name: "default", description: "Default security group" })
    );
  }

  /**
   * A group with Neutron's default rules (the templates of neutron/db/migration/alembic_migrations/
   * versions/2023.2/expand/c33da356b165_security_group_default_rules.py, applied by
   * neutron/db/securitygroups_db.py): egress for IPv4 and IPv6 in every group, and in the project's
   * default group also ingress from the group itself, each marked belongs_to_default_sg.
   */
  createSecurityGroup(body: Record<string, unknown>): Resource {
    const group = this.securityGroups.add({
      ...this.common("security_group", { stateful: true, shared: false, ...body }),
      security_group_rules: [],
    });
    const isDefault = body.name === "default";
    for (const ethertype of ["IPv4", "IPv6"]) {
      this.createSecurityGroupRule({ security_group_id: group.id, direction: "egress", ethertype, belongs_to_default_sg: isDefault });
    }
    if (isDefault) {
      for (const ethertype of ["IPv4", "IPv6"]) {
        this.createSecurityGroupRule({
          security_group_id: group.id,
          direction: "ingress",
          ethertype,
          remote_group_id: group.id,
          belongs_to_default_sg: true,
        });
      }
    }
    return this.securityGroups.get(group.id);
  }

  createSecurityGroupRule(body: Record<string, unknown>): Resource {
    const group = this.securityGroups.get(String(body.security_group_id));
    if (body.direction !== "ingress" && body.direction !== "egress") {
      throw new ApiError(
        400,
        "HTTPBadRequest",
        `Invalid input for direction. Reason: ${String(body.direction)} is not in ['ingress', 'egress'].`,
      );
    }
    if (body.remote_group_id) this.securityGroups.get(String(body.remote_group_id));
    const rule = this.securityGroupRules.add({
      ...this.common("security_group_rule", {
        protocol: null,
        port_range_min: null,
        port_range_max: null,
        remote_ip_prefix: null,
        remote_group_id: null,
        remote_address_group_id: null,
        normalized_cidr: null,
        belongs_to_default_sg: false,
        ...body,
      }),
      ethertype: body.ethertype ?? "IPv4",
    });
    const duplicate = (group.security_group_rules as Resource[]).find((r) =>
      ["direction", "ethertype", "protocol", "port_range_min", "port_range_max", "remote_ip_prefix", "remote_group_id"].every(
        (k) => (r[k] ?? null) === (rule[k] ?? null),
      ),
    );
    if (duplicate) {
      this.securityGroupRules.delete(rule.id);
      throw new ApiError(409, "SecurityGroupRuleExists", `Security group rule already exists. Rule id is ${duplicate.id}.`);
    }
    const withNormalizedCidr = this.securityGroupRules.update(rule.id, { normalized_cidr: rule.remote_ip_prefix ?? null });
    this.securityGroups.update(group.id, { security_group_rules: [...(group.security_group_rules as Resource[]), withNormalizedCidr] });
    return withNormalizedCidr;
  }
}
