import { randomBytes, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "./store";

/** The one project, user and application credential the double knows. */
export interface Identity {
  readonly region: string;
  readonly domain: { readonly id: string; readonly name: string };
  readonly project: { readonly id: string; readonly name: string };
  readonly user: { readonly id: string; readonly name: string; readonly password: string };
  readonly applicationCredential: { readonly id: string; readonly secret: string };
}

export function defaultIdentity(): Identity {
  return {
    region: "RegionOne",
    domain: { id: "default", name: "Default" },
    project: { id: randomUUID().replace(/-/g, ""), name: "kube-on-os" },
    user: { id: randomUUID().replace(/-/g, ""), name: "deployer", password: `pw-${randomBytes(8).toString("hex")}` },
    applicationCredential: { id: randomUUID().replace(/-/g, ""), secret: `ac-${randomBytes(12).toString("hex")}` },
  };
}

/** Catalog entry: service type → path below the double's base URL. */
export const SERVICE_PATHS: Record<string, string> = {
  identity: "/identity",
  network: "/network",
  compute: "/compute/v2.1",
  image: "/image",
  "block-storage": "/volume/v3",
  volumev3: "/volume/v3",
};

interface AuthBody {
  auth?: {
    identity?: {
      methods?: string[];
      password?: { user?: { id?: string; name?: string; password?: string; domain?: { id?: string; name?: string } } };
      application_credential?: { id?: string; name?: string; secret?: string };
      token?: { id?: string };
    };
    scope?: unknown;
  };
}

/** Keystone v3 token issuing, and the token check every other service calls. */
export class Keystone {
  private readonly tokens = new Map<string, string>();

  constructor(
    private readonly identity: Identity,
    private readonly baseUrl: () => string,
  ) {}

  register(app: FastifyInstance): void {
    app.post("/identity/v3/auth/tokens", async (request, reply) => {
      const methods = this.authenticate(request.body as AuthBody);
      const token = `gAAAA${randomBytes(24).toString("hex")}`;
      const expires = new Date(Date.now() + 3600_000);
      this.tokens.set(token, expires.toISOString());
      reply.header("X-Subject-Token", token);
      return reply.code(201).send({ token: this.tokenBody(methods, expires) });
    });
    app.get("/identity/v3/auth/tokens", async (request) => {
      const subject = request.headers["x-subject-token"];
      this.requireToken(request);
      if (typeof subject !== "string" || !this.tokens.has(subject)) throw new ApiError(404, "NotFound", "Could not find token.");
      return { token: this.tokenBody(["password"], new Date(this.tokens.get(subject) as string)) };
    });
  }

  /** Throws Keystone's 401 unless the request carries a token this double issued. */
  requireToken(request: FastifyRequest): void {
    const token = request.headers["x-auth-token"];
    if (typeof token !== "string" || !this.tokens.has(token)) {
      throw new ApiError(401, "Unauthorized", "The request you have made requires authentication.");
    }
  }

  private authenticate(body: AuthBody): string[] {
    const identity = body?.auth?.identity;
    const methods = identity?.methods ?? [];
    const { user, applicationCredential, domain } = this.identity;
    if (methods.includes("password")) {
      const given = identity?.password?.user;
      const userMatches =
        given?.id === user.id || (given?.name === user.name && (given?.domain?.id === domain.id || given?.domain?.name === domain.name));
      if (userMatches && given?.password === user.password) return methods;
    } else if (methods.includes("application_credential")) {
      const given = identity?.application_credential;
      if (given?.id === applicationCredential.id && given?.secret === applicationCredential.secret) return methods;
    } else if (methods.includes("token") && identity?.token?.id && this.tokens.has(identity.token.id)) {
      return methods;
    }
    throw new ApiError(401, "Unauthorized", "The request you have made requires authentication.");
  }

  private tokenBody(methods: string[], expires: Date) {
    const { region, domain, project, user } = this.identity;
    const base = this.baseUrl();
    return {
      methods,
      expires_at: expires.toISOString().replace("Z", "000Z"),
      issued_at: new Date().toISOString().replace("Z", "000Z"),
      audit_ids: [randomBytes(8).toString("base64url")],
      user: { id: user.id, name: user.name, domain, password_expires_at: null },
      project: { id: project.id, name: project.name, domain },
      roles: [
        { id: randomUUID().replace(/-/g, ""), name: "member" },
        { id: randomUUID().replace(/-/g, ""), name: "reader" },
      ],
      is_domain: false,
      catalog: Object.entries(SERVICE_PATHS).map(([type, path]) => {
        const url = type === "block-storage" || type === "volumev3" ? `${base}${path}/${project.id}` : `${base}${path}`;
        return {
          id: randomUUID().replace(/-/g, ""),
          type,
          name: type,
          endpoints: ["public", "internal"].map((iface) => ({
            id: randomUUID().replace(/-/g, ""),
            interface: iface,
            region,
            region_id: region,
            url,
          })),
        };
      }),
    };
  }
}
