import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import * as ipaddr from "ipaddr.js";
import type { Neutron } from "./neutron";
import { ApiError, Collection, CollectionRoutes, filterBy, registerCollection, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;
type Body = Record<string, unknown>;

/**
 * Octavia's quotas (octavia/common/config.py, quotas: every default_*_quota is -1, unlimited);
 * tests change them per double.
 */
export const OCTAVIA_DEFAULT_QUOTAS = {
  load_balancer: -1,
  listener: -1,
  member: -1,
  pool: -1,
  health_monitor: -1,
  l7policy: -1,
  l7rule: -1,
};
export type OctaviaQuota = keyof typeof OCTAVIA_DEFAULT_QUOTAS;

export interface OctaviaOptions {
  /**
   * Octavia's own availability zones (an operator creates them with the availability zone API;
   * they are not Nova's). @default none, as devstack
   */
  readonly availabilityZones?: readonly string[];
  /**
   * oslo.policy's [oslo_policy] enforce_new_defaults, True by default since oslo.policy 4.4.0
   * (which Octavia requires): only the Keystone default roles count (member to write, reader to
   * read); false also honours the deprecated load-balancer_* roles. @default true
   */
  readonly enforceNewDefaults?: boolean;
}

// octavia_lib/common/constants.py.
const LISTENER_PROTOCOLS = ["TCP", "HTTPS", "HTTP", "TERMINATED_HTTPS", "UDP", "SCTP", "PROMETHEUS"];
const POOL_PROTOCOLS = ["TCP", "HTTP", "HTTPS", "PROXY", "PROXYV2", "UDP", "SCTP"];
const LB_ALGORITHMS = ["LEAST_CONNECTIONS", "ROUND_ROBIN", "SOURCE_IP", "SOURCE_IP_PORT"];
const HEALTH_MONITOR_TYPES = ["HTTP", "HTTPS", "PING", "TCP", "TLS-HELLO", "UDP-CONNECT", "SCTP"];
const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "TRACE", "OPTIONS", "CONNECT", "PATCH"];

/** octavia/common/constants.py, VALID_LISTENER_POOL_PROTOCOL_MAP. */
const LISTENER_POOL_PROTOCOLS: Record<string, string[]> = {
  TCP: ["HTTP", "HTTPS", "PROXY", "PROXYV2", "TCP"],
  HTTP: ["HTTP", "PROXY", "PROXYV2"],
  HTTPS: ["HTTPS", "PROXY", "PROXYV2", "TCP"],
  TERMINATED_HTTPS: ["HTTP", "PROXY", "PROXYV2"],
  UDP: ["UDP"],
  SCTP: ["SCTP"],
  PROMETHEUS: [],
};

/** octavia/common/constants.py, L4_PROTOCOL_MAP: listeners on one port conflict by layer-4 protocol. */
const L4_PROTOCOL: Record<string, string> = {
  TCP: "TCP",
  HTTP: "TCP",
  HTTPS: "TCP",
  TERMINATED_HTTPS: "TCP",
  PROXY: "TCP",
  PROXYV2: "TCP",
  UDP: "UDP",
  SCTP: "SCTP",
  PROMETHEUS: "TCP",
};

/** octavia/common/config.py, networking.reserved_ips. */
const RESERVED_IPS = ["169.254.169.254"];

const PENDING = ["PENDING_CREATE", "PENDING_UPDATE", "PENDING_DELETE"];

/** Octavia's timestamps: seconds, no zone (octavia/api/common/types.py renders the DB's datetimes). */
function octaviaNow(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "");
}

/** An Octavia API error; the error handler renders it as wsme does ({faultcode, faultstring, debuginfo}). */
function octaviaError(status: number, message: string): ApiError {
  return new ApiError(status, status >= 500 ? "Server" : "Client", message);
}

/** wsme/exc.py, InvalidInput: how wsme refuses a body attribute its type does not accept. */
function invalidInput(field: string, value: unknown, reason: string): ApiError {
  return octaviaError(400, `Invalid input for field/attribute ${field}. Value: '${String(value)}'. ${reason}`);
}

/** octavia/common/exceptions.py, ValidationException. */
function validationFailure(detail: string): ApiError {
  return octaviaError(400, `Validation failure: ${detail}`);
}

/** octavia/common/exceptions.py, ImmutableObject. */
function immutable(resource: string, id: string): ApiError {
  return octaviaError(409, `${resource} ${id} is immutable and cannot be updated.`);
}

/**
 * The attribute checks wsme makes while it reads a body (wsme/rest/json.py, fromjson, and
 * wsme/types.py): a mandatory attribute missing, an integer out of range, a value outside an
 * Enum (whose values wsme keeps in a set, so their order in the message is not fixed), a bad UUID
 * or IP address (octavia/api/common/types.py, IPAddressType).
 */
class Attributes {
  constructor(private readonly body: Body) {}

  has(field: string): boolean {
    return this.body[field] !== undefined && this.body[field] !== null;
  }

  mandatory(field: string): this {
    if (!this.has(field)) throw invalidInput(field, "None", "Mandatory field missing.");
    return this;
  }

  integer(field: string, minimum?: number, maximum?: number): this {
    if (!this.has(field)) return this;
    const value = this.body[field];
    if (typeof value !== "number" || !Number.isInteger(value)) throw invalidInput(field, value, "Value should be integer");
    if (minimum !== undefined && value < minimum) throw invalidInput(field, value, `Value should be greater or equal to ${minimum}`);
    if (maximum !== undefined && value > maximum) throw invalidInput(field, value, `Value should be lower or equal to ${maximum}`);
    return this;
  }

  oneOf(field: string, values: string[]): this {
    if (this.has(field) && !values.includes(String(this.body[field]))) {
      throw invalidInput(field, this.body[field], `Value should be one of: ${values.join(", ")}`);
    }
    return this;
  }

  uuid(field: string): this {
    const value = this.body[field];
    const uuid = /^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$/i;
    if (this.has(field) && !uuid.test(String(value))) throw invalidInput(field, value, "Value should be UUID format");
    return this;
  }

  ipAddress(field: string): this {
    const value = String(this.body[field]);
    if (this.has(field) && !ipaddr.IPv4.isValidFourPartDecimal(value) && !ipaddr.IPv6.isValid(value)) {
      throw invalidInput(field, value, "Value should be IPv4 or IPv6 format");
    }
    return this;
  }
}

