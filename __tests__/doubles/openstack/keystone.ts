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
    scope?: Scope;
  };
}

type Scope = { project?: { id?: string; name?: string; domain?: { id?: string; name?: string } } } | string;

interface IssuedToken {
  readonly expires: Date;
  readonly methods: string[];
  /** Project-scoped (with a catalog), or unscoped (no project, no catalog). */
  readonly scoped: boolean;
}

/**
 * Keystone v3 token issuing, and the token check every other service calls. A token is scoped
 * to the one project when the request names it, or comes from an application credential
 * (always bound to its project); a password with no scope gets an unscoped token, without
 * project or catalog, since the user has no default project (keystone/auth/core.py,
 * AuthInfo._validate_and_normalize_scope_data).
 */
export class Keystone {
  private readonly tokens = new Map<string, IssuedToken>();

  constructor(
    private readonly identity: Identity,
    private readonly baseUrl: () => string,
  ) {}

  register(app: FastifyInstance): void {
    app.post("/identity/v3/auth/tokens", async (request, reply) => {
      const issued = this.authenticate(request.body as AuthBody);
      const token = `gAAAA${randomBytes(24).toString("hex")}`;
      this.tokens.set(token, issued);
      reply.header("X-Subject-Token", token);
      return reply.code(201).send({ token: this.tokenBody(issued) });
    });
    // keystone/api/auth.py, AuthTokenResource.get: the subject token as it was issued.
    app.get("/identity/v3/auth/tokens", async (request) => {
      const subject = request.headers["x-subject-token"];
      this.requireToken(request, false);
      const issued = typeof subject === "string" ? this.tokens.get(subject) : undefined;
      if (!issued) throw new ApiError(404, "NotFound", "Could not find token.");
      return { token: this.tokenBody(issued) };
    });
  }

  /**
   * Throws Keystone's 401 unless the request carries a token this double issued, and, for the
   * project-scoped APIs of the other services, the 403 their policies give an unscoped token.
   */
  requireToken(request: FastifyRequest, projectScoped = true): void {
    const token = request.headers["x-auth-token"];
    const issued = typeof token === "string" ? this.tokens.get(token) : undefined;
    if (!issued || issued.expires.getTime() < Date.now()) {
      throw new ApiError(401, "Unauthorized", "The request you have made requires authentication.");
    }
    if (projectScoped && !issued.scoped) throw new ApiError(403, "Forbidden", "You are not authorized to perform the requested action.");
  }

  private authenticate(body: AuthBody): IssuedToken {
    const identity = body?.auth?.identity;
    const methods = identity?.methods ?? [];
    const { user, applicationCredential, domain } = this.identity;
    const unauthorized = new ApiError(401, "Unauthorized", "The request you have made requires authentication.");
    const expires = new Date(Date.now() + 3600_000);
    if (methods.includes("password")) {
      const given = identity?.password?.user;
      const userMatches =
        given?.id === user.id || (given?.name === user.name && (given?.domain?.id === domain.id || given?.domain?.name === domain.name));
      if (userMatches && given?.password === user.password) return { expires, methods, scoped: this.projectScope(body.auth?.scope) };
    } else if (methods.includes("application_credential")) {
      const given = identity?.application_credential;
      // keystone/auth/core.py, _validate_and_normalize_scope_data: "Application credentials
      // cannot request a scope."; the credential is bound to its project.
      if (body.auth?.scope !== undefined) throw unauthorized;
      if (given?.id === applicationCredential.id && given?.secret === applicationCredential.secret)
        return { expires, methods, scoped: true };
    } else if (methods.includes("token") && identity?.token?.id && this.tokens.has(identity.token.id)) {
      return { expires, methods, scoped: this.projectScope(body.auth?.scope) };
    }
    throw unauthorized;
  }

  /**
   * Whether `scope` names the project (by id, or by name and its domain); a project Keystone
   * does not know is a 401 (keystone/auth/core.py, AuthInfo._lookup_project). Only "unscoped" or
   * no scope at all gives an unscoped token.
   */
  private projectScope(scope: Scope | undefined): boolean {
    if (scope === undefined || scope === "unscoped") return false;
    const wanted = typeof scope === "object" ? scope.project : undefined;
    const { project, domain } = this.identity;
    const domainMatches = wanted?.domain?.id === domain.id || wanted?.domain?.name === domain.name;
    if (wanted?.id === project.id || (wanted?.name === project.name && domainMatches)) return true;
    throw new ApiError(401, "Unauthorized", "The request you have made requires authentication.");
  }

  private tokenBody(issued: IssuedToken) {
    const { methods, expires } = issued;
    const { region, domain, project, user } = this.identity;
    const base = this.baseUrl();
    const common = {
      methods,
      expires_at: expires.toISOString().replace("Z", "000Z"),
      issued_at: new Date().toISOString().replace("Z", "000Z"),
      audit_ids: [randomBytes(8).toString("base64url")],
      user: { id: user.id, name: user.name, domain, password_expires_at: null },
    };
    // keystone/models/token_model.py: an unscoped token has no roles, project or catalog.
    if (!issued.scoped) return common;
    return {
      ...common,
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
