import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, Collection, filterBy, nowNoZone as now, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;

/**
 * Cinder's default quotas (cinder/quota.py, quota_opts; per_volume_gigabytes unlimited), and the
 * default volume type's own, unlimited. Tests change them per double. -1 is unlimited.
 */
export const CINDER_DEFAULT_QUOTAS = {
  volumes: 10,
  snapshots: 10,
  gigabytes: 1000,
  backups: 10,
  backup_gigabytes: 1000,
  groups: 10,
  per_volume_gigabytes: -1,
  volumes___DEFAULT__: -1,
  snapshots___DEFAULT__: -1,
  gigabytes___DEFAULT__: -1,
};
export type CinderQuota = keyof typeof CINDER_DEFAULT_QUOTAS;

/** The volume type every Cinder has (cinder/db/migrations/versions/921e1a36b076_initial.py). */
export const DEFAULT_VOLUME_TYPE = "__DEFAULT__";

export interface CinderOptions {
  /** Cinder's availability zones; the first is its default_availability_zone. @default ["nova"] */
  readonly availabilityZones?: readonly string[];
  /** Volume types to seed besides __DEFAULT__. @default none */
  readonly volumeTypes?: readonly string[];
}

/**
 * Cinder v3 volumes. A new volume is "creating" for `creatingReads` reads, then "available" (or
 * "error" when a failure was injected); Nova's attach makes it "in-use" with an attachment, and
 * detach makes it "available" again.
 */
export class Cinder {
  readonly volumes = new Collection("Volume", "VolumeNotFound");
  readonly volumeTypes = new Collection("Volume type", "VolumeTypeNotFound");
  /**
   * The project's quota limits; a test may change any of them. Each volume type has its own
   * volumes_, snapshots_ and gigabytes_ quota, unlimited (cinder/quota.py, VolumeTypeQuotaEngine).
   */
  readonly quotas: Record<CinderQuota, number> & Record<string, number> = { ...CINDER_DEFAULT_QUOTAS };
  readonly availabilityZones: readonly string[];
  /** Reads of a new volume that still show "creating". */
  creatingReads = 1;
  private failures: ((name: string) => boolean)[] = [];

  /** Volumes created from now on whose name `matches` end in "error"; returns the function that stops it. */
  failVolumes(matches: (name: string) => boolean): () => void {
    this.failures.push(matches);
    return () => {
      this.failures = this.failures.filter((f) => f !== matches);
    };
  }

  constructor(
    private readonly projectId: string,
    options: CinderOptions = {},
  ) {
    this.availabilityZones = options.availabilityZones ?? ["nova"];
    for (const name of [DEFAULT_VOLUME_TYPE, ...(options.volumeTypes ?? [])]) {
      this.volumeTypes.add({
        name,
        description: name === DEFAULT_VOLUME_TYPE ? "Default Volume Type" : null,
        is_public: true,
        // cinder/api/v3/views/types.py, show: qos_specs_id only for admins (cinder/policies/volume_type.py).
        extra_specs: {},
      });
      if (name !== DEFAULT_VOLUME_TYPE) for (const kind of ["volumes", "snapshots", "gigabytes"]) this.quotas[`${kind}_${name}`] = -1;
    }
  }

  /** cinder/volume/volume_types.py, get_by_name_or_id, as the API reports a miss (404). */
  volumeType(nameOrId: string): Resource {
    const type = this.volumeTypes.all().find((t) => t.id === nameOrId || t.name === nameOrId);
    if (!type) throw new ApiError(404, "itemNotFound", `Volume type with name ${nameOrId} could not be found.`);
    return type;
  }

