import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, Collection, filterBy, nowNoZone as now, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;

/**
 * Cinder v3 volumes. A new volume is "creating" until it is first read, then "available";
 * Nova's attach makes it "in-use" with an attachment, and detach makes it "available" again.
 */
export class Cinder {
  readonly volumes = new Collection("Volume", "VolumeNotFound");

  constructor(private readonly projectId: string) {}

  register(app: FastifyInstance, auth: (request: FastifyRequest) => void): void {
    const base = "/volume/v3/:project";
    const project = (request: FastifyRequest) => {
      auth(request);
      const { project: id } = request.params as { project: string };
      if (id !== this.projectId) throw new ApiError(404, "itemNotFound", `Project ${id} not found.`);
    };
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
      const timestamp = now();
      const volume = this.volumes.add({
        name: null,
        description: null,
        availability_zone: "nova",
        volume_type: "__DEFAULT__",
        metadata: {},
        snapshot_id: null,
        source_volid: null,
        ...body,
        size: body.size,
        status: "creating",
        bootable: "false",
        encrypted: false,
        multiattach: false,
        attachments: [],
        consistencygroup_id: null,
        replication_status: null,
        user_id: null,
        "os-vol-tenant-attr:tenant_id": this.projectId,
        created_at: timestamp,
        updated_at: timestamp,
      });
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

  /** Reading a creating volume completes it, the way a fast backend would. */
  private show(id: string): Resource {
    const volume = this.volumes.get(id);
    if (volume.status === "creating") return this.view(this.volumes.update(id, { status: "available", updated_at: now() }));
    return this.view(volume);
  }

  private view(volume: Resource): Resource {
    return { ...volume, links: [] };
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
