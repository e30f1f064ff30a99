import type { FastifyInstance, FastifyRequest } from "fastify";
import { Collection, filterBy, now, Resource } from "./store";

type Query = Record<string, string | string[] | undefined>;

/** Glance v2 images, read-only: tests seed them. */
export class Glance {
  readonly images = new Collection("Image", "ImageNotFound");

  constructor(private readonly projectId: string) {}

  seedImage(id: string, name: string): Resource {
    const timestamp = now();
    return this.images.add({
      id,
      name,
      status: "active",
      visibility: "public",
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
      return { images: filterBy(this.images.all(), request.query as Query), first: "/v2/images", schema: "/v2/schemas/images" };
    });
    app.get("/image/v2/images/:id", async (request) => {
      auth(request);
      return this.images.get((request.params as { id: string }).id);
    });
  }
}