/** One kind of object under a load balancer, as the API serves it (Octavia.childKinds). */
interface ChildKind {
  readonly collection: Collection;
  /** Its path below lbaas/. */
  readonly path: string;
  /** Its keys in bodies. */
  readonly plural: string;
  readonly singular: string;
  readonly view: (item: Resource) => unknown;
  /** The object above it in the path (a member's pool), which must exist. @default none */
  readonly parent?: (request: FastifyRequest) => Resource;
  /** The load balancer whose pending change a read of the item advances. */
  readonly loadBalancerOf: (item: Resource) => string;
  readonly create: (body: Body, parent?: Resource) => Resource;
  /** The attributes a PUT may change; wsme refuses the others (read-only or unknown). */
  readonly updatable: string[];
  /** wsme's checks of what a PUT changes. */
  readonly check: (changes: Body) => void;
  /** The lock scope: locks what a change to `item` locks, the item itself in `status`. */
  readonly lock: (item: Resource, status: string) => void;
  /** Whether a PUT stamps updated_at (the double's listeners and pools do, its members and monitors not). */
  readonly stampsUpdate: boolean;
}

/**
 * Octavia v2 (octavia/api/v2/controllers/): load balancers with a VIP port in Neutron, listeners,
 * pools, members (one by one or in a batch) and health monitors, the amphora provider's way. A
 * change under a load balancer makes it PENDING_UPDATE (the object itself PENDING_CREATE,
 * PENDING_UPDATE or PENDING_DELETE) until the provider finishes it, which here takes
 * `pendingReads` reads of the load balancer or its objects; meanwhile any other change under it
 * is refused with 409, as the repositories' test_and_set_* refuse it.
 */
export class Octavia {
  readonly loadBalancers = new Collection("Load Balancer", "NotFound");
  readonly listeners = new Collection("Listener", "NotFound");
  readonly pools = new Collection("Pool", "NotFound");
  readonly members = new Collection("Member", "NotFound");
  readonly healthMonitors = new Collection("Health Monitor", "NotFound");
  /** The project's quota limits; a test may change any of them. */
  readonly quotas: Record<OctaviaQuota, number> = { ...OCTAVIA_DEFAULT_QUOTAS };
  /** Reads of a load balancer (or its objects) that still show a change pending. */
  pendingReads = 1;
  readonly availabilityZones: readonly string[];
  private readonly enforceNewDefaults: boolean;

  constructor(
    private readonly projectId: string,
    private readonly neutron: Neutron,
    options: OctaviaOptions = {},
  ) {
    this.availabilityZones = options.availabilityZones ?? [];
    this.enforceNewDefaults = options.enforceNewDefaults ?? true;
  }

  /**
   * octavia/policies/base.py: load-balancer:read for GETs, load-balancer:write for changes, which
   * octavia/policies/keystone_default_roles.py grants to reader and member (admin: both), and the
   * deprecated rules of octavia/policies/advanced_rbac.py to load-balancer_observer and
   * load-balancer_member (load-balancer_admin: both) while enforce_new_defaults is off. Refusal is
   * PolicyForbidden (octavia/common/exceptions.py).
   */
  private authorize(method: string, roles: readonly string[]): void {
    const write = method !== "GET" && method !== "HEAD";
    const allowed = write ? ["member", "admin"] : ["reader", "member", "admin"];
    if (!this.enforceNewDefaults) {
      allowed.push(
        ...(write
          ? ["load-balancer_member", "load-balancer_admin"]
          : ["load-balancer_observer", "load-balancer_global_observer", "load-balancer_member", "load-balancer_admin"]),
      );
    }
    if (!roles.some((role) => allowed.includes(role))) throw octaviaError(403, "Policy does not allow this request to be performed.");
  }

  resourceCount(): number {
    return [this.loadBalancers, this.listeners, this.pools, this.members, this.healthMonitors].reduce((sum, c) => sum + c.size, 0);
  }

  /** `roles` authenticates a request and gives its token's role names. */
  register(app: FastifyInstance, roles: (request: FastifyRequest) => readonly string[]): void {
    const auth = (request: FastifyRequest) => this.authorize(request.method, roles(request));
    // octavia/api/root_controller.py: v2 is served as /v2 and /v2.0 (gophercloud uses the latter).
    for (const version of ["v2", "v2.0"]) this.registerVersion(app, auth, `/load-balancer/${version}`);
  }

  private registerVersion(app: FastifyInstance, auth: (request: FastifyRequest) => void, prefix: string): void {
    const base = `${prefix}/lbaas`;
    const id = (request: FastifyRequest) => (request.params as { id: string }).id;

    registerCollection(app, auth, {
      path: `${base}/loadbalancers`,
      plural: "loadbalancers",
      singular: "loadbalancer",
      listExtras: { loadbalancers_links: [] },
      list: (request) => {
        for (const lb of this.loadBalancers.all()) this.touch(lb.id);
        return this.list(this.loadBalancers, request).map((lb) => this.loadBalancerView(lb));
      },
      show: (lbId) => {
        this.touch(lbId);
        return this.loadBalancerView(this.get(this.loadBalancers, lbId));
      },
      create: (body) => this.loadBalancerView(this.createLoadBalancer(body ?? {})),
      update: (lbId, changes) => {
        const lb = this.get(this.loadBalancers, lbId);
        this.testLbStatus(lb, "PENDING_UPDATE");
        const allowed = this.updatable(changes, ["name", "description", "admin_state_up", "tags", "vip_qos_policy_id"]);
        return this.loadBalancerView(this.loadBalancers.update(lb.id, { ...allowed, updated_at: octaviaNow() }));
      },
      remove: (lbId, request) => {
        const cascade = ["true", "True", "1", "yes", "on"].includes(String((request.query as Query).cascade ?? ""));
        this.deleteLoadBalancer(this.get(this.loadBalancers, lbId), cascade);
      },
    });
    app.get(`${base}/loadbalancers/:id/status`, async (request) => {
      auth(request);
      this.touch(id(request));
      return { statuses: { loadbalancer: this.statusTree(this.get(this.loadBalancers, id(request))) } };
    });

    const poolOf = (request: FastifyRequest) => this.get(this.pools, (request.params as { pool: string }).pool);
    for (const kind of this.childKinds(poolOf)) registerCollection(app, auth, this.childRoutes(`${base}/${kind.path}`, kind));
    // octavia/api/v2/controllers/member.py, MembersController.put: the pool's members at once.
    app.put(`${base}/pools/:pool/members`, async (request, reply) => {
      auth(request);
      const additiveOnly = ["true", "True", "1"].includes(String((request.query as Query).additive_only ?? ""));
      const wanted = ((request.body as { members?: Body[] } | undefined)?.members ?? []) as Body[];
      this.batchUpdateMembers(poolOf(request), wanted, additiveOnly);
      return reply.code(202).send();
    });

    // octavia/api/v2/controllers/quotas.py, QuotasController.get_one and get_all.
    const quota = (project: string) => ({
      project_id: project,
      ...this.quotas,
      loadbalancer: this.quotas.load_balancer,
      healthmonitor: this.quotas.health_monitor,
    });
    app.get(`${base}/quotas/:project`, async (request) => {
      auth(request);
      return { quota: quota((request.params as { project: string }).project) };
    });
    app.get(`${base}/quotas`, async (request) => {
      auth(request);
      return { quotas: [quota(this.projectId)], quotas_links: [] };
    });
  }

