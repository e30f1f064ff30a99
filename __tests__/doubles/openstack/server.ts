import Fastify, { FastifyError, FastifyInstance } from "fastify";
import { Cinder } from "./cinder";
import { Glance } from "./glance";
import { defaultIdentity, Identity, Keystone, SERVICE_PATHS } from "./keystone";
import { Neutron } from "./neutron";
import { Nova } from "./nova";
import { Octavia } from "./octavia";
import { ApiError } from "./store";

export interface OpenStackDoubleOptions {
  /** The external network floating IPs and router gateways come from. @default vlan1066 on 192.0.2.0/24 */
  readonly externalNetwork?: { readonly name: string; readonly cidr: string };
  /**
   * Images to seed, oldest first. @default an image named "Ubuntu 24.04" (the default `base_image`,
   * looked up by name) and the wiki's Ubuntu 20.04 image, ad156007-77bb-4e32-ac97-7f8340cab73d (the
   * default of stacks before issue 18, by ID)
   */
  readonly images?: readonly SeededImage[];
  /** Nova's availability zones; compute hosts are spread over them. @default ["nova"], as devstack */
  readonly availabilityZones?: readonly string[];
  /** Cinder's availability zones, the first its default. @default ["nova"], as devstack */
  readonly volumeAvailabilityZones?: readonly string[];
  /** Volume types Cinder has besides __DEFAULT__, e.g. ["ssd"]. @default none */
  readonly volumeTypes?: readonly string[];
  /**
   * Nova's [cinder]/cross_az_attach: true creates a server's boot volume in Cinder's default
   * zone, false in the server's zone (which Cinder must have). @default true, Nova's default
   */
  readonly crossAzAttach?: boolean;
  /**
   * Routers the project has before any deployment (router_id), each with its gateway on the
   * external network unless `externalGateway` is false. @default none
   */
  readonly existingRouters?: readonly { readonly name: string; readonly externalGateway?: boolean }[];
  /**
   * Networks the project has before any deployment (public_network_id), each with one subnet,
   * attached to the existing router named `router` if given. @default none
   */
  readonly existingNetworks?: readonly {
    readonly name: string;
    readonly cidr: string;
    /** null: no gateway. @default the subnet's first address, as Neutron picks it */
    readonly gatewayIp?: string | null;
    readonly allocationPools?: readonly { start: string; end: string }[];
    /** @default true, as Neutron's */
    readonly enableDhcp?: boolean;
    readonly router?: string;
    /** Another project that owns the network and shares it with this one. @default this project */
    readonly ownerProjectId?: string;
  }[];
  /** External networks beside `externalNetwork`, whose floating IPs the router cannot reach. @default none */
  readonly otherExternalNetworks?: readonly { readonly name: string; readonly cidr: string }[];
  /**
   * Floating IPs the project holds before any deployment (bastion_floating_ip ...), on
   * `network` (an external network's name; @default the external network), another project's
   * with `ownerProjectId`, and associated with a port of its own on `port.network` (an existing
   * network's name) at `port.address` when `port` is given. @default none
   */
  readonly existingFloatingIps?: readonly {
    readonly address: string;
    readonly network?: string;
    readonly ownerProjectId?: string;
    readonly port?: { readonly name: string; readonly network: string; readonly address: string };
  }[];
  /**
   * Security groups the project holds before any deployment (<role>_security_groups), each with
   * one ingress rule when `ingress` gives one (Neutron's fields); another project's with
   * `ownerProjectId`. @default none
   */
  readonly existingSecurityGroups?: readonly {
    readonly name: string;
    readonly ownerProjectId?: string;
    readonly ingress?: Readonly<Record<string, unknown>>;
  }[];
  /** Octavia's availability zones (its own objects, not Nova's). @default none, as devstack */
  readonly loadBalancerAvailabilityZones?: readonly string[];
  /**
   * Octavia's [oslo_policy] enforce_new_defaults: true lets only reader/member/admin use the
   * load-balancer API, false also the load-balancer_* roles. @default true, oslo.policy's default
   */
  readonly loadBalancerEnforceNewDefaults?: boolean;
  /**
   * Whether the cloud runs Octavia. false: the catalog lists no load-balancer service, and no
   * load-balancer route is served (a request to one is unhandled, as a client with no endpoint
   * never sends it). @default true
   */
  readonly octavia?: boolean;
  /**
   * Whether the catalog lists Cinder (block-storage, volumev3): false, as a cloud without it, for
   * clients that look it up there first. Its routes are served either way. @default true
   */
  readonly cinderInCatalog?: boolean;
  /**
   * Whether objects settle at once: a new server ACTIVE, a deleted one gone, a new volume
   * available and a load balancer's change done on their first read, so that the provider's
   * waiters return without their 1-3 s sleeps. For suites where the waiting is not what they
   * test (docs/decisions.md names them, and those that keep it). @default false: each shows its
   * transitional status for one read, as a real cloud does for a while
   */
  readonly settled?: boolean;
  /**
   * The roles the deploying user holds on the project, as Keystone assigns them (implied ones are
   * added). @default member and load-balancer_member, a project member's
   */
  readonly assignedRoles?: readonly string[];
}

