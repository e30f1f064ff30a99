/**
 * A recording proxy between the OpenStack provider and a cloud, the double or the real services:
 * every exchange as method, path template, status and the fields of the reply, so that the same
 * journey on both targets can be compared (l3-openstack.test.ts).
 *
 * The provider is given the proxy's auth URL. Each upstream origin (one for the double, one per
 * service for the real cloud) gets a proxy of its own, and every upstream URL in a reply (the
 * catalog, version documents, Location headers) is rewritten to the proxy's, so that the
 * provider's every later request comes through too.
 */
import * as http from "node:http";
import type { AddressInfo } from "node:net";

export interface Exchange {
  /** The catalog type of the service: "compute", "network", ... */
  readonly service: string;
  readonly method: string;
  /** The path after the service's catalog URL, ids replaced: "/servers/{id}". */
  readonly template: string;
  /** The query's parameter names, sorted. */
  readonly query: readonly string[];
  readonly status: number;
  /** The reply's JSON fields, as paths ("server.status", "servers[].id"), three levels deep. */
  readonly fields: readonly string[];
}

export interface Recorder {
  /** The auth URL to give the provider (OS_AUTH_URL). */
  readonly authUrl: string;
  readonly exchanges: readonly Exchange[];
  close(): Promise<void>;
}

const UUID = /^([0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
/** Collections whose members are addressed by a name the user chose, not an id. */
const NAMED = new Set(["os-keypairs"]);
const ORIGIN = /http:\/\/127\.0\.0\.1:\d+/g;
/**
 * Catalog types that name the same service (os-service-types' aliases): a catalog may list both
 * at one URL, as Cinder's block-storage and volumev3, and a request is the service's either way.
 */
const ALIASES: Record<string, string> = { volumev3: "block-storage", volume: "block-storage", volumev2: "block-storage" };

/** A path with its ids, numbers and user-chosen names replaced by placeholders. */
export function pathTemplate(path: string): string {
  const segments = path.split("/");
  return segments
    .map((segment, i) => {
      if (UUID.test(segment)) return "{id}";
      if (/^\d+$/.test(segment)) return "{n}";
      if (i > 0 && NAMED.has(segments[i - 1]) && segment !== "") return "{name}";
      return segment;
    })
    .join("/");
}

/** The paths of a JSON value's fields, `depth` levels deep; the members of arrays as "[]". */
export function fieldPaths(value: unknown, depth = 3, prefix = ""): string[] {
  if (depth === 0 || value === null || typeof value !== "object") return [];
  if (Array.isArray(value)) {
    const merged = new Set(value.flatMap((item) => fieldPaths(item, depth, `${prefix}[]`)));
    return [...merged];
  }
  const paths: string[] = [];
  for (const [key, inner] of Object.entries(value)) {
    const path = prefix === "" ? key : `${prefix}.${key}`;
    paths.push(path, ...fieldPaths(inner, depth - 1, path));
  }
  return paths;
}

interface CatalogEntry {
  readonly type: string;
  /** The endpoint's URL as upstream has it. */
  readonly url: string;
}

/**
 * One request upstream, on a connection of its own: with keep-alive, a request could go out on a
 * connection the server (gunicorn, 2 s idle) was closing, and fail for the recorder's sake alone.
 */
function send(
  url: string,
  method: string,
  headers: http.OutgoingHttpHeaders,
  body: Buffer,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const request = http.request(url, { method, headers, agent: false }, (reply) => {
      const chunks: Buffer[] = [];
      reply.on("data", (chunk: Buffer) => chunks.push(chunk));
      reply.on("end", () => resolve({ status: reply.statusCode as number, headers: reply.headers, body: Buffer.concat(chunks) }));
      reply.on("error", reject);
    });
    request.on("error", reject);
    request.end(body.length > 0 ? body : undefined);
  });
}