  /**
   * The objects under a load balancer, one table each (octavia/api/v2/controllers/listener.py,
   * pool.py, member.py, health_monitor.py): what a PUT may change and wsme's checks of it, and the
   * lock scope. A listener or a pool locks its load balancer with itself (and a pool its
   * listeners); a member or a monitor locks its pool (_test_lb_and_listener_and_pool_statuses),
   * and is marked itself.
   */
  private childKinds(poolOf: (request: FastifyRequest) => Resource): ChildKind[] {
    const markedUnderPool = (collection: Collection, pool: (item: Resource) => Resource) => (item: Resource, status: string) => {
      this.lockPool(pool(item), "PENDING_UPDATE");
      collection.update(item.id, { provisioning_status: status });
    };
    return [
      {
        collection: this.listeners,
        path: "listeners",
        plural: "listeners",
        singular: "listener",
        view: (listener) => this.listenerView(listener),
        loadBalancerOf: (listener) => String(listener.load_balancer_id),
        create: (body) => this.createListener(body),
        updatable: ["name", "description", "admin_state_up", "connection_limit", "tags"],
        check: (changes) => new Attributes(changes).integer("connection_limit", -1),
        lock: (listener, status) => this.lock(String(listener.load_balancer_id), { listeners: [listener.id], status }),
        stampsUpdate: true,
      },
      {
        collection: this.pools,
        path: "pools",
        plural: "pools",
        singular: "pool",
        view: (pool) => this.poolView(pool),
        loadBalancerOf: (pool) => String(pool.load_balancer_id),
        create: (body) => this.createPool(body),
        updatable: ["name", "description", "admin_state_up", "lb_algorithm", "tags"],
        check: (changes) => new Attributes(changes).oneOf("lb_algorithm", LB_ALGORITHMS),
        // PoolsController.delete: not while an L7 policy uses it (the double has none); its
        // members and health monitor go with it.
        lock: (pool, status) => this.lock(String(pool.load_balancer_id), { listeners: this.poolListeners(pool.id), pool: pool.id, status }),
        stampsUpdate: true,
      },
      {
        collection: this.members,
        path: "pools/:pool/members",
        plural: "members",
        singular: "member",
        parent: poolOf,
        view: (member) => this.memberView(member),
        loadBalancerOf: (member) => this.loadBalancerOfPool(String(member.pool_id)),
        create: (body, pool) => this.createMember(pool as Resource, body),
        updatable: ["name", "weight", "admin_state_up", "backup", "tags"],
        check: (changes) => new Attributes(changes).integer("weight", 0, 256),
        lock: markedUnderPool(this.members, (member) => this.get(this.pools, String(member.pool_id))),
        stampsUpdate: false,
      },
      {
        collection: this.healthMonitors,
        path: "healthmonitors",
        plural: "healthmonitors",
        singular: "healthmonitor",
        view: (monitor) => this.healthMonitorView(monitor),
        loadBalancerOf: (monitor) => this.loadBalancerOfPool(String(monitor.pool_id)),
        create: (body) => this.createHealthMonitor(body),
        updatable: ["name", "delay", "timeout", "max_retries", "max_retries_down", "admin_state_up", "tags"],
        check: (changes) =>
          new Attributes(changes)
            .integer("delay", 0)
            .integer("timeout", 0)
            .integer("max_retries", 1, 10)
            .integer("max_retries_down", 1, 10),
        lock: markedUnderPool(this.healthMonitors, (monitor) => this.get(this.pools, String(monitor.pool_id))),
        stampsUpdate: false,
      },
    ];
  }

  /**
   * A child kind's routes. A read advances its load balancer's pending change first (a member's
   * through its pool); a member is found only under its own pool (member.py, _validate_pool_id).
   */
  private childRoutes(path: string, kind: ChildKind): CollectionRoutes {
    const find = (itemId: string, parent?: Resource) => {
      const item = this.get(kind.collection, itemId);
      if (parent && item.pool_id !== parent.id) throw octaviaError(404, `${kind.collection.label} ${item.id} not found.`);
      return item;
    };
    return {
      path,
      plural: kind.plural,
      singular: kind.singular,
      listExtras: { [`${kind.plural}_links`]: [] },
      list: (request) => {
        const parent = kind.parent?.(request);
        if (parent) this.touch(String(parent.load_balancer_id));
        const items = kind.collection.all().filter((item) => !parent || item.pool_id === parent.id);
        return filterBy(items, request.query as Query).map((item) => kind.view(item));
      },
      show: (itemId, request) => {
        const parent = kind.parent?.(request);
        this.touch(parent ? String(parent.load_balancer_id) : kind.loadBalancerOf(this.get(kind.collection, itemId)));
        return kind.view(find(itemId, parent));
      },
      create: (body, request) => kind.view(kind.create(body ?? {}, kind.parent?.(request))),
      update: (itemId, changes, request) => {
        const item = find(itemId, kind.parent?.(request));
        const allowed = this.updatable(changes, kind.updatable);
        kind.check(allowed);
        kind.lock(item, "PENDING_UPDATE");
        return kind.view(kind.collection.update(item.id, { ...allowed, ...(kind.stampsUpdate ? { updated_at: octaviaNow() } : {}) }));
      },
      remove: (itemId, request) => kind.lock(find(itemId, kind.parent?.(request)), "PENDING_DELETE"),
    };
  }

