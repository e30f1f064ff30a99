import { createHash, timingSafeEqual } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import Fastify, { FastifyReply, FastifyRequest } from "fastify";

/**
 * A Terraform http state backend, as OpenTofu's and Terraform's `http` backend speak it and as
 * GitLab's managed Terraform state serves it: GET/POST/DELETE on the state address, locking with
 * either LOCK/UNLOCK on the state address or POST/DELETE on `<address>/lock` (GitLab's), basic
 * auth, Content-MD5 checks, and 423 with the holder's LockInfo while locked. States and locks are
 * files in `dir`, so tests can inspect them.
 */
export interface StateServerOptions {
  /** @default a new temporary directory */
  readonly dir?: string;
  /** Basic auth; both or neither. @default no authentication */
  readonly username?: string;
  readonly password?: string;
}

export interface LockInfo {
  readonly ID: string;
  readonly Operation?: string;
  readonly Who?: string;
  readonly Version?: string;
  readonly Created?: string;
  readonly Path?: string;
  readonly Info?: string;
}

export interface StateRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

export interface StateServer {
  readonly url: string;
  readonly dir: string;
  stateUrl(name: string): string;
  lockUrl(name: string): string;
  /** TF_HTTP_* for a GitLab-style backend at `name` (lock POST, unlock DELETE). */
  backendEnv(name: string): Record<string, string>;
  readState(name: string): Record<string, unknown> | undefined;
  lockInfo(name: string): LockInfo | undefined;
  /** Every request: method, path and status. Credentials are never recorded. */
  readonly requests: readonly StateRequest[];
  close(): Promise<void>;
}

const NAME = /^[A-Za-z0-9._-]+$/;