  /**
   * cinder/volume/flows/api/create_volume.py, ExtractVolumeRequestTask._extract_availability_zones:
   * none given is the default zone; one Cinder does not have is a 400
   * (allow_availability_zone_fallback is off by default).
   */
  private availabilityZone(requested: unknown): string {
    if (requested === undefined || requested === null) return this.availabilityZones[0];
    if (!this.availabilityZones.includes(String(requested))) {
      throw new ApiError(400, "badRequest", `Availability zone '${String(requested)}' is invalid.`);
    }
    return String(requested);
  }
  register(app: FastifyInstance, auth: (request: FastifyRequest) => void): void {
    const base = "/volume/v3/:project";
    const project = (request: FastifyRequest) => {
      auth(request);
      const { project: id } = request.params as { project: string };
      if (id !== this.projectId) throw new ApiError(404, "itemNotFound", `Project ${id} not found.`);
    };
    // cinder/api/contrib/quotas.py, show: limits, or with ?usage=true limit, in_use and reserved.
    app.get(`${base}/os-quota-sets/:target`, async (request) => {
      project(request);
      const { target } = request.params as { target: string };
      const usage = ["true", "True", "1"].includes(String((request.query as Query).usage ?? ""));
      const used = this.usage();
      const value = (q: CinderQuota) =>
        usage ? { limit: this.quotas[q], in_use: used[q] ?? 0, reserved: 0, allocated: 0 } : this.quotas[q];
      return { quota_set: { ...Object.fromEntries((Object.keys(this.quotas) as CinderQuota[]).map((q) => [q, value(q)])), id: target } };
    });
    // cinder/api/v3/types.py, VolumeTypesController.index and show (views/types.py).
    app.get(`${base}/types`, async (request) => {
      project(request);
      return { volume_types: this.volumeTypes.all() };
    });
    app.get(`${base}/types/:id`, async (request) => {
      project(request);
      return { volume_type: this.volumeTypes.get((request.params as { id: string }).id) };
    });
    app.get(`${base}/volumes/detail`, async (request) => {
      project(request);
      return { volumes: filterBy(this.volumes.all(), request.query as Query).map((v) => this.show(v.id)) };
    });
    app.get(`${base}/volumes/:id`, async (request) => {
      project(request);
      return { volume: this.show((request.params as { id: string }).id) };
    });
    app.post(`${base}/volumes`, async (request, reply) => {
      project(request);
      const body = (request.body as { volume?: Record<string, unknown> })?.volume;
      if (!body || !Number.isInteger(body.size) || (body.size as number) < 1) {
        throw new ApiError(400, "badRequest", "Invalid input received: volume size must be a positive integer.");
      }
      // cinder/api/validation/validators.py, _validate_name_non_mandatory_remove_white_spaces: at
      // most 255 characters once stripped (oslo_utils.strutils.check_string_length's message).
      if (typeof body.name === "string" && body.name.trim().length > 255) {
        throw new ApiError(400, "badRequest", `Invalid input received: name has ${body.name.trim().length} characters, more than 255.`);
      }
      const volume = this.newVolume(
        body.size as number,
        body.volume_type ? String(body.volume_type) : DEFAULT_VOLUME_TYPE,
        body.availability_zone,
        {
          ...body,
          status: "creating",
          reads: 0,
          fails: this.failures.some((matches) => matches(String(body.name ?? ""))),
          bootable: "false",
        },
      );
      return reply.code(202).send({ volume: this.view(volume) });
    });
    app.put(`${base}/volumes/:id`, async (request) => {
      project(request);
      const { id } = request.params as { id: string };
      const changes = (request.body as { volume?: Record<string, unknown> })?.volume ?? {};
      const allowed = Object.fromEntries(Object.entries(changes).filter(([k]) => ["name", "description", "metadata"].includes(k)));
      return { volume: this.view(this.volumes.update(id, { ...allowed, updated_at: now() })) };
    });
    app.delete(`${base}/volumes/:id`, async (request, reply) => {
      project(request);
      const { id } = request.params as { id: string };
      const volume = this.volumes.get(id);
      if (volume.status !== "available" && volume.status !== "error" && volume.status !== "creating") {
        throw new ApiError(
          400,
          "badRequest",
          `Invalid volume: Volume status must be available or error, but current status is: ${String(volume.status)}.`,
        );
      }
      this.volumes.delete(id);
      return reply.code(202).send();
    });
  }

  /** What the project uses of each quota (cinder/quota.py counts volumes and their sizes). */
  usage(): Partial<Record<CinderQuota, number>> {
    const volumes = this.volumes.all();
    return { volumes: volumes.length, gigabytes: volumes.reduce((sum, v) => sum + (v.size as number), 0) };
  }

  /**
   * cinder/volume/flows/api/create_volume.py, QuotaReserveTask, and cinder/quota_utils.py,
   * process_reserve_over_quota: 413 naming the quota, gigabytes first.
   */
  private checkQuota(size: number): void {
    const used = this.usage();
    const { per_volume_gigabytes: perVolume, gigabytes, volumes } = this.quotas;
    if (perVolume >= 0 && size > perVolume) {
      throw new ApiError(413, "overLimit", `Requested volume size ${size}G is larger than maximum allowed limit ${perVolume}G.`);
    }
    if (gigabytes >= 0 && (used.gigabytes ?? 0) + size > gigabytes) {
      throw new ApiError(
        413,
        "overLimit",
        `Requested volume or snapshot exceeds allowed gigabytes quota. Requested ${size}G, quota is ${gigabytes}G and ${used.gigabytes ?? 0}G has been consumed.`,
      );
    }
    if (volumes >= 0 && (used.volumes ?? 0) + 1 > volumes) {
      throw new ApiError(413, "overLimit", `Maximum number of volumes allowed (${volumes}) exceeded for quota 'volumes'.`);
    }
  }