  /** A missing object is Octavia's 404 (octavia/common/exceptions.py, NotFound). */
  private get(collection: Collection, id: string): Resource {
    const item = collection.find(id);
    if (!item) throw octaviaError(404, `${collection.label} ${id} not found.`);
    return item;
  }

  private list(collection: Collection, request: FastifyRequest): Resource[] {
    return filterBy(collection.all(), request.query as Query);
  }

  /** Only the attributes a PUT may change; wsme refuses the others (read-only or unknown). */
  private updatable(changes: Body, allowed: string[]): Body {
    return Object.fromEntries(Object.entries(changes).filter(([key]) => allowed.includes(key)));
  }

  /**
   * octavia/db/repositories.py, Repositories.check_quota_met: creating one more beyond the
   * project's limit is a 403 naming the object (octavia/common/exceptions.py, QuotaException).
   */
  private checkQuota(quota: OctaviaQuota, resource: string, used: number, count = 1): void {
    const limit = this.quotas[quota];
    if (limit >= 0 && used + count > limit) throw octaviaError(403, `Quota has been met for resources: ${resource}`);
  }

  /**
   * octavia/api/v2/controllers/load_balancer.py, LoadBalancersController.post: a VIP from a port,
   * a network or a subnet, each of which must exist (InvalidSubresource, 400), an availability
   * zone Octavia has, the quota; then the amphora provider's create_vip_port
   * (octavia/api/drivers/amphora_driver/v2/driver.py) asks Neutron for the VIP port
   * (octavia/network/drivers/neutron/allowed_address_pairs.py, allocate_vip): named
   * octavia-lb-<id>, owner Octavia, device lb-<id>, admin down, in the project. Neutron's 409
   * becomes Octavia's VIPAddressConflict; a network without port security, a driver error.
   */
  private createLoadBalancer(body: Body): Resource {
    new Attributes(body).uuid("vip_port_id").uuid("vip_network_id").uuid("vip_subnet_id").ipAddress("vip_address");
    if (!body.vip_port_id && !body.vip_network_id && !body.vip_subnet_id) {
      throw octaviaError(400, "Validation failure: VIP must contain one of: vip_port_id, vip_network_id, vip_subnet_id.");
    }
    let subnetId = body.vip_subnet_id as string | undefined;
    let networkId = body.vip_network_id as string | undefined;
    if (body.vip_port_id) {
      const port = this.neutron.ports.find(String(body.vip_port_id));
      if (!port) throw octaviaError(400, `Port ${String(body.vip_port_id)} not found.`);
      networkId = String(port.network_id);
      subnetId = subnetId ?? (port.fixed_ips as { subnet_id: string }[])[0]?.subnet_id;
    } else if (networkId) {
      const network = this.neutron.networks.find(networkId);
      if (!network) throw octaviaError(400, `Network ${networkId} not found.`);
      if (subnetId && !this.neutron.subnets.find(subnetId)) throw octaviaError(400, `Subnet ${subnetId} not found.`);
      subnetId = subnetId ?? (network.subnets as string[])[0];
      if (!subnetId) throw validationFailure("Supplied network does not contain a subnet.");
    } else {
      const subnet = this.neutron.subnets.find(String(subnetId));
      if (!subnet) throw octaviaError(400, `Subnet ${String(subnetId)} not found.`);
      networkId = String(subnet.network_id);
    }
    // _validate_availability_zone.
    if (body.availability_zone !== undefined && body.availability_zone !== null) {
      if (!this.availabilityZones.includes(String(body.availability_zone))) throw validationFailure("Invalid availability zone.");
    }
    this.checkQuota("load_balancer", "Load Balancer", this.loadBalancers.size);
    const id = randomUUID();
    let port: Resource;
    if (body.vip_port_id) {
      port = this.neutron.ports.get(String(body.vip_port_id));
    } else {
      const network = this.neutron.networks.get(String(networkId));
      if (network.port_security_enabled === false) {
        throw octaviaError(500, "Provider 'amphora' reports error: Port security must be enabled on the VIP network.");
      }
      try {
        port = this.neutron.createServicePort({
          name: `octavia-lb-${id}`,
          network_id: networkId,
          admin_state_up: false,
          device_id: `lb-${id}`,
          device_owner: "Octavia",
          project_id: this.projectId,
          fixed_ips: [{ subnet_id: subnetId, ...(body.vip_address ? { ip_address: body.vip_address } : {}) }],
        });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        if (error.status === 409) throw octaviaError(409, `The VIP IP address is already in use: ${error.message}`);
        throw octaviaError(500, `Provider 'amphora' reports error: ${error.message}`);
      }
    }
    const address = (port.fixed_ips as { subnet_id: string; ip_address: string }[]).find((ip) => ip.subnet_id === subnetId);
    const timestamp = octaviaNow();
    return this.loadBalancers.add({
      id,
      name: body.name ?? "",
      description: body.description ?? "",
      admin_state_up: body.admin_state_up ?? true,
      project_id: this.projectId,
      // octavia/db/prepare.py, create_load_balancer.
      provisioning_status: "PENDING_CREATE",
      operating_status: "OFFLINE",
      vip_address: address?.ip_address ?? null,
      vip_port_id: port.id,
      vip_subnet_id: subnetId,
      vip_network_id: networkId,
      vip_qos_policy_id: body.vip_qos_policy_id ?? null,
      octavia_owned: !body.vip_port_id,
      availability_zone: body.availability_zone ?? null,
      flavor_id: body.flavor_id ?? null,
      provider: "amphora",
      tags: body.tags ?? [],
      created_at: timestamp,
      updated_at: null,
      reads: 0,
    });
  }

  /**
   * octavia/api/v2/controllers/load_balancer.py, LoadBalancersController.delete: one with
   * listeners or pools only with cascade (else 400); then _test_lb_status: only from ACTIVE or
   * ERROR (octavia/common/constants.py, DELETABLE_STATUSES), else LBPendingStateError (409).
   */
  private deleteLoadBalancer(lb: Resource, cascade: boolean): void {
    const children =
      this.listeners.all().some((l) => l.load_balancer_id === lb.id) || this.pools.all().some((p) => p.load_balancer_id === lb.id);
    if (children && !cascade) throw validationFailure(`Cannot delete Load Balancer ${lb.id} - it has children`);
    this.testLbStatus(lb, "PENDING_DELETE");
  }

