import type { FastifyInstance, FastifyRequest } from "fastify";
import { Collection, filterBy, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;

/**
 * Glance's `visibility` filter (api-ref image v2, "List images"): without it the list holds public,
 * private and shared images but not community ones; `all` holds every image. `member_status`
 * narrows shared images only, and the double's images have no members, so it is ignored. The
 * other filters (`name`, `status`, `os_hidden`, `tag`...) are exact matches, as filterBy does;
 * `sort` is ignored (the provider orders the results itself for `most_recent`).
 */
function visible(visibility: string | string[] | undefined): (image: Resource) => boolean {
  if (visibility === undefined) return (image) => image.visibility !== "community";
  if (visibility === "all") return () => true;
  return (image) => image.visibility === visibility;
}

/** Glance v2 images, read-only: tests seed them. */
export class Glance {
  readonly images = new Collection("Image", "ImageNotFound");

  constructor(private readonly projectId: string) {}

  /** Seeds an image; each is created a second after the one before, so "most recent" is well defined. */
  seedImage(id: string, name: string, visibility = "public"): Resource {
    const secondsAgo = 1000 - this.images.all().length;
    const timestamp = new Date(Date.now() - secondsAgo * 1000).toISOString().replace(/\.\d{3}Z$/, "Z");
    return this.images.add({
      id,
      name,
      status: "active",
      visibility,
      protected: false,
      os_hidden: false,
      container_format: "bare",
      disk_format: "qcow2",
      min_disk: 0,
      min_ram: 0,
      size: 2361393152,
      virtual_size: null,
      checksum: "c1b2e9d3fbd4a1f3e5b4c6d7e8f9a0b1",
      os_hash_algo: "sha512",
      os_hash_value: "0".repeat(128),
      owner: this.projectId,
      tags: [],
      created_at: timestamp,
      updated_at: timestamp,
      file: `/v2/images/${id}/file`,
      self: `/v2/images/${id}`,
      schema: "/v2/schemas/image",
    });
  }

  register(app: FastifyInstance, auth: (request: FastifyRequest) => void): void {
    app.get("/image/v2/images", async (request) => {
      auth(request);
      const { visibility, member_status: _memberStatus, ...query } = request.query as Query;
      return { images: filterBy(this.images.all().filter(visible(visibility)), query), first: "/v2/images", schema: "/v2/schemas/images" };
    });
    app.get("/image/v2/images/:id", async (request) => {
      auth(request);
      return this.images.get((request.params as { id: string }).id);
    });
  }
}
