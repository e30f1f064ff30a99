import { randomBytes, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { Cinder } from "./cinder";
import type { Glance } from "./glance";
import type { Neutron } from "./neutron";
import { sshKeyFingerprint } from "./ssh-key";
import { ApiError, Collection, filterBy, now, nowNoZone, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;

interface Flavor {
  readonly id: string;
  readonly name: string;
  readonly vcpus: number;
  readonly ram: number;
  readonly disk: number;
  /** GiB of ephemeral disk, a second disk after the root disk. @default 0 */
  readonly ephemeral?: number;
  /** MiB of swap, a disk after the ephemeral one. @default 0 */
  readonly swap?: number;
}

/**
 * The flavors a test project usually has (devstack's m1.*; m1.large is the wiki's default node
 * flavor), one with an ephemeral disk and swap, and one with no root disk (volume boot only).
 */
export const DEFAULT_FLAVORS: readonly Flavor[] = [
  { id: "1", name: "m1.tiny", vcpus: 1, ram: 512, disk: 1 },
  { id: "2", name: "m1.small", vcpus: 1, ram: 2048, disk: 20 },
  { id: "3", name: "m1.medium", vcpus: 2, ram: 4096, disk: 40 },
  { id: "4", name: "m1.large", vcpus: 4, ram: 8192, disk: 80 },
  { id: "5", name: "m1.large.ephemeral", vcpus: 4, ram: 8192, disk: 40, ephemeral: 40, swap: 1024 },
  { id: "6", name: "m1.volume-only", vcpus: 2, ram: 4096, disk: 0 },
];

/**
 * Nova's default quotas (nova/conf/quota.py); tests change them per double. -1 is unlimited.
 * `fixed_ips` to `security_group_rules` are the nova-network proxies shown before 2.36
 * (nova/api/openstack/compute/quota_sets.py, FILTERED_QUOTAS_v236); Nova enforces none of them.
 */
export const NOVA_DEFAULT_QUOTAS = {
  instances: 10,
  cores: 20,
  ram: 50 * 1024,
  metadata_items: 128,
  injected_files: 5,
  injected_file_content_bytes: 10 * 1024,
  injected_file_path_bytes: 255,
  key_pairs: 100,
  server_groups: 10,
  server_group_members: 10,
  fixed_ips: -1,
  floating_ips: 10,
  security_groups: 10,
  security_group_rules: 20,
};
export type NovaQuota = keyof typeof NOVA_DEFAULT_QUOTAS;
const NOVA_NETWORK_QUOTAS: NovaQuota[] = ["fixed_ips", "floating_ips", "security_groups", "security_group_rules"];

/** The scheduler's answer when no host passes the filters (nova/exception.py, NoValidHost). */
export const NO_VALID_HOST = "No valid host was found. There are not enough hosts available.";

/**
 * Keypair names: nova/api/validation/parameter_types.py, `keypair_name_special_chars` before
 * 2.92 and `keypair_name_special_chars_v292` from it (dots and @ allowed), 1 to 255 characters.
 */
const KEYPAIR_NAME = /^[_\- a-zA-Z0-9]+$/;
const KEYPAIR_NAME_V292 = /^[_\-@. a-zA-Z0-9]+$/;

/**
 * A request body field that fails Nova's JSON schema (nova/api/validation/validators.py,
 * _SchemaValidator.validate): 400 "Invalid input for field/attribute <field>. Value: <value>.
 * <jsonschema's message>".
 */
function invalidField(field: string, value: unknown, message: string): ApiError {
  return new ApiError(400, "badRequest", `Invalid input for field/attribute ${field}. Value: ${String(value)}. ${message}`);
}

/** Nova's `name` type (parameter_types.name): 1 to 255 characters, no leading or trailing whitespace. */
function checkName(field: string, value: unknown): void {
  if (typeof value !== "string") throw invalidField(field, value, `${JSON.stringify(value)} is not of type 'string'`);
  if (value.length > 255) throw invalidField(field, value, `'${value}' is too long`);
  if (value.length < 1) throw invalidField(field, value, `'' is too short`);
  // nova/api/validation/validators.py, _validate_name: valid_name_regex refuses outer whitespace.
  if (value.trim() !== value) {
    throw new ApiError(
      400,
      "badRequest",
      `An invalid 'name' value was provided. The name must be: printable characters. Can not start or end with whitespace.`,
    );
  }
}

/** Python's repr of a JSON value, as Nova's schema errors quote a request's values. */
function pythonRepr(value: unknown): string {
  if (value === null || value === undefined) return "None";
  if (value === true) return "True";
  if (value === false) return "False";
  if (typeof value === "string") return `'${value}'`;
  if (Array.isArray(value)) return `[${value.map(pythonRepr).join(", ")}]`;
  if (typeof value === "object") {
    return `{${Object.entries(value as Record<string, unknown>)
      .map(([k, v]) => `'${k}': ${pythonRepr(v)}`)
      .join(", ")}}`;
  }
  return String(value);
}

/** A block_device_mapping_v2 item as the API takes it (nova/api/openstack/compute/schemas/servers.py). */
interface BlockDeviceMapping {
  boot_index?: number | string | null;
  uuid?: string;
  source_type?: string;
  destination_type?: string;
  volume_size?: number | string;
  volume_type?: string | null;
  delete_on_termination?: boolean;
}

/** A volume Nova creates for a server at build time, from an image. */
interface BootVolumeRequest {
  readonly imageId: string;
  readonly size: number;
  readonly volumeType?: string;
  readonly deleteOnTermination: boolean;
}

export interface NovaOptions {
  /** The compute hosts' availability zones; hosts are spread over them in turn. @default ["nova"], as devstack */
  readonly availabilityZones?: readonly string[];
  /**
   * nova.conf [cinder]/cross_az_attach: when true a boot volume is created without a zone (so in
   * Cinder's default one), when false in the server's zone (nova/virt/block_device.py,
   * _get_volume_create_az_value). @default true, Nova's default
   */
  readonly crossAzAttach?: boolean;
}

function microversion(request: FastifyRequest): [number, number] {
  const header = request.headers["x-openstack-nova-api-version"] ?? request.headers["openstack-api-version"];
  const match = /(\d+)\.(\d+)/.exec(String(header ?? ""));
  return match ? [Number(match[1]), Number(match[2])] : [2, 1];
}

function atLeast(request: FastifyRequest, minor: number): boolean {
  const [major, m] = microversion(request);
  return major > 2 || (major === 2 && m >= minor);
}

/** A keypair as Nova shows it: its type only from microversion 2.2 (nova/api/openstack/compute/keypairs.py, key_type). */
function keypairView(keypair: Record<string, unknown>, request: FastifyRequest): Record<string, unknown> {
  if (atLeast(request, 2)) return keypair;
  const { type: _type, ...view } = keypair;
  return view;
}

/** A server's vm_state for its status (nova/compute/vm_states.py). */
function vmState(status: string): string {
  return { ACTIVE: "active", ERROR: "error", SHUTOFF: "stopped" }[status] ?? "building";
}

/**
 * Nova v2.1: servers (BUILD on their first read, then ACTIVE), flavors, keypairs, server groups
 * and volume attachments. Servers bind the Neutron ports they are given and attach Cinder volumes.
 */
export class Nova {
  readonly servers = new Collection("Instance", "itemNotFound");
  readonly keypairs = new Collection("Keypair", "itemNotFound");
  readonly serverGroups = new Collection("Server group", "itemNotFound");
  private readonly flavors: Flavor[] = [...DEFAULT_FLAVORS];
  /** The project's quota limits; a test may change any of them. */
  readonly quotas: Record<NovaQuota, number> = { ...NOVA_DEFAULT_QUOTAS };
  /** Compute hosts the scheduler places servers on; hard anti-affinity needs one per member. */
  hosts = 16;
  /** Reads of a new server that still show BUILD: the provider's waiter sees it building. */
  buildReads = 1;
  /** Reads of a deleted server that still show it, deleting: the provider's waiter sees that too. */
  deleteReads = 1;
  private failures: { matches: (name: string) => boolean; message: string }[] = [];
  readonly availabilityZones: readonly string[];
  private readonly crossAzAttach: boolean;

  /**
   * Makes every server created from now on whose name `matches` go to ERROR with `message` as
   * its fault (what a compute host's failure shows); returns the function that stops it.
   */
  failServers(matches: (name: string) => boolean, message = "Build of instance aborted: Failure prepping block device."): () => void {
    const failure = { matches, message };
    this.failures.push(failure);
    return () => {
      this.failures = this.failures.filter((f) => f !== failure);
    };
  }

  constructor(
    private readonly identity: { projectId: string; userId: string },
    private readonly neutron: Neutron,
    private readonly glance: Glance,
    private readonly cinder: Cinder,
    options: NovaOptions = {},
  ) {
    this.availabilityZones = options.availabilityZones ?? ["nova"];
    this.crossAzAttach = options.crossAzAttach ?? true;
  }

  /** The zone of a compute host: the hosts are spread over the zones in turn. */
  private zoneOf(host: string): string {
    const index = Number(host.replace("compute-", "")) - 1;
    return this.availabilityZones[index % this.availabilityZones.length];
  }

  resourceCount(): number {
    return this.servers.size + this.keypairs.size + this.serverGroups.size;
  }

  register(app: FastifyInstance, auth: (request: FastifyRequest) => void): void {
    const base = "/compute/v2.1";
    // nova/api/openstack/compute/availability_zone.py, index: every zone with an enabled compute
    // service, available, sorted (nova/availability_zones.py, _get_availability_zones); the
    // internal zone is hidden; hosts is null.
    app.get(`${base}/os-availability-zone`, async (request) => {
      auth(request);
      return {
        availabilityZoneInfo: [...this.availabilityZones]
          .sort()
          .map((zone) => ({ zoneName: zone, zoneState: { available: true }, hosts: null })),
      };
    });
    // nova/policies/availability_zone.py: the detail (with hosts) is admin-only.
    app.get(`${base}/os-availability-zone/detail`, async (request) => {
      auth(request);
      throw new ApiError(403, "forbidden", "Policy doesn't allow os_compute_api:os-availability-zone:detail to be performed.");
    });
    app.get(`${base}/flavors/detail`, async (request) => {
      auth(request);
      return {
        flavors: filterBy(this.flavors.map((f) => this.flavorView(f, request)) as Resource[], request.query as Query, [
          "is_public",
          "minDisk",
          "minRam",
        ]),
      };
    });
    app.get(`${base}/flavors`, async (request) => {
      auth(request);
      return { flavors: this.flavors.map((f) => ({ id: f.id, name: f.name, links: [] })) };
    });
    app.get(`${base}/flavors/:id`, async (request) => {
      auth(request);
      const flavor = this.flavors.find((f) => f.id === (request.params as { id: string }).id);
      if (!flavor) throw new ApiError(404, "itemNotFound", `Flavor ${(request.params as { id: string }).id} could not be found.`);
      return { flavor: this.flavorView(flavor, request) };
    });
    app.get(`${base}/flavors/:id/os-extra_specs`, async (request) => {
      auth(request);
      return { extra_specs: {} };
    });

    app.post(`${base}/os-keypairs`, async (request) => {
      auth(request);
      const body = (request.body as { keypair?: { name?: string; public_key?: string; type?: string } })?.keypair;
      if (!body?.name || !body.public_key)
        throw new ApiError(400, "badRequest", "Keypair data is invalid: name and public_key are required.");
      checkName("name", body.name);
      const pattern = atLeast(request, 92) ? KEYPAIR_NAME_V292 : KEYPAIR_NAME;
      if (!pattern.test(body.name)) {
        // jsonschema's message quotes the pattern as Python's repr does, backslashes doubled.
        throw invalidField("name", body.name, `'${body.name}' does not match '${pattern.source.replace(/\\/g, "\\\\")}'`);
      }
      // nova/compute/api.py, KeypairAPI.import_key_pair: _check_key_pair_quotas, then the key itself.
      if (this.quotas.key_pairs >= 0 && this.keypairs.size + 1 > this.quotas.key_pairs) {
        throw new ApiError(403, "forbidden", "Quota exceeded, too many key pairs.");
      }
      const fingerprint = sshKeyFingerprint(body.public_key);
      if (fingerprint === undefined) throw new ApiError(400, "badRequest", "Keypair data is invalid: failed to generate fingerprint");
      if (this.keypairs.find(body.name)) throw new ApiError(409, "conflictingRequest", `Key pair '${body.name}' already exists.`);
      const keypair = this.keypairs.add({
        id: body.name,
        name: body.name,
        public_key: body.public_key,
        type: body.type ?? "ssh",
        fingerprint,
        user_id: this.identity.userId,
        created_at: nowNoZone(),
        deleted: false,
        deleted_at: null,
        updated_at: null,
      });
      const { id: _id, created_at: _c, deleted: _d, deleted_at: _da, updated_at: _u, ...created } = keypair;
      return { keypair: keypairView(created, request) };
    });
    app.get(`${base}/os-keypairs/:name`, async (request) => {
      auth(request);
      const { name } = request.params as { name: string };
      const keypair = this.keypairs.find(name);
      if (!keypair) throw new ApiError(404, "itemNotFound", `Keypair ${name} not found for user ${this.identity.userId}`);
      return { keypair: keypairView({ ...keypair, id: 1 }, request) };
    });
    app.delete(`${base}/os-keypairs/:name`, async (request, reply) => {
      auth(request);
      const { name } = request.params as { name: string };
      if (!this.keypairs.find(name)) throw new ApiError(404, "itemNotFound", `Keypair ${name} not found for user ${this.identity.userId}`);
      this.keypairs.delete(name);
      return reply.code(202).send();
    });

    app.post(`${base}/os-server-groups`, async (request) => {
      auth(request);
      const body = (
        request.body as { server_group?: { name?: string; policy?: string; policies?: string[]; rules?: Record<string, unknown> } }
      )?.server_group;
      const policy = atLeast(request, 64) ? body?.policy : body?.policies?.[0];
      const valid = ["affinity", "anti-affinity", "soft-affinity", "soft-anti-affinity"];
      if (!body?.name || !policy || !valid.includes(policy))
        throw new ApiError(400, "badRequest", `Invalid input for field/attribute policy: ${String(policy)}.`);
      checkName("name", body.name);
      // nova/api/openstack/compute/server_groups.py, create: the server_groups quota.
      if (this.quotas.server_groups >= 0 && this.serverGroups.size + 1 > this.quotas.server_groups) {
        throw new ApiError(403, "forbidden", "Quota exceeded, too many server groups.");
      }
      const group = this.serverGroups.add({ name: body.name, policy, rules: body.rules ?? {}, members: [], metadata: {} });
      return { server_group: this.serverGroupView(group, request) };
    });
    app.get(`${base}/os-server-groups/:id`, async (request) => {
      auth(request);
      return { server_group: this.serverGroupView(this.serverGroups.get((request.params as { id: string }).id), request) };
    });
    app.get(`${base}/os-server-groups`, async (request) => {
      auth(request);
      return { server_groups: this.serverGroups.all().map((g) => this.serverGroupView(g, request)) };
    });
    app.delete(`${base}/os-server-groups/:id`, async (request, reply) => {
      auth(request);
      this.serverGroups.delete((request.params as { id: string }).id);
      return reply.code(204).send();
    });

    // nova/api/openstack/compute/quota_sets.py, show and detail: the limits, and in detail what
    // the project uses; the nova-network quotas only before 2.36.
    const quotaSet = (request: FastifyRequest, detail: boolean) => {
      const { project } = request.params as { project: string };
      const usage = this.usage();
      const shown = (Object.keys(this.quotas) as NovaQuota[]).filter((q) => !atLeast(request, 36) || !NOVA_NETWORK_QUOTAS.includes(q));
      const value = (q: NovaQuota) => (detail ? { limit: this.quotas[q], in_use: usage[q] ?? 0, reserved: 0 } : this.quotas[q]);
      return { quota_set: { id: project, ...Object.fromEntries(shown.map((q) => [q, value(q)])) } };
    };
    app.get(`${base}/os-quota-sets/:project`, async (request) => {
      auth(request);
      return quotaSet(request, false);
    });
    app.get(`${base}/os-quota-sets/:project/detail`, async (request) => {
      auth(request);
      return quotaSet(request, true);
    });

    app.post(`${base}/servers`, async (request, reply) => {
      auth(request);
      const body = request.body as { server?: Record<string, unknown>; "os:scheduler_hints"?: { group?: string } };
      const server = this.createServer(body?.server ?? {}, body?.["os:scheduler_hints"]?.group, request);
      return reply.code(202).send({
        server: {
          id: server.id,
          links: [],
          "OS-DCF:diskConfig": "MANUAL",
          security_groups: server.security_groups,
          adminPass: randomBytes(9).toString("base64"),
        },
      });
    });
    app.get(`${base}/servers/detail`, async (request) => {
      auth(request);
      const shown = filterBy(this.servers.all(), request.query as Query).flatMap((s) => {
        try {
          return [this.serverView(s.id, request)];
        } catch (error) {
          // A server whose deletion finished while listing is no longer there.
          if (error instanceof ApiError && error.status === 404) return [];
          throw error;
        }
      });
      return { servers: shown };
    });
    app.get(`${base}/servers/:id`, async (request) => {
      auth(request);
      return { server: this.serverView((request.params as { id: string }).id, request) };
    });
    app.put(`${base}/servers/:id`, async (request) => {
      auth(request);
      const { id } = request.params as { id: string };
      const changes = (request.body as { server?: { name?: string } })?.server ?? {};
      if (changes.name !== undefined) this.servers.update(id, { name: changes.name, updated: now() });
      return { server: this.serverView(id, request) };
    });
    // nova/compute/api.py, _delete: the API answers at once. A server on a host goes on showing,
    // with task_state "deleting", until that host has removed it; one that never got a host
    // (ERROR at scheduling) is deleted by the API itself (_local_delete), at once.
    app.delete(`${base}/servers/:id`, async (request, reply) => {
      auth(request);
      const { id } = request.params as { id: string };
      if (this.servers.get(id).host) this.servers.update(id, { deleting: 0 });
      else this.deleteServer(id);
      return reply.code(204).send();
    });
    // nova/api/openstack/compute/servers.py, _start and _stop (202): nova/compute/api.py's start
    // needs vm_state stopped, stop active or error, else 409 (common.py,
    // raise_http_conflict_for_instance_invalid_state). The host carries them out at once. Other
    // actions are not implemented.
    app.post(`${base}/servers/:id/action`, async (request, reply) => {
      auth(request);
      const { id } = request.params as { id: string };
      const body = (request.body ?? {}) as Record<string, unknown>;
      const server = this.servers.get(id);
      const conflict = (action: string) =>
        new ApiError(
          409,
          "conflictingRequest",
          `Cannot '${action}' instance ${id} while it is in vm_state ${vmState(server.status as string)}`,
        );
      if ("os-start" in body) {
        if (server.status !== "SHUTOFF") throw conflict("start");
        this.servers.update(id, { status: "ACTIVE", updated: now() });
        return reply.code(202).send();
      }
      if ("os-stop" in body) {
        if (server.status !== "ACTIVE" && server.status !== "ERROR") throw conflict("stop");
        this.servers.update(id, { status: "SHUTOFF", updated: now() });
        return reply.code(202).send();
      }
      return reply.callNotFound();
    });
    app.get(`${base}/servers/:id/os-interface`, async (request) => {
      auth(request);
      const server = this.servers.get((request.params as { id: string }).id);
      return {
        interfaceAttachments: this.neutron.ports
          .all()
          .filter((p) => p.device_id === server.id)
          .map((p) => ({ port_id: p.id, net_id: p.network_id, mac_addr: p.mac_address, port_state: "ACTIVE", fixed_ips: p.fixed_ips })),
      };
    });
    app.get(`${base}/servers/:id/metadata`, async (request) => {
      auth(request);
      return { metadata: this.servers.get((request.params as { id: string }).id).metadata };
    });
    // nova/api/openstack/compute/server_metadata.py: create merges the given items into the
    // server's (update_all would replace them), delete removes one, 404 for a key it lacks.
    app.post(`${base}/servers/:id/metadata`, async (request) => {
      auth(request);
      const { id } = request.params as { id: string };
      const given = (request.body as { metadata?: Record<string, unknown> })?.metadata;
      if (typeof given !== "object" || given === null) throw new ApiError(400, "badRequest", "Invalid input for field/attribute metadata.");
      const metadata = { ...(this.servers.get(id).metadata as Record<string, string>), ...(given as Record<string, string>) };
      this.servers.update(id, { metadata, updated: now() });
      return { metadata };
    });
    app.delete(`${base}/servers/:id/metadata/:key`, async (request, reply) => {
      auth(request);
      const { id, key } = request.params as { id: string; key: string };
      const { [key]: found, ...metadata } = this.servers.get(id).metadata as Record<string, string>;
      if (found === undefined) throw new ApiError(404, "itemNotFound", "Metadata item was not found");
      this.servers.update(id, { metadata, updated: now() });
      return reply.code(204).send();
    });
    app.get(`${base}/servers/:id/tags`, async (request) => {
      auth(request);
      return { tags: this.servers.get((request.params as { id: string }).id).tags };
    });
    // nova/api/openstack/compute/server_tags.py, update_all (microversion 2.26): the tags replaced,
    // 50 at most (nova/objects/instance.py, MAX_TAG_COUNT).
    app.put(`${base}/servers/:id/tags`, async (request) => {
      auth(request);
      const { id } = request.params as { id: string };
      if (!atLeast(request, 26)) throw new ApiError(404, "itemNotFound", "The resource could not be found.");
      const tags = (request.body as { tags?: unknown })?.tags;
      if (!Array.isArray(tags) || tags.some((tag) => typeof tag !== "string" || tag === "" || tag.length > 60 || /[,/]/.test(tag))) {
        throw new ApiError(400, "badRequest", "Invalid input for field/attribute tags.");
      }
      if (tags.length > 50) throw new ApiError(400, "badRequest", "The number of tags exceeded the per-server limit 50");
      this.servers.update(id, { tags: [...new Set(tags as string[])], updated: now() });
      return { tags: this.servers.get(id).tags };
    });

    app.post(`${base}/servers/:id/os-volume_attachments`, async (request) => {
      auth(request);
      const server = this.servers.get((request.params as { id: string }).id);
      const body = (request.body as { volumeAttachment?: { volumeId?: string; device?: string } })?.volumeAttachment;
      if (!body?.volumeId) throw new ApiError(400, "badRequest", "Invalid input for field/attribute volumeId.");
      if (!this.cinder.volumes.find(body.volumeId)) throw new ApiError(404, "itemNotFound", `Volume ${body.volumeId} could not be found.`);
      const attached = server.volumes_attached as { id: string; device: string }[];
      // nova/virt/libvirt/blockinfo.py, get_next_disk_info: the root disk is vda, the flavor's
      // ephemeral disk and swap take the next letters, and a volume the first letter left.
      const flavor = server.flavor as Flavor;
      // A boot volume is the root disk itself, already in the attached list.
      const bootFromVolume = (server.bootVolumes as BootVolumeRequest[]).length > 0;
      const taken = (bootFromVolume ? 0 : 1) + (flavor.ephemeral ? 1 : 0) + (flavor.swap ? 1 : 0) + attached.length;
      const device = body.device ?? `/dev/vd${String.fromCharCode("a".charCodeAt(0) + taken)}`;
      this.cinder.attach(body.volumeId, server.id, device);
      this.servers.update(server.id, {
        volumes_attached: [...attached, { id: body.volumeId, device, delete_on_termination: false }],
      });
      return { volumeAttachment: { id: body.volumeId, serverId: server.id, volumeId: body.volumeId, device } };
    });
    app.get(`${base}/servers/:id/os-volume_attachments`, async (request) => {
      auth(request);
      const server = this.servers.get((request.params as { id: string }).id);
      return {
        volumeAttachments: (server.volumes_attached as { id: string; device: string }[]).map((v) => ({
          id: v.id,
          serverId: server.id,
          volumeId: v.id,
          device: v.device,
        })),
      };
    });
    app.get(`${base}/servers/:id/os-volume_attachments/:volumeId`, async (request) => {
      auth(request);
      const { id, volumeId } = request.params as { id: string; volumeId: string };
      const server = this.servers.get(id);
      const attachment = (server.volumes_attached as { id: string; device: string }[]).find((v) => v.id === volumeId);
      if (!attachment) throw new ApiError(404, "itemNotFound", `Volume ${volumeId} is not attached to ${id}`);
      return { volumeAttachment: { id: volumeId, serverId: id, volumeId, device: attachment.device } };
    });
    app.delete(`${base}/servers/:id/os-volume_attachments/:volumeId`, async (request, reply) => {
      auth(request);
      const { id, volumeId } = request.params as { id: string; volumeId: string };
      const server = this.servers.get(id);
      const attached = server.volumes_attached as { id: string; device: string }[];
      if (!attached.some((v) => v.id === volumeId)) throw new ApiError(404, "itemNotFound", `Volume ${volumeId} is not attached to ${id}`);
      this.servers.update(id, { volumes_attached: attached.filter((v) => v.id !== volumeId) });
      this.cinder.detach(volumeId);
      return reply.code(202).send();
    });
  }

  /** nova/api/openstack/compute/views/flavors.py: a description from 2.55 (the default flavors have none). */
  private flavorView(flavor: Flavor, request: FastifyRequest) {
    return {
      ...(atLeast(request, 55) ? { description: null } : {}),
      id: flavor.id,
      name: flavor.name,
      vcpus: flavor.vcpus,
      ram: flavor.ram,
      disk: flavor.disk,
      swap: flavor.swap ? flavor.swap : "",
      "OS-FLV-EXT-DATA:ephemeral": flavor.ephemeral ?? 0,
      "OS-FLV-DISABLED:disabled": false,
      "os-flavor-access:is_public": true,
      rxtx_factor: 1.0,
      links: [],
    };
  }

  private serverGroupView(group: Resource, request: FastifyRequest) {
    const common = {
      id: group.id,
      name: group.name,
      members: group.members,
      project_id: this.identity.projectId,
      user_id: this.identity.userId,
    };
    // nova/api/openstack/compute/server_groups.py, _format_server_group: before 2.64, one policy
    // in a list and an empty metadata.
    return atLeast(request, 64)
      ? { ...common, policy: group.policy, rules: group.rules }
      : { ...common, policies: [group.policy], metadata: group.metadata };
  }

  /**
   * What the project uses of each quota, as Nova counts it (nova/quota.py,
   * _instances_cores_ram_count, _keypair_get_count_by_user, _server_group_count and
   * _server_group_count_members_by_user): ERROR servers count too.
   */
  usage(): Partial<Record<NovaQuota, number>> {
    const servers = this.servers.all();
    return {
      instances: servers.length,
      cores: servers.reduce((sum, s) => sum + (s.flavor as Flavor).vcpus, 0),
      ram: servers.reduce((sum, s) => sum + (s.flavor as Flavor).ram, 0),
      key_pairs: this.keypairs.size,
      server_groups: this.serverGroups.size,
      server_group_members: this.serverGroups.all().reduce((sum, g) => sum + (g.members as string[]).length, 0),
    };
  }

  private createServer(body: Record<string, unknown>, groupId: string | undefined, request: FastifyRequest): Resource {
    checkName("name", body.name);
    // nova/api/openstack/compute/schemas/servers.py: tags in a create from 2.52 (create_v252).
    if ("tags" in body && !atLeast(request, 52)) {
      throw invalidField("server", pythonRepr(body), "Additional properties are not allowed ('tags' was unexpected)");
    }
    const mappings = (body.block_device_mapping_v2 as BlockDeviceMapping[] | undefined) ?? [];
    // nova/api/openstack/compute/schemas/servers.py: volume_type in a mapping from 2.67 only
    // (create_v267); before, the item's additionalProperties refuse it.
    mappings.forEach((bdm, index) => {
      if ("volume_type" in bdm && !atLeast(request, 67)) {
        throw invalidField(String(index), pythonRepr(bdm), "Additional properties are not allowed ('volume_type' was unexpected)");
      }
    });
    const flavor = this.flavors.find((f) => f.id === String(body.flavorRef));
    if (!flavor) throw new ApiError(400, "badRequest", `Flavor ${String(body.flavorRef)} could not be found.`);
    // nova/compute/api.py, API.create: a zone no enabled compute service is in is refused
    // (InvalidRequest, a 400 in servers.py, create); "zone:host" forces a host, admin only.
    const requestedZone =
      typeof body.availability_zone === "string" && body.availability_zone !== "" ? body.availability_zone.split(":")[0] : undefined;
    if (requestedZone !== undefined && !this.availabilityZones.includes(requestedZone)) {
      throw new ApiError(400, "badRequest", "The requested availability zone is not available");
    }
    // nova/api/openstack/compute/servers.py, create: ImageNotFound becomes a 400.
    if (body.imageRef && !this.glance.images.find(String(body.imageRef)))
      throw new ApiError(400, "badRequest", "Can not find requested image");
    const bootVolume = mappings.some((bdm) => String(bdm.boot_index) === "0" && bdm.destination_type === "volume");
    // nova/compute/api.py, _validate_flavor_image_nostatus: a zero-disk flavor needs a boot volume.
    if (flavor.disk === 0 && !bootVolume) {
      throw new ApiError(403, "forbidden", "Only volume-backed servers are allowed for flavors with zero disk.");
    }
    if (body.key_name && !this.keypairs.find(String(body.key_name))) throw new ApiError(400, "badRequest", `Invalid key_name provided.`);
    // nova/compute/utils.py, check_num_instances_quota: instances, cores and ram, 403 from the API.
    const usage = this.usage();
    const requested: Partial<Record<NovaQuota, number>> = { instances: 1, cores: flavor.vcpus, ram: flavor.ram };
    const overs = (["cores", "instances", "ram"] as const).filter(
      (q) => this.quotas[q] >= 0 && (usage[q] ?? 0) + (requested[q] ?? 0) > this.quotas[q],
    );
    if (overs.length > 0) {
      const list = (f: (q: NovaQuota) => number) => overs.map((q) => String(f(q))).join(", ");
      throw new ApiError(
        403,
        "forbidden",
        `Quota exceeded for ${overs.join(", ")}: Requested ${list((q) => requested[q] ?? 0)}, but already used ${list((q) => usage[q] ?? 0)} of ${list((q) => this.quotas[q])} ${overs.join(", ")}`,
      );
    }
    const bootVolumes = this.validateBlockDeviceMappings(mappings);
    const group = groupId ? this.serverGroups.get(groupId) : undefined;
    // nova/compute/api.py, _provision_instances: the group's member quota.
    if (group && this.quotas.server_group_members >= 0 && (group.members as string[]).length + 1 > this.quotas.server_group_members) {
      throw new ApiError(403, "forbidden", "Quota exceeded, too many servers in group");
    }
    const id = randomUUID();
    const networks = (body.networks as { port?: string; uuid?: string; fixed_ip?: string }[] | string | undefined) ?? [];
    const ports: string[] = [];
    for (const network of Array.isArray(networks) ? networks : []) {
      if (network.port) {
        const port = this.neutron.ports.get(network.port);
        if (port.device_id) throw new ApiError(409, "conflictingRequest", `Port ${port.id} is still in use.`);
        this.neutron.ports.update(port.id, {
          device_id: id,
          device_owner: "compute:nova",
          "binding:host_id": "compute-1",
          "binding:vif_type": "ovs",
        });
        ports.push(port.id);
      } else if (network.uuid) {
        const port = this.neutron.createPort({
          network_id: network.uuid,
          ...(network.fixed_ip ? { fixed_ips: [{ ip_address: network.fixed_ip }] } : {}),
          device_id: id,
          device_owner: "compute:nova",
        });
        this.neutron.ports.update(port.id, { created_by_nova: true });
        ports.push(port.id);
      }
    }
    const timestamp = now();
    const server = this.servers.add({
      id,
      name: body.name,
      status: "BUILD",
      reads: 0,
      fault: this.failures.find((f) => f.matches(String(body.name)))?.message ?? null,
      tenant_id: this.identity.projectId,
      user_id: this.identity.userId,
      metadata: body.metadata ?? {},
      image: body.imageRef ? { id: body.imageRef, links: [] } : "",
      flavor,
      key_name: body.key_name ?? null,
      user_data: body.user_data ?? null,
      security_groups: ((body.security_groups as { name: string }[] | undefined) ?? [{ name: "default" }]).map((g) => ({ name: g.name })),
      // nova/availability_zones.py, get_instance_availability_zone: the requested zone until a
      // host is found, then the host's.
      availability_zone: requestedZone ?? "",
      requested_zone: requestedZone,
      bootVolumes,
      config_drive: body.config_drive === true ? "True" : "",
      tags: body.tags ?? [],
      volumes_attached: [],
      ports,
      created: timestamp,
      updated: timestamp,
    });
    if (group) this.serverGroups.update(group.id, { members: [...(group.members as string[]), id] });
    return server;
  }

  /**
   * Where the scheduler puts a server (nova/scheduler/filters/affinity_filter.py): a hard
   * anti-affinity group needs a host none of its members is on, affinity the members' host; the
   * soft policies only weigh hosts. Undefined: no valid host.
   */
  private schedule(id: string): string | undefined {
    const group = this.serverGroups.all().find((g) => (g.members as string[]).includes(id));
    const peers = group ? this.servers.all().filter((s) => s.id !== id && (group.members as string[]).includes(s.id) && s.host) : [];
    // nova/scheduler/request_filter.py, map_az_to_placement_aggregate: only the requested zone's hosts.
    const zone = this.servers.get(id).requested_zone as string | undefined;
    const hosts = Array.from({ length: this.hosts }, (_, n) => `compute-${n + 1}`).filter(
      (h) => zone === undefined || this.zoneOf(h) === zone,
    );
    if (group?.policy === "anti-affinity") return hosts.find((h) => !peers.some((p) => p.host === h));
    if (group?.policy === "affinity" && peers.length > 0) return String(peers[0].host);
    return hosts[
      this.servers.all().filter((s) => s.host && (zone === undefined || this.zoneOf(String(s.host)) === zone)).length % hosts.length
    ];
  }

  /**
   * Nova's view of a server. It is BUILD for `buildReads` reads, then the scheduler places it:
   * ACTIVE on a host, or ERROR with a fault when no host fits or a failure was injected.
   */
  private serverView(id: string, request: FastifyRequest): Resource {
    const deleting = this.servers.get(id).deleting as number | undefined;
    if (deleting !== undefined) {
      if (deleting >= this.deleteReads) {
        this.deleteServer(id);
        throw new ApiError(404, "itemNotFound", `Instance ${id} could not be found.`);
      }
      this.servers.update(id, { deleting: deleting + 1 });
    }
    const stored = this.servers.get(id);
    const reads = (stored.reads as number) + 1;
    let outcome: Record<string, unknown> = {};
    if (stored.status === "BUILD" && reads > this.buildReads) {
      const host = stored.fault ? undefined : this.schedule(id);
      const built = host ? this.prepareBlockDevices(id, host) : undefined;
      outcome = built
        ? { status: "ERROR", updated: now(), fault: { code: 500, message: built, created: now() } }
        : host
          ? { status: "ACTIVE", host, availability_zone: this.zoneOf(host), launched_at: nowNoZone(), updated: now() }
          : {
              status: "ERROR",
              updated: now(),
              // nova/api/openstack/compute/views/servers.py, _get_fault: code, message, created.
              fault: { code: 500, message: stored.fault ?? NO_VALID_HOST, created: now() },
            };
    }
    const server = this.servers.update(id, { reads, ...outcome });
    const flavor = server.flavor as Flavor;
    const addresses: Record<string, unknown[]> = {};
    for (const portId of server.ports as string[]) {
      const port = this.neutron.ports.find(portId);
      if (!port) continue;
      const network = this.neutron.networks.get(String(port.network_id));
      addresses[String(network.name)] = (port.fixed_ips as { ip_address: string }[]).map((ip) => ({
        version: 4,
        addr: ip.ip_address,
        "OS-EXT-IPS:type": "fixed",
        "OS-EXT-IPS-MAC:mac_addr": port.mac_address,
      }));
    }
    const active = server.status === "ACTIVE";
    const failed = server.status === "ERROR";
    // Stopped (os-stop, or a host that stopped it): on its host, launched, powered off.
    const stopped = server.status === "SHUTOFF";
    return {
      id: server.id,
      name: server.name,
      status: server.status,
      tenant_id: server.tenant_id,
      user_id: server.user_id,
      metadata: server.metadata,
      hostId: active || stopped ? randomBytes(28).toString("hex") : "",
      image: server.image,
      flavor: atLeast(request, 47)
        ? {
            original_name: flavor.name,
            vcpus: flavor.vcpus,
            ram: flavor.ram,
            disk: flavor.disk,
            ephemeral: flavor.ephemeral ?? 0,
            swap: flavor.swap ?? 0,
            extra_specs: {},
          }
        : { id: flavor.id, links: [] },
      created: server.created,
      updated: server.updated,
      addresses,
      accessIPv4: "",
      accessIPv6: "",
      links: [],
      "OS-DCF:diskConfig": "MANUAL",
      progress: active ? 100 : 0,
      "OS-EXT-AZ:availability_zone": server.availability_zone,
      config_drive: server.config_drive,
      key_name: server.key_name,
      "OS-SRV-USG:launched_at": active || stopped ? server.launched_at : null,
      "OS-SRV-USG:terminated_at": null,
      "OS-EXT-STS:task_state": server.deleting !== undefined ? "deleting" : active || failed || stopped ? null : "spawning",
      "OS-EXT-STS:vm_state": vmState(server.status as string),
      // nova/compute/power_state.py: RUNNING 1, SHUTDOWN 4, NOSTATE 0.
      "OS-EXT-STS:power_state": active ? 1 : stopped ? 4 : 0,
      ...(failed ? { fault: server.fault } : {}),
      // nova/api/openstack/compute/views/servers.py, _add_volumes_attachments: from 2.3.
      "os-extended-volumes:volumes_attached": (server.volumes_attached as { id: string; delete_on_termination: boolean }[]).map((v) => ({
        id: v.id,
        ...(atLeast(request, 3) ? { delete_on_termination: v.delete_on_termination } : {}),
      })),
      security_groups: server.security_groups,
      // nova/api/openstack/compute/views/servers.py, show: locked from 2.9, description from 2.19
      // (null: the stack gives none), tags from 2.26 (the provider reads a server's tags at 2.26).
      ...(atLeast(request, 9) ? { locked: false } : {}),
      ...(atLeast(request, 19) ? { description: null } : {}),
      ...(atLeast(request, 26) ? { tags: server.tags } : {}),
    };
  }

  /**
   * nova/compute/api.py, _validate_bdm, in its order: boot indexes 0, 1, ... (at least one), then
   * for each mapping its volume type among Cinder's, its image, and a size for an image copied to
   * a volume. Returns the volumes to create from images at build time.
   */
  private validateBlockDeviceMappings(mappings: BlockDeviceMapping[]): BootVolumeRequest[] {
    if (mappings.length === 0) return [];
    const bootIndexes = mappings
      .map((bdm) => (bdm.boot_index === null || bdm.boot_index === undefined ? -1 : Number(bdm.boot_index)))
      .filter((index) => index >= 0)
      .sort((a, b) => a - b);
    if (bootIndexes.length === 0 || bootIndexes.some((value, index) => value !== index)) {
      throw new ApiError(
        400,
        "badRequest",
        "Block Device Mapping is Invalid: Boot sequence for the instance and image/block device mapping combination is not valid.",
      );
    }
    const volumes: BootVolumeRequest[] = [];
    for (const bdm of mappings) {
      if (bdm.volume_type) {
        // nova/compute/api.py, _check_requested_volume_type: by id or name.
        const known = this.cinder.volumeTypes.all().some((t) => t.id === bdm.volume_type || t.name === bdm.volume_type);
        if (!known) throw new ApiError(400, "badRequest", `Volume type ${bdm.volume_type} could not be found.`);
      }
      if (bdm.source_type === "image" && bdm.uuid !== undefined) {
        if (!this.glance.images.find(bdm.uuid)) {
          throw new ApiError(400, "badRequest", `Block Device Mapping is Invalid: failed to get image ${bdm.uuid}.`);
        }
        if (bdm.destination_type === "volume") {
          if (!bdm.volume_size || Number(bdm.volume_size) === 0) {
            throw new ApiError(400, "badRequest", "Images with destination_type 'volume' need to have a non-zero size specified");
          }
          volumes.push({
            imageId: bdm.uuid,
            size: Number(bdm.volume_size),
            volumeType: bdm.volume_type ?? undefined,
            deleteOnTermination: bdm.delete_on_termination === true,
          });
        }
      }
    }
    return volumes;
  }

  /**
   * On the compute host (nova/compute/manager.py, _prep_block_device): each boot volume is created
   * in Cinder and attached, the first as /dev/vda. Cinder's refusal (its quota included) aborts
   * the build: the fault reads "Build of instance <id> aborted: <Cinder's message>"
   * (_build_resources turns OverQuota and InvalidBDM into BuildAbortException). Returns that
   * fault, or undefined when all went well.
   */
  private prepareBlockDevices(id: string, host: string): string | undefined {
    const server = this.servers.get(id);
    const attached: { id: string; device: string; delete_on_termination: boolean }[] = [];
    for (const [index, request] of (server.bootVolumes as BootVolumeRequest[]).entries()) {
      try {
        const image = this.glance.images.get(request.imageId);
        const zone = this.crossAzAttach ? undefined : this.zoneOf(host);
        const volume = this.cinder.createBootVolume(request.size, image, request.volumeType, zone);
        const device = `/dev/vd${String.fromCharCode("a".charCodeAt(0) + index)}`;
        this.cinder.attach(volume.id, id, device);
        attached.push({ id: volume.id, device, delete_on_termination: request.deleteOnTermination });
      } catch (error) {
        if (!(error instanceof ApiError)) throw error;
        this.servers.update(id, { volumes_attached: attached });
        return `Build of instance ${id} aborted: ${error.message}`;
      }
    }
    this.servers.update(id, { volumes_attached: attached });
    return undefined;
  }

  /**
   * For tests: a server deleted by someone other than the stack (the dashboard, another tool), as
   * Nova's own delete leaves its volumes and ports.
   */
  deleteOutOfBand(id: string): void {
    this.deleteServer(id);
  }

  private deleteServer(id: string): void {
    const server = this.servers.get(id);
    // nova/compute/manager.py, _cleanup_volumes: detach, and delete those marked delete_on_termination.
    for (const volume of server.volumes_attached as { id: string; delete_on_termination: boolean }[]) {
      this.cinder.detach(volume.id);
      if (volume.delete_on_termination && this.cinder.volumes.find(volume.id)) this.cinder.volumes.delete(volume.id);
    }
    for (const portId of server.ports as string[]) {
      const port = this.neutron.ports.find(portId);
      if (!port) continue;
      if (port.created_by_nova) this.neutron.ports.delete(portId);
      else this.neutron.ports.update(portId, { device_id: "", device_owner: "", "binding:host_id": "", "binding:vif_type": "unbound" });
    }
    for (const group of this.serverGroups.all()) {
      if ((group.members as string[]).includes(id))
        this.serverGroups.update(group.id, { members: (group.members as string[]).filter((m) => m !== id) });
    }
    this.servers.delete(id);
  }
}