  /** octavia/api/v2/controllers/load_balancer.py, _test_lb_status. */
  private testLbStatus(lb: Resource, status: string): void {
    const acceptable = status === "PENDING_DELETE" ? ["ACTIVE", "ERROR"] : ["ACTIVE"];
    if (!acceptable.includes(String(lb.provisioning_status))) {
      throw octaviaError(409, `Invalid state ${String(lb.provisioning_status)} of loadbalancer resource ${lb.id}`);
    }
    this.loadBalancers.update(lb.id, { provisioning_status: status, reads: 0 });
  }

  /**
   * octavia/db/repositories.py, test_and_set_lb_and_listeners_prov_status: the load balancer must
   * be ACTIVE (MUTABLE_STATUSES), else ImmutableObject (409); it becomes PENDING_UPDATE, and so do
   * the listeners and pool the change touches (or `status` for the object being deleted).
   */
  private lock(lbId: string, touched: { listeners?: string[]; pool?: string; status?: string } = {}): void {
    const lb = this.get(this.loadBalancers, lbId);
    if (lb.provisioning_status !== "ACTIVE") throw immutable("Load Balancer", lbId);
    this.loadBalancers.update(lbId, { provisioning_status: "PENDING_UPDATE", reads: 0 });
    const status = touched.status ?? "PENDING_UPDATE";
    const deletingPool = touched.status !== undefined && touched.pool !== undefined;
    for (const listener of touched.listeners ?? []) {
      this.listeners.update(listener, { provisioning_status: deletingPool ? "PENDING_UPDATE" : status });
    }
    if (touched.pool) this.pools.update(touched.pool, { provisioning_status: status });
  }

  /**
   * octavia/api/v2/controllers/member.py and health_monitor.py,
   * _test_lb_and_listener_and_pool_statuses: the pool must be ACTIVE, else ImmutableObject on the
   * pool; then the load balancer is locked with the pool and its listeners.
   */
  private lockPool(pool: Resource, status: string): void {
    if (pool.provisioning_status !== "ACTIVE") throw immutable("Pool", pool.id);
    this.lock(String(pool.load_balancer_id), { listeners: this.poolListeners(pool.id), pool: pool.id, status });
  }

  /**
   * octavia/api/v2/controllers/listener.py, ListenersController.post: wsme's checks
   * (octavia/api/v2/types/listener.py, ListenerPOST), the load balancer, the quota, the default
   * pool's protocol, the lock, then _validate_create_listener: no two listeners of one layer-4
   * protocol on a port of one load balancer (DuplicateListenerEntry, 409, naming the existing one's
   * protocol).
   */
  private createListener(body: Body): Resource {
    new Attributes(body)
      .mandatory("loadbalancer_id")
      .uuid("loadbalancer_id")
      .mandatory("protocol")
      .oneOf("protocol", LISTENER_PROTOCOLS)
      .mandatory("protocol_port")
      .integer("protocol_port", 1, 65535)
      .integer("connection_limit", -1)
      .uuid("default_pool_id");
    const lb = this.get(this.loadBalancers, String(body.loadbalancer_id));
    this.checkQuota("listener", "Listener", this.listeners.size);
    const protocol = String(body.protocol);
    if (body.default_pool_id) {
      const pool = this.pools.find(String(body.default_pool_id));
      if (!pool || pool.load_balancer_id !== lb.id) throw octaviaError(404, `Pool ${String(body.default_pool_id)} not found.`);
      this.checkProtocols(protocol, String(pool.protocol));
    }
    this.lock(lb.id);
    const clash = this.listeners
      .all()
      .find(
        (l) =>
          l.load_balancer_id === lb.id &&
          l.protocol_port === body.protocol_port &&
          L4_PROTOCOL[String(l.protocol)] === L4_PROTOCOL[protocol],
      );
    if (clash) {
      this.loadBalancers.update(lb.id, { provisioning_status: "ACTIVE" });
      throw octaviaError(
        409,
        `Another Listener on this Load Balancer is already using protocol ${String(clash.protocol)} and protocol_port ${String(body.protocol_port)}`,
      );
    }
    const timestamp = octaviaNow();
    return this.listeners.add({
      id: randomUUID(),
      name: body.name ?? "",
      description: body.description ?? "",
      admin_state_up: body.admin_state_up ?? true,
      project_id: this.projectId,
      // octavia/db/prepare.py, create_listener.
      provisioning_status: "PENDING_CREATE",
      operating_status: "OFFLINE",
      protocol,
      protocol_port: body.protocol_port,
      load_balancer_id: lb.id,
      // octavia/api/v2/types/listener.py, ListenerPOST defaults; octavia/common/constants.py.
      connection_limit: body.connection_limit ?? -1,
      default_pool_id: body.default_pool_id ?? null,
      timeout_client_data: body.timeout_client_data ?? 50000,
      timeout_member_connect: body.timeout_member_connect ?? 5000,
      timeout_member_data: body.timeout_member_data ?? 50000,
      timeout_tcp_inspect: body.timeout_tcp_inspect ?? 0,
      insert_headers: body.insert_headers ?? {},
      allowed_cidrs: body.allowed_cidrs ?? null,
      tags: body.tags ?? [],
      created_at: timestamp,
      updated_at: null,
    });
  }

  /** octavia/api/v2/controllers/base.py, BaseController._validate_protocol. */
  private checkProtocols(listenerProtocol: string, poolProtocol: string): void {
    if (!(LISTENER_POOL_PROTOCOLS[listenerProtocol] ?? []).includes(poolProtocol)) {
      throw validationFailure(`The pool protocol '${poolProtocol}' is invalid while the listener protocol is '${listenerProtocol}'.`);
    }
  }