/** Starts a recorder in front of the cloud whose Keystone is at `authUrl` (".../v3"). */
export async function startRecorder(authUrl: string): Promise<Recorder> {
  const exchanges: Exchange[] = [];
  const proxies = new Map<string, { server: http.Server; origin: string }>();
  // Until a catalog is seen, the auth URL's base is Keystone's.
  const catalog: CatalogEntry[] = [{ type: "identity", url: authUrl.replace(/\/v3\/?$/, "") }];

  const proxyOrigin = async (upstream: string): Promise<string> => {
    const known = proxies.get(upstream);
    if (known) return known.origin;
    const server = http.createServer((request, response) => void forward(upstream, request, response));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    proxies.set(upstream, { server, origin });
    return origin;
  };

  /** Rewrites every upstream origin in `text` to its proxy's, starting proxies for new ones. */
  const rewrite = async (text: string): Promise<string> => {
    const origins = new Set(text.match(ORIGIN) ?? []);
    let result = text;
    for (const origin of origins) {
      if ([...proxies.values()].some((p) => p.origin === origin)) continue;
      result = result.split(origin).join(await proxyOrigin(origin));
    }
    return result;
  };

  const classify = (url: string): { service: string; template: string } => {
    const entry = catalog
      .filter((e) => url === e.url || url.startsWith(`${e.url.replace(/\/$/, "")}/`) || url.startsWith(`${e.url}?`))
      .sort((a, b) => b.url.length - a.url.length)[0];
    const { pathname } = new URL(url);
    if (!entry) return { service: "unknown", template: pathTemplate(pathname) };
    const base = new URL(entry.url).pathname.replace(/\/$/, "");
    return { service: ALIASES[entry.type] ?? entry.type, template: pathTemplate(pathname.slice(base.length) || "/") };
  };

  const learnCatalog = (body: unknown) => {
    const entries = (body as { token?: { catalog?: { type: string; endpoints: { url: string }[] }[] } })?.token?.catalog ?? [];
    for (const entry of entries) {
      for (const endpoint of entry.endpoints) {
        if (!catalog.some((e) => e.url === endpoint.url && e.type === entry.type)) catalog.push({ type: entry.type, url: endpoint.url });
      }
    }
  };

  const forward = async (upstream: string, request: http.IncomingMessage, response: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const target = `${upstream}${request.url}`;
    const headers: http.OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value !== undefined && !["host", "accept-encoding", "connection", "keep-alive"].includes(name)) headers[name] = value;
    }
    try {
      const reply = await send(target, request.method as string, headers, Buffer.concat(chunks));
      const text = reply.body.toString("utf8");
      let parsed: unknown;
      try {
        parsed = text === "" ? undefined : JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      learnCatalog(parsed);
      const { service, template } = classify(target);
      exchanges.push({
        service,
        method: request.method as string,
        template,
        query: [...new Set(new URL(target).searchParams.keys())].sort(),
        status: reply.status,
        fields: [...new Set(fieldPaths(parsed))].sort(),
      });
      const body = await rewrite(text);
      const out: http.OutgoingHttpHeaders = {};
      for (const [name, value] of Object.entries(reply.headers)) {
        if (value === undefined || ["content-length", "transfer-encoding", "connection", "keep-alive"].includes(name)) continue;
        out[name] = name === "location" ? await rewrite(String(value)) : value;
      }
      out["content-length"] = Buffer.byteLength(body);
      response.writeHead(reply.status, out);
      response.end(body);
    } catch (error) {
      response.writeHead(502, { "content-type": "text/plain" });
      response.end(`recorder: ${(error as Error).message}`);
    }
  };

  const authProxy = await rewrite(authUrl);
  return {
    authUrl: authProxy,
    exchanges,
    close: async () => {
      for (const { server } of proxies.values()) {
        server.closeAllConnections();
        await new Promise<void>((resolve) => server.close(() => resolve()));
      }
    },
  };
}

/**
 * One line per distinct exchange, "service METHOD template status", sorted. A 409 that the same
 * request (service, method, template) later got past is left out: the provider retries while an
 * object is busy (a load balancer PENDING_UPDATE), and whether it has to is a matter of timing.
 */
export function exchangeLines(exchanges: readonly Exchange[]): string[] {
  const key = (e: Exchange) => `${e.service} ${e.method} ${e.template}`;
  const retried = exchanges.filter(
    (e, i) => e.status === 409 && exchanges.slice(i + 1).some((later) => key(later) === key(e) && later.status < 300),
  );
  return [...new Set(exchanges.filter((e) => !retried.includes(e)).map(exchangeLine))].sort();
}

/** An exchange's line: "service METHOD template status". */
function exchangeLine(e: Exchange): string {
  return `${e.service} ${e.method} ${e.template} ${e.status}`;
}

/** A field path's own name: "servers[].OS-EXT-AZ:availability_zone" → "OS-EXT-AZ:availability_zone". */
function fieldName(field: string): string {
  return field.slice(field.lastIndexOf(".") + 1).replace(/(\[\])+$/, "");
}

/**
 * For each distinct exchange (its exchangeLines line), the reply fields seen in any of its
 * replies whose name the provider reads for that service (support/provider-reads.ts).
 */
export function fieldsRead(exchanges: readonly Exchange[], reads: ReadonlyMap<string, ReadonlySet<string>>): Map<string, Set<string>> {
  const lines = new Map<string, Set<string>>();
  for (const e of exchanges) {
    const line = exchangeLine(e);
    const fields = lines.get(line) ?? new Set<string>();
    for (const field of e.fields) if (reads.get(e.service)?.has(fieldName(field))) fields.add(field);
    lines.set(line, fields);
  }
  return lines;
}

/**
 * Whether a field seen on one target and missing from `other` (the other target's fields of the
 * same exchange) is a difference: a field of a list's element is one only where the other target
 * returned an element of that list too. Which of the exchange's replies came with a non-empty list is timing (a
 * security group read before or after its default rules were deleted), not behaviour.
 */
export function comparable(field: string, other: ReadonlySet<string>): boolean {
  for (let at = field.indexOf("[]"); at !== -1; at = field.indexOf("[]", at + 2)) {
    const element = `${field.slice(0, at + 2)}.`;
    if (![...other].some((f) => f.startsWith(element))) return false;
  }
  return true;
}

/**
 * Where a field belongs, for a difference that docs/decisions.md can accept once for every
 * exchange it shows in: "port.binding:host_id" for a port's field, whether in a list
 * ("ports[].binding:host_id") or alone ("port.binding:host_id"); a reply's top-level field without
 * a wrapper by the last segment of its path ("add_router_interface.tenant_id").
 */
export function fieldOwner(template: string, field: string): string {
  const [top, ...rest] = field.split(".");
  if (top.endsWith("[]")) {
    const plural = top.slice(0, -2);
    const singular = plural.endsWith("ies") ? `${plural.slice(0, -3)}y` : plural.replace(/s$/, "");
    return [singular, ...rest].join(".");
  }
  if (rest.length > 0) return field;
  const segment = template
    .split("/")
    .filter((s) => s !== "" && s !== "{id}" && s !== "{n}" && s !== "{name}")
    .pop();
  return `${segment}.${field}`;
}