  /**
   * A volume as GET /volumes/{id} and /volumes/detail show it: with its project as
   * os-vol-tenant-attr:tenant_id, which cinder/api/contrib/volume_tenant_attribute.py adds to
   * those two alone (a project reader may see it, cinder/policies/volumes.py). A creating volume
   * completes after `creatingReads` reads, the way a backend would.
   */
  private show(id: string): Resource {
    const volume = this.volumes.get(id);
    const reads = (volume.reads as number) + 1;
    const read =
      volume.status === "creating" && reads > this.creatingReads
        ? this.volumes.update(id, { reads, status: volume.fails ? "error" : "available", updated_at: now() })
        : this.volumes.update(id, { reads });
    return { ...this.view(read), "os-vol-tenant-attr:tenant_id": this.projectId } as Resource;
  }

  private view(volume: Resource): Resource {
    const { reads: _reads, fails: _fails, ...visible } = volume;
    return { ...visible, links: [] } as Resource;
  }

  /**
   * What Nova's compute host asks for a boot volume (nova/virt/block_device.py,
   * DriverImageBlockDevice.attach, _create_volume): a volume from the image, named "", of the
   * given type, in `zone` (none: Cinder's default), with Cinder's checks and quota; it is
   * available once Cinder has copied the image (cinder/volume/flows/manager/create_volume.py
   * marks it bootable with the image's metadata).
   */
  createBootVolume(size: number, image: Resource, volumeType: string | undefined, zone: string | undefined): Resource {
    return this.newVolume(size, volumeType ?? DEFAULT_VOLUME_TYPE, zone, {
      name: "",
      description: "",
      status: "available",
      reads: 0,
      fails: false,
      bootable: "true",
      volume_image_metadata: {
        image_id: image.id,
        image_name: image.name,
        container_format: image.container_format,
        disk_format: image.disk_format,
        min_disk: String(image.min_disk),
        min_ram: String(image.min_ram),
        size: String(image.size),
        checksum: image.checksum,
      },
    });
  }

  /**
   * A new volume of `size` GiB, with Cinder's checks in cinder/api/v3/volumes.py,
   * VolumeController.create's order: the type first, then the flow's availability zone and quota.
   * `fields` are the caller's (a request body's, or Nova's boot volume's); the rest is Cinder's.
   */
  private newVolume(size: number, type: string, zone: unknown, fields: Record<string, unknown>): Resource {
    const volumeType = this.volumeType(type);
    const availabilityZone = this.availabilityZone(zone);
    this.checkQuota(size);
    const timestamp = now();
    return this.volumes.add({
      name: null,
      description: null,
      metadata: {},
      snapshot_id: null,
      source_volid: null,
      ...fields,
      availability_zone: availabilityZone,
      volume_type: volumeType.name,
      size,
      encrypted: false,
      multiattach: false,
      attachments: [],
      consistencygroup_id: null,
      replication_status: null,
      user_id: null,
      created_at: timestamp,
      updated_at: timestamp,
    });
  }

  /** Called by Nova. Throws Cinder's own 400 when the volume cannot be attached. */
  attach(volumeId: string, serverId: string, device: string): void {
    const volume = this.volumes.get(volumeId);
    if (volume.status !== "available") {
      throw new ApiError(
        400,
        "badRequest",
        `Invalid volume: volume ${volumeId} status must be available, but current status is: ${String(volume.status)}`,
      );
    }
    const attachment = {
      id: volumeId,
      attachment_id: `${volumeId}-${serverId}`,
      volume_id: volumeId,
      server_id: serverId,
      device,
      attached_at: now(),
      host_name: null,
    };
    this.volumes.update(volumeId, { status: "in-use", attachments: [attachment], updated_at: now() });
  }

  detach(volumeId: string): void {
    if (this.volumes.find(volumeId)) this.volumes.update(volumeId, { status: "available", attachments: [], updated_at: now() });
  }
}