  /**
   * octavia/api/v2/controllers/pool.py, PoolsController.post: wsme's checks (types/pool.py,
   * PoolPOST), a load balancer or a listener, the protocol the listener allows, the quota, a
   * listener without a default pool yet (DuplicatePoolEntry, 409), then the lock.
   */
  private createPool(body: Body): Resource {
    new Attributes(body)
      .mandatory("lb_algorithm")
      .oneOf("lb_algorithm", LB_ALGORITHMS)
      .mandatory("protocol")
      .oneOf("protocol", POOL_PROTOCOLS)
      .uuid("listener_id")
      .uuid("loadbalancer_id");
    let lbId: string;
    let listener: Resource | undefined;
    if (body.loadbalancer_id) {
      lbId = this.get(this.loadBalancers, String(body.loadbalancer_id)).id;
    } else if (body.listener_id) {
      listener = this.get(this.listeners, String(body.listener_id));
      lbId = String(listener.load_balancer_id);
    } else {
      throw validationFailure("Must provide at least one of: loadbalancer_id, listener_id");
    }
    if (body.listener_id && !listener) listener = this.get(this.listeners, String(body.listener_id));
    if (listener) {
      if (listener.protocol === "PROMETHEUS") throw octaviaError(400, "Protocol PROMETHEUS listeners cannot have child objects.");
      this.checkProtocols(String(listener.protocol), String(body.protocol));
    }
    this.checkQuota("pool", "Pool", this.pools.size);
    if (listener?.default_pool_id) throw octaviaError(409, "This listener already has a default pool");
    this.lock(lbId, { listeners: listener ? [listener.id] : [] });
    const timestamp = octaviaNow();
    const pool = this.pools.add({
      id: randomUUID(),
      name: body.name ?? "",
      description: body.description ?? "",
      admin_state_up: body.admin_state_up ?? true,
      project_id: this.projectId,
      provisioning_status: "PENDING_CREATE",
      operating_status: "OFFLINE",
      protocol: body.protocol,
      lb_algorithm: body.lb_algorithm,
      load_balancer_id: lbId,
      session_persistence: body.session_persistence ?? null,
      tls_enabled: body.tls_enabled ?? false,
      tags: body.tags ?? [],
      created_at: timestamp,
      updated_at: null,
    });
    if (listener) this.listeners.update(listener.id, { default_pool_id: pool.id });
    return pool;
  }

  /** The listeners whose default pool this is. */
  private poolListeners(poolId: string): string[] {
    return this.listeners
      .all()
      .filter((l) => l.default_pool_id === poolId)
      .map((l) => l.id);
  }

  private loadBalancerOfPool(poolId: string): string {
    return String(this.pools.find(poolId)?.load_balancer_id ?? "");
  }

  /** wsme's checks of a member (octavia/api/v2/types/member.py, MemberPOST). */
  private checkMemberAttributes(body: Body): void {
    new Attributes(body)
      .mandatory("address")
      .ipAddress("address")
      .mandatory("protocol_port")
      .integer("protocol_port", 1, 65535)
      .integer("weight", 0, 256)
      .uuid("subnet_id")
      .integer("monitor_port", 1, 65535)
      .ipAddress("monitor_address");
  }

  /**
   * octavia/common/validate.py, ip_not_reserved: a reserved address is an InvalidOption (400).
   * Octavia does not check that the address lies in subnet_id's CIDR, only that the subnet exists
   * (validate.subnet_exists: InvalidSubresource, 400).
   */
  private checkMemberAddress(body: Body): void {
    if (RESERVED_IPS.includes(String(body.address)))
      throw octaviaError(400, `${String(body.address)} is not a valid option for member address`);
  }

  private checkMemberSubnet(body: Body): void {
    if (body.subnet_id && !this.neutron.subnets.find(String(body.subnet_id)))
      throw octaviaError(400, `Subnet ${String(body.subnet_id)} not found.`);
  }

  private newMember(pool: Resource, body: Body): Resource {
    return this.members.add({
      id: randomUUID(),
      name: body.name ?? "",
      admin_state_up: body.admin_state_up ?? true,
      project_id: this.projectId,
      pool_id: pool.id,
      address: body.address,
      protocol_port: body.protocol_port,
      weight: body.weight ?? 1,
      backup: body.backup ?? false,
      subnet_id: body.subnet_id ?? null,
      monitor_address: body.monitor_address ?? null,
      monitor_port: body.monitor_port ?? null,
      tags: body.tags ?? [],
      // octavia/db/prepare.py, create_member.
      provisioning_status: "PENDING_CREATE",
      created_at: octaviaNow(),
      updated_at: null,
    });
  }

  /**
   * octavia/api/v2/controllers/member.py, MemberController.post: wsme's checks, the reserved
   * address and the subnet, the quota, the pool's and load balancer's lock, then no other member
   * of the pool on the same address and port (DuplicateMemberEntry, 409).
   */
  private createMember(pool: Resource, body: Body): Resource {
    this.checkMemberAttributes(body);
    this.checkMemberAddress(body);
    this.checkMemberSubnet(body);
    this.checkQuota("member", "Member", this.members.size);
    this.lockPool(pool, "PENDING_UPDATE");
    if (this.members.all().some((m) => m.pool_id === pool.id && m.address === body.address && m.protocol_port === body.protocol_port)) {
      this.loadBalancers.update(String(pool.load_balancer_id), { provisioning_status: "ACTIVE" });
      this.pools.update(pool.id, { provisioning_status: "ACTIVE" });
      throw octaviaError(
        409,
        `Another member on this pool is already using ip ${String(body.address)} on protocol_port ${String(body.protocol_port)}`,
      );
    }
    return this.newMember(pool, body);
  }

  /**
   * octavia/api/v2/controllers/member.py, MembersController.put: the pool's and load balancer's
   * lock, then members matched by (address, protocol_port): new ones created, matched ones
   * updated, the rest deleted unless additive_only; nothing to do returns early.
   */
  private batchUpdateMembers(pool: Resource, wanted: Body[], additiveOnly: boolean): void {
    for (const member of wanted) this.checkMemberAttributes(member);
    if (pool.provisioning_status !== "ACTIVE") throw immutable("Pool", pool.id);
    const lb = this.get(this.loadBalancers, String(pool.load_balancer_id));
    if (lb.provisioning_status !== "ACTIVE") throw immutable("Load Balancer", lb.id);
    const old = this.members.all().filter((m) => m.pool_id === pool.id);
    const key = (m: Body) => `${String(m.address)}:${String(m.protocol_port)}`;
    const oldKeys = new Map(old.map((m) => [key(m), m]));
    const seen = new Set<string>();
    const created = wanted.filter((m) => !oldKeys.has(key(m)));
    const updated = wanted.filter((m) => oldKeys.has(key(m)));
    for (const m of updated) {
      if (seen.has(key(m))) throw validationFailure("Member must be updated only once in the same request.");
      seen.add(key(m));
    }
    for (const m of created) this.checkMemberAddress(m);
    const wantedKeys = new Set(wanted.map(key));
    const deleted = additiveOnly ? [] : old.filter((m) => !wantedKeys.has(key(m)));
    if (created.length === 0 && updated.length === 0 && deleted.length === 0) return;
    const growth = additiveOnly ? created.length : created.length - deleted.length;
    if (growth > 0) this.checkQuota("member", "Member", this.members.size, growth);
    for (const m of created) this.checkMemberSubnet(m);
    this.lockPool(pool, "PENDING_UPDATE");
    for (const m of created) this.newMember(pool, m);
    for (const m of updated) {
      const changes = this.updatable(m, ["name", "weight", "admin_state_up", "backup", "monitor_address", "monitor_port", "tags"]);
      this.members.update((oldKeys.get(key(m)) as Resource).id, { ...changes, provisioning_status: "PENDING_UPDATE" });
    }
    for (const m of deleted) this.members.update(m.id, { provisioning_status: "PENDING_DELETE" });
  }