export interface SeededImage {
  readonly id: string;
  readonly name: string;
  /** @default "public" */
  readonly visibility?: "public" | "private" | "shared" | "community";
}

/** The base image id the wiki's default `base_image` referred to (the default until issue 18). */
export const WIKI_IMAGE = { id: "ad156007-77bb-4e32-ac97-7f8340cab73d", name: "ubuntu-20.04-focal" } as const;

/** The image the default `base_image`, "Ubuntu 24.04", finds by name, as most clouds publish it. */
export const NOBLE_IMAGE = { id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93", name: "Ubuntu 24.04" } as const;

export interface RecordedRequest {
  readonly method: string;
  readonly url: string;
  readonly status: number;
}

/**
 * A local double of the OpenStack APIs this project uses, faithful enough that the real
 * terraform-provider-openstack runs against it unmodified. State is in memory.
 */
export interface OpenStackDouble {
  readonly url: string;
  readonly authUrl: string;
  readonly identity: Identity;
  readonly keystone: Keystone;
  readonly neutron: Neutron;
  readonly nova: Nova;
  readonly glance: Glance;
  readonly cinder: Cinder;
  readonly octavia: Octavia;
  /** Resources tests created (seeded ones excluded); 0 after a complete destroy. */
  resourceCount(): number;
  /** Every request, in order. */
  readonly requests: readonly RecordedRequest[];
  /** Requests the double does not implement; each also failed loudly with 501. */
  readonly unhandled: readonly RecordedRequest[];
  /**
   * Holds every request matching `matches` until the returned function is called, so a test can
   * keep a client mid-operation (e.g. a plan that holds the state lock).
   */
  hold(matches: (method: string, url: string) => boolean): { readonly reached: Promise<void>; release(): void };
  /**
   * Calls `listener` after every response: a server may have gone ACTIVE on a read, so the
   * rehearsal's cloud (__tests__/doubles/rehearsal/cloud.ts) looks at the state after each request.
   */
  observe(listener: () => void): void;
  /** OS_* variables for password authentication, as an openrc file would set them. */
  passwordEnv(): Record<string, string>;
  /** OS_* variables for application-credential authentication. */
  applicationCredentialEnv(): Record<string, string>;
  close(): Promise<void>;
}

/** Each service answers errors in its own format (see the API references). */
function errorBody(url: string, error: ApiError): unknown {
  if (url.startsWith("/network/")) return { NeutronError: { type: error.type, message: error.message, detail: "" } };
  if (url.startsWith("/identity/")) return { error: { code: error.status, title: error.type, message: error.message } };
  // wsme's fault body (wsme/api.py, format_exception), which Octavia's API answers with.
  if (url.startsWith("/load-balancer/"))
    return { faultcode: error.status >= 500 ? "Server" : "Client", faultstring: error.message, debuginfo: null };
  const key =
    { 400: "badRequest", 401: "unauthorized", 403: "forbidden", 404: "itemNotFound", 409: "conflictingRequest", 413: "overLimit" }[
      error.status
    ] ?? "computeFault";
  return { [key]: { code: error.status, message: error.message } };
}

export async function startOpenStackDouble(options: OpenStackDoubleOptions = {}): Promise<OpenStackDouble> {
  const identity = { ...defaultIdentity(), ...(options.assignedRoles === undefined ? {} : { assignedRoles: options.assignedRoles }) };
  const requests: RecordedRequest[] = [];
  const unhandled: RecordedRequest[] = [];
  let baseUrl = "";

  // A path parameter as long as a request line may be: the services run behind Apache or uWSGI,
  // whose request lines reach 8190 bytes (Apache's LimitRequestLine), not Fastify's 100
  // characters, which answered 414 to a keypair named by Nova's longest name (255 characters).
  const app: FastifyInstance = Fastify({ logger: false, routerOptions: { maxParamLength: 8190 } });
  // Clients send Content-Type: application/json on bodiless DELETEs too; an empty body is fine.
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (_request, body, done) => {
    try {
      done(null, body === "" ? undefined : JSON.parse(body as string));
    } catch (error) {
      done(new ApiError(400, "BadRequest", `Malformed JSON in request body: ${(error as Error).message}`), undefined);
    }
  });

  const withOctavia = options.octavia ?? true;
  const withCinder = options.cinderInCatalog ?? true;
  const services = Object.keys(SERVICE_PATHS).filter(
    (type) => (withOctavia || type !== "load-balancer") && (withCinder || !["block-storage", "volumev3"].includes(type)),
  );
  const keystone = new Keystone(identity, () => baseUrl, services);
  keystone.register(app);
  const neutron = new Neutron(identity.project.id);
  neutron.register(
    app,
    (request) => keystone.requireToken(request),
    (request) => keystone.tokenRoleNames(request),
  );
  const external = options.externalNetwork ?? { name: "vlan1066", cidr: "192.0.2.0/24" };
  neutron.seedExternalNetwork(external.name, external.cidr);
  neutron.seedDefaultSecurityGroup();
  const externalNetworkId = neutron.networks.all().find((n) => n.name === external.name)!.id;
  const routers = new Map(
    (options.existingRouters ?? []).map((r) => [
      r.name,
      neutron.seedRouter(r.name, r.externalGateway === false ? null : externalNetworkId),
    ]),
  );
  for (const network of options.existingNetworks ?? []) {
    const routerId = network.router === undefined ? undefined : routers.get(network.router)?.id;
    if (network.router !== undefined && routerId === undefined) throw new Error(`openstack-double: no existing router ${network.router}`);
    neutron.seedNetwork(network.name, network, routerId, network.ownerProjectId);
  }
  for (const other of options.otherExternalNetworks ?? []) neutron.seedExternalNetwork(other.name, other.cidr);
  for (const fip of options.existingFloatingIps ?? []) {
    const named = (name: string) => {
      const found = neutron.networks.all().find((n) => n.name === name);
      if (!found) throw new Error(`openstack-double: no network ${name}`);
      return String(found.id);
    };
    const portId = fip.port && String(neutron.seedPort(fip.port.name, named(fip.port.network), fip.port.address).id);
    neutron.seedFloatingIp(fip.address, named(fip.network ?? external.name), { ownerProjectId: fip.ownerProjectId, portId });
  }
  for (const group of options.existingSecurityGroups ?? []) {
    neutron.seedSecurityGroup(group.name, { ownerProjectId: group.ownerProjectId, ingress: group.ingress && { ...group.ingress } });
  }
  const requireToken = (request: Parameters<typeof keystone.requireToken>[0]) => keystone.requireToken(request);
  const glance = new Glance(identity.project.id);
  const images: readonly SeededImage[] = options.images ?? [NOBLE_IMAGE, WIKI_IMAGE];
  for (const image of images) glance.seedImage(image.id, image.name, image.visibility);
  glance.register(app, requireToken);
  const cinder = new Cinder(identity.project.id, {
    availabilityZones: options.volumeAvailabilityZones,
    volumeTypes: options.volumeTypes,
  });
  cinder.register(app, requireToken);
  const nova = new Nova({ projectId: identity.project.id, userId: identity.user.id }, neutron, glance, cinder, {
    availabilityZones: options.availabilityZones,
    crossAzAttach: options.crossAzAttach,
  });
  nova.register(app, requireToken);
  const octavia = new Octavia(identity.project.id, neutron, {
    availabilityZones: options.loadBalancerAvailabilityZones,
    enforceNewDefaults: options.loadBalancerEnforceNewDefaults,
  });
  if (options.settled) [nova.buildReads, nova.deleteReads, cinder.creatingReads, octavia.pendingReads] = [0, 0, 0, 0];
  if (withOctavia) octavia.register(app, (request) => keystone.tokenRoleNames(request));

  const holds: { matches: (method: string, url: string) => boolean; gate: Promise<void>; arrived: () => void }[] = [];
  app.addHook("onRequest", async (request) => {
    for (const hold of holds.filter((h) => h.matches(request.method, request.url))) {
      hold.arrived();
      await hold.gate;
    }
  });
  const observers: (() => void)[] = [];
  app.addHook("onResponse", async (request, reply) => {
    requests.push({ method: request.method, url: request.url, status: reply.statusCode });
    for (const observer of observers) observer();
  });
  app.setErrorHandler((error: FastifyError | ApiError, request, reply) => {
    if (error instanceof ApiError) return reply.code(error.status).send(errorBody(request.url, error));
    const status = (error as FastifyError).statusCode ?? 500;
    return reply.code(status).send(errorBody(request.url, new ApiError(status, "InternalError", error.message)));
  });
  app.setNotFoundHandler((request, reply) => {
    unhandled.push({ method: request.method, url: request.url, status: 501 });
    // Loud on purpose: a gap in the double must show up in the test output, not hide.
    console.error(`openstack-double: not implemented: ${request.method} ${request.url}`);
    return reply.code(501).send({ error: { code: 501, message: `openstack-double does not implement ${request.method} ${request.url}` } });
  });

  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("openstack-double: no TCP address");
  baseUrl = `http://127.0.0.1:${address.port}`;
  const authUrl = `${baseUrl}/identity/v3`;
  const common = { OS_AUTH_URL: authUrl, OS_REGION_NAME: identity.region, OS_INTERFACE: "public", OS_IDENTITY_API_VERSION: "3" };

  return {
    url: baseUrl,
    authUrl,
    identity,
    keystone,
    neutron,
    nova,
    glance,
    cinder,
    octavia,
    resourceCount: () =>
      keystone.resourceCount() + neutron.resourceCount() + nova.resourceCount() + cinder.volumes.size + octavia.resourceCount(),
    requests,
    unhandled,
    passwordEnv: () => ({
      ...common,
      OS_AUTH_TYPE: "password",
      OS_USERNAME: identity.user.name,
      OS_PASSWORD: identity.user.password,
      OS_PROJECT_NAME: identity.project.name,
      OS_PROJECT_ID: identity.project.id,
      OS_USER_DOMAIN_NAME: identity.domain.name,
      OS_PROJECT_DOMAIN_ID: identity.domain.id,
    }),
    applicationCredentialEnv: () => ({
      ...common,
      OS_AUTH_TYPE: "v3applicationcredential",
      OS_APPLICATION_CREDENTIAL_ID: identity.applicationCredential.id,
      OS_APPLICATION_CREDENTIAL_SECRET: identity.applicationCredential.secret,
    }),
    hold: (matches) => {
      let release = () => {};
      let arrived = () => {};
      const gate = new Promise<void>((resolve) => (release = resolve));
      const reached = new Promise<void>((resolve) => (arrived = resolve));
      const hold = { matches, gate, arrived };
      holds.push(hold);
      return {
        reached,
        release: () => {
          holds.splice(holds.indexOf(hold), 1);
          release();
        },
      };
    },
    observe: (listener) => {
      observers.push(listener);
    },
    close: () => app.close(),
  };
}