export async function startStateServer(options: StateServerOptions = {}): Promise<StateServer> {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-state-"));
  const requests: StateRequest[] = [];
  const statePath = (name: string) => path.join(dir, `${name}.tfstate`);
  const lockPath = (name: string) => path.join(dir, `${name}.lock.json`);
  const readLock = (name: string): LockInfo | undefined =>
    fs.existsSync(lockPath(name)) ? (JSON.parse(fs.readFileSync(lockPath(name), "utf8")) as LockInfo) : undefined;

  const app = Fastify({ logger: false });
  app.addHttpMethod("LOCK", { hasBody: true });
  app.addHttpMethod("UNLOCK", { hasBody: true });
  // Bodies are state or LockInfo JSON; they are stored byte for byte, whatever the content type.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));

  app.addHook("onResponse", async (request, reply) => {
    requests.push({ method: request.method, path: request.url, status: reply.statusCode });
  });
  if (options.username !== undefined || options.password !== undefined) {
    const expected = Buffer.from(`Basic ${Buffer.from(`${options.username ?? ""}:${options.password ?? ""}`).toString("base64")}`);
    app.addHook("onRequest", async (request, reply) => {
      const given = Buffer.from(request.headers.authorization ?? "");
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        reply.header("WWW-Authenticate", 'Basic realm="terraform-state"');
        return reply.code(401).send("Unauthorized");
      }
    });
  }

  const nameOf = (request: FastifyRequest, reply: FastifyReply): string | undefined => {
    const { name } = request.params as { name: string };
    if (NAME.test(name)) return name;
    reply.code(400).send(`invalid state name ${JSON.stringify(name)}`);
    return undefined;
  };
  const parseLock = (body: unknown): LockInfo | undefined => {
    try {
      const info = JSON.parse(Buffer.isBuffer(body) ? body.toString("utf8") : "{}") as LockInfo;
      return typeof info.ID === "string" ? info : undefined;
    } catch {
      return undefined;
    }
  };
  /** True when the request may change the state: unlocked, or locked with ?ID= the holder's. */
  const mayWrite = (name: string, request: FastifyRequest, reply: FastifyReply): boolean => {
    const holder = readLock(name);
    const id = (request.query as { ID?: string }).ID;
    if (holder && holder.ID !== id) {
      reply.code(409).header("Content-Type", "application/json").send(JSON.stringify(holder));
      return false;
    }
    return true;
  };

  const lock = async (request: FastifyRequest, reply: FastifyReply) => {
    const name = nameOf(request, reply);
    if (name === undefined) return reply;
    const info = parseLock(request.body);
    if (!info) return reply.code(400).send("lock body must be LockInfo JSON with an ID");
    const holder = readLock(name);
    if (holder && holder.ID !== info.ID) return reply.code(423).header("Content-Type", "application/json").send(JSON.stringify(holder));
    fs.writeFileSync(lockPath(name), JSON.stringify(info));
    return reply.code(200).send();
  };
  const unlock = async (request: FastifyRequest, reply: FastifyReply) => {
    const name = nameOf(request, reply);
    if (name === undefined) return reply;
    const info = parseLock(request.body);
    const holder = readLock(name);
    if (holder && info?.ID !== holder.ID) return reply.code(409).header("Content-Type", "application/json").send(JSON.stringify(holder));
    fs.rmSync(lockPath(name), { force: true });
    return reply.code(200).send();
  };

  app.get("/state/:name", async (request, reply) => {
    const name = nameOf(request, reply);
    if (name === undefined) return reply;
    if (!fs.existsSync(statePath(name))) return reply.code(204).send();
    const body = fs.readFileSync(statePath(name));
    return reply
      .code(200)
      .header("Content-Type", "application/json")
      .header("Content-MD5", createHash("md5").update(body).digest("base64"))
      .send(body);
  });
  app.post("/state/:name", async (request, reply) => {
    const name = nameOf(request, reply);
    if (name === undefined || !mayWrite(name, request, reply)) return reply;
    const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
    const md5 = request.headers["content-md5"];
    if (typeof md5 === "string" && md5 !== createHash("md5").update(body).digest("base64")) {
      return reply.code(400).send("Content-MD5 does not match the body");
    }
    try {
      JSON.parse(body.toString("utf8"));
    } catch {
      return reply.code(400).send("state must be JSON");
    }
    fs.writeFileSync(statePath(name), body);
    return reply.code(200).send();
  });
  app.delete("/state/:name", async (request, reply) => {
    const name = nameOf(request, reply);
    if (name === undefined || !mayWrite(name, request, reply)) return reply;
    fs.rmSync(statePath(name), { force: true });
    return reply.code(200).send();
  });
  app.route({ method: "LOCK", url: "/state/:name", handler: lock });
  app.route({ method: "UNLOCK", url: "/state/:name", handler: unlock });
  app.post("/state/:name/lock", lock);
  app.delete("/state/:name/lock", unlock);
  app.setNotFoundHandler((request, reply) => reply.code(404).send(`state server: no route for ${request.method} ${request.url}`));

  await app.listen({ host: "127.0.0.1", port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === "string") throw new Error("state server: no TCP address");
  const url = `http://127.0.0.1:${address.port}`;
  const stateUrl = (name: string) => `${url}/state/${name}`;
  const lockUrl = (name: string) => `${stateUrl(name)}/lock`;

  return {
    url,
    dir,
    stateUrl,
    lockUrl,
    backendEnv: (name) => ({
      TF_HTTP_ADDRESS: stateUrl(name),
      TF_HTTP_LOCK_ADDRESS: lockUrl(name),
      TF_HTTP_UNLOCK_ADDRESS: lockUrl(name),
      ...(options.username !== undefined ? { TF_HTTP_USERNAME: options.username } : {}),
      ...(options.password !== undefined ? { TF_HTTP_PASSWORD: options.password } : {}),
      TF_HTTP_RETRY_WAIT_MIN: "0",
      TF_HTTP_RETRY_MAX: "0",
    }),
    readState: (name) =>
      fs.existsSync(statePath(name)) ? (JSON.parse(fs.readFileSync(statePath(name), "utf8")) as Record<string, unknown>) : undefined,
    lockInfo: readLock,
    requests,
    close: () => app.close(),
  };
}