  /**
   * octavia/api/v2/controllers/health_monitor.py, HealthMonitorController.post: wsme's checks
   * (types/health_monitor.py, HealthMonitorPOST: delay and timeout >= 0, max_retries 1 to 10; no
   * rule ties delay to timeout), the pool, the types a pool's protocol allows, the quota, the
   * lock, then _validate_create_hm: HTTP options only on HTTP(S) monitors (which get GET, "/"
   * and "200" by default), one monitor per pool (DuplicateHealthMonitor, 409).
   */
  private createHealthMonitor(body: Body): Resource {
    new Attributes(body)
      .mandatory("delay")
      .integer("delay", 0)
      .integer("max_retries_down", 1, 10)
      .mandatory("max_retries")
      .integer("max_retries", 1, 10)
      .oneOf("http_method", HTTP_METHODS)
      .mandatory("pool_id")
      .uuid("pool_id")
      .mandatory("timeout")
      .integer("timeout", 0)
      .mandatory("type")
      .oneOf("type", HEALTH_MONITOR_TYPES);
    const pool = this.get(this.pools, String(body.pool_id));
    const type = String(body.type);
    if (pool.protocol === "UDP" || pool.protocol === "SCTP") {
      if (!["UDP-CONNECT", "SCTP", "TCP", "HTTP"].includes(type)) {
        throw validationFailure(
          `The associated pool protocol is ${String(pool.protocol)}, so only a UDP-CONNECT/SCTP/TCP/HTTP health monitor is supported.`,
        );
      }
    } else if (type === "UDP-CONNECT" || type === "SCTP") {
      throw validationFailure(`The ${type} type is only supported for pools of type UDP/SCTP.`);
    }
    this.checkQuota("health_monitor", "Health Monitor", this.healthMonitors.size);
    this.lockPool(pool, "PENDING_UPDATE");
    const http = type === "HTTP" || type === "HTTPS";
    const unlock = () => {
      this.loadBalancers.update(String(pool.load_balancer_id), { provisioning_status: "ACTIVE" });
      this.pools.update(pool.id, { provisioning_status: "ACTIVE" });
    };
    if (!http) {
      for (const option of ["http_method", "url_path", "expected_codes"]) {
        if (body[option]) {
          unlock();
          throw octaviaError(400, `${option} is not a valid option for health monitors of type ${type}`);
        }
      }
    }
    if (this.healthMonitors.all().some((h) => h.pool_id === pool.id)) {
      unlock();
      throw octaviaError(409, "This pool already has a health monitor");
    }
    const timestamp = octaviaNow();
    return this.healthMonitors.add({
      id: randomUUID(),
      name: body.name ?? "",
      admin_state_up: body.admin_state_up ?? true,
      project_id: this.projectId,
      pool_id: pool.id,
      type,
      delay: body.delay,
      timeout: body.timeout,
      max_retries: body.max_retries,
      // octavia/common/constants.py, DEFAULT_MAX_RETRIES_DOWN.
      max_retries_down: body.max_retries_down ?? 3,
      http_method: http ? (body.http_method ?? "GET") : null,
      url_path: http ? (body.url_path ?? "/") : null,
      expected_codes: http ? (body.expected_codes ?? "200") : null,
      http_version: body.http_version ?? null,
      domain_name: body.domain_name ?? null,
      tags: body.tags ?? [],
      // octavia/db/prepare.py, create_health_monitor.
      provisioning_status: "PENDING_CREATE",
      operating_status: "OFFLINE",
      created_at: timestamp,
      updated_at: null,
    });
  }

  /**
   * A read of a load balancer or of an object under it: after `pendingReads` reads the provider
   * has finished the pending change (the amphora driver's flows end by marking everything ACTIVE,
   * octavia/controller/worker/v2/tasks/database_tasks.py, MarkLBActiveInDB and the Mark*ActiveInDB
   * tasks; deleted objects are removed, a deleted load balancer with its VIP port,
   * octavia/network/drivers/neutron/allowed_address_pairs.py, deallocate_vip).
   */
  private touch(lbId: string): void {
    const lb = this.loadBalancers.find(lbId);
    if (!lb || !PENDING.includes(String(lb.provisioning_status))) return;
    const reads = (lb.reads as number) + 1;
    if (reads <= this.pendingReads) {
      this.loadBalancers.update(lbId, { reads });
      return;
    }
    const pools = this.pools.all().filter((p) => p.load_balancer_id === lbId);
    const poolIds = pools.map((p) => p.id);
    const members = this.members.all().filter((m) => poolIds.includes(String(m.pool_id)));
    const monitors = this.healthMonitors.all().filter((h) => poolIds.includes(String(h.pool_id)));
    const listeners = this.listeners.all().filter((l) => l.load_balancer_id === lbId);
    if (lb.provisioning_status === "PENDING_DELETE") {
      for (const [collection, items] of [
        [this.members, members],
        [this.healthMonitors, monitors],
        [this.pools, pools],
        [this.listeners, listeners],
      ] as const) {
        for (const item of items) collection.delete(item.id);
      }
      if (lb.octavia_owned && this.neutron.ports.find(String(lb.vip_port_id))) this.neutron.deletePort(String(lb.vip_port_id));
      this.loadBalancers.delete(lbId);
      return;
    }
    const deletedPools = pools.filter((p) => p.provisioning_status === "PENDING_DELETE").map((p) => p.id);
    for (const listener of listeners) {
      if (listener.provisioning_status === "PENDING_DELETE") this.listeners.delete(listener.id);
      else if (deletedPools.includes(String(listener.default_pool_id))) this.listeners.update(listener.id, { default_pool_id: null });
    }
    for (const [collection, items] of [
      [this.members, members],
      [this.healthMonitors, monitors],
    ] as const) {
      for (const item of items) {
        if (item.provisioning_status === "PENDING_DELETE" || deletedPools.includes(String(item.pool_id))) collection.delete(item.id);
      }
    }
    for (const pool of deletedPools) this.pools.delete(pool);
    for (const [collection, items] of [
      [this.listeners, listeners],
      [this.pools, pools],
      [this.members, members],
      [this.healthMonitors, monitors],
    ] as const) {
      for (const item of items) {
        if (collection.find(item.id) && PENDING.includes(String(item.provisioning_status))) {
          collection.update(item.id, { provisioning_status: "ACTIVE", updated_at: octaviaNow() });
        }
      }
    }
    this.loadBalancers.update(lbId, { provisioning_status: "ACTIVE", operating_status: "ONLINE", reads: 0, updated_at: octaviaNow() });
  }

