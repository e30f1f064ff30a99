import { randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";

/** A JSON object as the OpenStack APIs return it. */
export type Resource = Record<string, unknown> & { id: string };

/** An error answered in the calling service's own error format. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly type: string,
    message: string,
  ) {
    super(message);
  }
}

export const notFound = (type: string, what: string, id: string) => new ApiError(404, type, `${what} ${id} could not be found.`);

/** An in-memory collection of one resource kind, keyed by id, in creation order. */
export class Collection<T extends Resource = Resource> {
  private readonly items = new Map<string, T>();

  constructor(
    /** For 404 messages, e.g. "Network". */
    readonly label: string,
    /** Neutron's error type for a missing item, e.g. "NetworkNotFound". */
    readonly notFoundType: string,
  ) {}

  add(item: Omit<T, "id"> & { id?: string }): T {
    const stored = { ...item, id: item.id ?? randomUUID() } as T;
    this.items.set(stored.id, stored);
    return stored;
  }

  get(id: string): T {
    const item = this.items.get(id);
    if (!item) throw notFound(this.notFoundType, this.label, id);
    return item;
  }

  find(id: string): T | undefined {
    return this.items.get(id);
  }

  update(id: string, changes: Partial<T>): T {
    const updated = { ...this.get(id), ...changes, id } as T;
    this.items.set(id, updated);
    return updated;
  }

  delete(id: string): T {
    const item = this.get(id);
    this.items.delete(id);
    return item;
  }

  all(): T[] {
    return [...this.items.values()];
  }

  get size(): number {
    return this.items.size;
  }
}

/**
 * The REST routes of one kind of resource, as Neutron and Octavia serve theirs: GET the
 * collection, GET, PUT and DELETE an item at `<path>/:id`, POST to the collection; request and
 * response bodies wrap an item in its singular key. What each does is the service's.
 */
export interface CollectionRoutes {
  /** The collection's path; it may hold a parameter of its own (Octavia's pools/:pool/members). */
  readonly path: string;
  /** The key of a list response. */
  readonly plural: string;
  /** The key of one item, in request and response bodies. */
  readonly singular: string;
  /** More keys of a list response (Octavia's `<plural>_links`). @default none */
  readonly listExtras?: Record<string, unknown>;
  /** The collection, as the response shows it. */
  list(request: FastifyRequest): unknown[];
  show(id: string, request: FastifyRequest): unknown;
  /** `body` is the request body's item, as sent (undefined without one). */
  create(body: Record<string, unknown> | undefined, request: FastifyRequest): unknown;
  /** `changes` is the request body's item, or {} without one. */
  update(id: string, changes: Record<string, unknown>, request: FastifyRequest): unknown;
  remove(id: string, request: FastifyRequest): void;
}

/** Registers `routes`; every request passes `auth` first. Created is 201, deleted 204 with no body. */
export function registerCollection(app: FastifyInstance, auth: (request: FastifyRequest) => void, routes: CollectionRoutes): void {
  const { path, plural, singular } = routes;
  const id = (request: FastifyRequest) => (request.params as { id: string }).id;
  const item = (request: FastifyRequest) => (request.body as Record<string, Record<string, unknown>> | undefined)?.[singular];
  app.get(path, async (request) => {
    auth(request);
    return { [plural]: routes.list(request), ...routes.listExtras };
  });
  app.get(`${path}/:id`, async (request) => {
    auth(request);
    return { [singular]: routes.show(id(request), request) };
  });
  app.post(path, async (request, reply) => {
    auth(request);
    return reply.code(201).send({ [singular]: routes.create(item(request), request) });
  });
  app.put(`${path}/:id`, async (request) => {
    auth(request);
    return { [singular]: routes.update(id(request), item(request) ?? {}, request) };
  });
  app.delete(`${path}/:id`, async (request, reply) => {
    auth(request);
    routes.remove(id(request), request);
    return reply.code(204).send();
  });
}

/**
 * Keeps the items whose fields equal every filter in `query`, the way Neutron and Nova filter
 * lists: a repeated parameter matches any of its values, and list fields match on membership.
 */
export function filterBy<T extends Resource>(
  items: T[],
  query: Record<string, string | string[] | undefined>,
  ignored: string[] = [],
): T[] {
  const filters = Object.entries(query).filter(([key, value]) => value !== undefined && !ignored.includes(key) && !PAGING.includes(key));
  return items.filter((item) =>
    filters.every(([key, value]) => {
      const wanted = Array.isArray(value) ? value : [value as string];
      const actual = item[key];
      if (Array.isArray(actual)) return wanted.every((w) => actual.map(String).includes(w));
      return wanted.some((w) => String(actual) === w);
    }),
  );
}

const PAGING = ["fields", "limit", "marker", "sort", "sort_key", "sort_dir", "page_reverse"];

export function now(): string {
  return new Date().toISOString().replace(/\.\d{3}Z$/, "Z");
}

/** Nova's *_at and Cinder's timestamps: microseconds and no zone suffix, e.g. 2026-01-02T03:04:05.000000. */
export function nowNoZone(): string {
  return new Date().toISOString().replace(/\.(\d{3})Z$/, ".$1000");
}
