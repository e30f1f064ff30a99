import { randomUUID } from "node:crypto";

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