  /**
   * operating_status once ACTIVE, as the amphorae's health reports set it
   * (octavia/amphorae/drivers/health/heartbeat_udp.py, UpdateHealthDb): listeners, pools and
   * monitors ONLINE; a member ONLINE when its pool has a monitor, NO_MONITOR otherwise
   * (octavia/db/prepare.py, create_member, sets that from the start).
   */
  private operatingStatus(item: Resource, kind: "listener" | "pool" | "member" | "healthmonitor"): string {
    if (kind === "member") {
      const monitored = this.healthMonitors.all().some((h) => h.pool_id === item.pool_id);
      if (!monitored) return "NO_MONITOR";
      return item.provisioning_status === "ACTIVE" ? "ONLINE" : "OFFLINE";
    }
    return item.provisioning_status === "ACTIVE" ? "ONLINE" : "OFFLINE";
  }

  /** octavia/api/v2/types/load_balancer.py, LoadBalancerResponse. */
  private loadBalancerView(lb: Resource) {
    const { reads: _reads, octavia_owned: _owned, ...visible } = lb;
    return {
      ...visible,
      tenant_id: lb.project_id,
      vip_vnic_type: "normal",
      additional_vips: [],
      listeners: this.listeners
        .all()
        .filter((l) => l.load_balancer_id === lb.id)
        .map((l) => ({ id: l.id })),
      pools: this.pools
        .all()
        .filter((p) => p.load_balancer_id === lb.id)
        .map((p) => ({ id: p.id })),
    };
  }

  /** octavia/api/v2/types/listener.py, ListenerResponse. */
  private listenerView(listener: Resource) {
    const { load_balancer_id: lbId, ...visible } = listener;
    return {
      ...visible,
      tenant_id: listener.project_id,
      operating_status: this.operatingStatus(listener, "listener"),
      loadbalancers: [{ id: lbId }],
      default_tls_container_ref: null,
      sni_container_refs: [],
      l7policies: [],
      client_ca_tls_container_ref: null,
      client_authentication: "NONE",
      client_crl_container_ref: null,
      tls_ciphers: null,
      tls_versions: null,
      alpn_protocols: null,
      hsts_include_subdomains: false,
      hsts_max_age: null,
      hsts_preload: false,
    };
  }

  /** octavia/api/v2/types/pool.py, PoolResponse. */
  private poolView(pool: Resource) {
    const { load_balancer_id: lbId, ...visible } = pool;
    return {
      ...visible,
      tenant_id: pool.project_id,
      operating_status: this.operatingStatus(pool, "pool"),
      loadbalancers: [{ id: lbId }],
      listeners: this.poolListeners(pool.id).map((id) => ({ id })),
      members: this.members
        .all()
        .filter((m) => m.pool_id === pool.id)
        .map((m) => ({ id: m.id })),
      // Set only from the pool's monitor (from_db_obj); WSME leaves an unset attribute out.
      ...Object.fromEntries(
        this.healthMonitors
          .all()
          .filter((h) => h.pool_id === pool.id)
          .map((h) => ["healthmonitor_id", h.id]),
      ),
      tls_container_ref: null,
      ca_tls_container_ref: null,
      crl_container_ref: null,
      tls_ciphers: null,
      tls_versions: null,
      alpn_protocols: null,
    };
  }

  /** octavia/api/v2/types/member.py, MemberResponse. */
  private memberView(member: Resource) {
    const { pool_id: _pool, ...visible } = member;
    return { ...visible, tenant_id: member.project_id, operating_status: this.operatingStatus(member, "member"), vnic_type: "normal" };
  }

  /** octavia/api/v2/types/health_monitor.py, HealthMonitorResponse. */
  private healthMonitorView(monitor: Resource) {
    const { pool_id: poolId, ...visible } = monitor;
    return {
      ...visible,
      tenant_id: monitor.project_id,
      operating_status: this.operatingStatus(monitor, "healthmonitor"),
      pools: [{ id: poolId }],
    };
  }

  /** octavia/api/v2/controllers/load_balancer.py, StatusController.get: the status tree. */
  private statusTree(lb: Resource) {
    const status = (item: Resource, kind: "listener" | "pool" | "member" | "healthmonitor") => ({
      id: item.id,
      name: item.name,
      provisioning_status: item.provisioning_status,
      operating_status: this.operatingStatus(item, kind),
    });
    const poolTree = (pool: Resource) => {
      const monitor = this.healthMonitors.all().find((h) => h.pool_id === pool.id);
      return {
        ...status(pool, "pool"),
        ...(monitor ? { health_monitor: { ...status(monitor, "healthmonitor"), type: monitor.type } } : {}),
        members: this.members
          .all()
          .filter((m) => m.pool_id === pool.id)
          .map((m) => ({ ...status(m, "member"), address: m.address, protocol_port: m.protocol_port })),
      };
    };
    return {
      id: lb.id,
      name: lb.name,
      provisioning_status: lb.provisioning_status,
      operating_status: lb.operating_status,
      listeners: this.listeners
        .all()
        .filter((l) => l.load_balancer_id === lb.id)
        .map((l) => ({
          ...status(l, "listener"),
          pools: this.pools
            .all()
            .filter((p) => p.id === l.default_pool_id)
            .map(poolTree),
        })),
    };
  }
}
