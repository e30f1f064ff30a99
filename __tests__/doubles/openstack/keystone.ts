import { randomBytes, randomUUID } from "node:crypto";
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError, Collection, Resource } from "./store";

export interface Role {
  readonly id: string;
  readonly name: string;
}

/** The one project, user and application credential the double knows. */
export interface Identity {
  readonly region: string;
  readonly domain: { readonly id: string; readonly name: string };
  readonly project: { readonly id: string; readonly name: string };
  readonly user: { readonly id: string; readonly name: string; readonly password: string };
  /** The seeded application credential: restricted (`unrestricted` false, Keystone's default), with the user's roles. */
  readonly applicationCredential: { readonly id: string; readonly secret: string };
  /** Every role Keystone knows, with its id. */
  readonly roles: readonly Role[];
  /** The names of the roles the user is assigned on the project (before implied roles are added). */
  readonly assignedRoles: readonly string[];
}

/**
 * The roles `keystone-manage bootstrap` creates (keystone/cmd/bootstrap.py: admin, manager,
 * member, reader, service) and the ones a cloud with Octavia adds for its RBAC policies
 * (octavia/policies/base.py: load-balancer_*).
 */
const KNOWN_ROLES = [
  "admin",
  "manager",
  "member",
  "reader",
  "service",
  "load-balancer_admin",
  "load-balancer_member",
  "load-balancer_observer",
  "load-balancer_global_observer",
];

/**
 * A role as keystone/assignment/role_backends/sql_model.py, RoleTable.to_dict gives it: no
 * description, and the options `keystone-manage bootstrap` sets on the roles it creates
 * (keystone/cmd/bootstrap.py, _ensure_role_exists: immutable, unless --no-immutable-roles);
 * a role created later (`openstack role create`) has none.
 */
function roleView(role: Role) {
  return {
    id: role.id,
    name: role.name,
    domain_id: null,
    description: null,
    options: BOOTSTRAP_ROLES.includes(role.name) ? { immutable: true } : {},
  };
}

const BOOTSTRAP_ROLES = ["admin", "manager", "member", "reader", "service"];

/**
 * Implied roles as keystone/cmd/bootstrap.py, Bootstrapper._bootstrap_default_roles creates them:
 * admin implies manager, manager implies member, member implies reader.
 */
const IMPLIES: Record<string, string> = { admin: "manager", manager: "member", member: "reader" };

/** `names` with every role they imply, in order (keystone/assignment/core.py, effective assignments). */
export function withImplied(names: readonly string[]): string[] {
  const result: string[] = [];
  for (const name of names) {
    for (let role: string | undefined = name; role !== undefined; role = IMPLIES[role]) if (!result.includes(role)) result.push(role);
  }
  return result;
}

export function defaultIdentity(): Identity {
  return {
    region: "RegionOne",
    domain: { id: "default", name: "Default" },
    project: { id: randomUUID().replace(/-/g, ""), name: "kube-on-os" },
    user: { id: randomUUID().replace(/-/g, ""), name: "deployer", password: `pw-${randomBytes(8).toString("hex")}` },
    applicationCredential: { id: randomUUID().replace(/-/g, ""), secret: `ac-${randomBytes(12).toString("hex")}` },
    roles: KNOWN_ROLES.map((name) => ({ id: randomUUID().replace(/-/g, ""), name })),
    assignedRoles: ["member", "load-balancer_member"],
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
  "load-balancer": "/load-balancer",
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
  /** The application credential the token was issued for, if any. */
  readonly applicationCredential?: Resource;
}

/** A Keystone error in its own format: title is the HTTP reason phrase (keystone/exception.py, Error.title). */
const forbidden = (action: string) => new ApiError(403, "Forbidden", `You are not authorized to perform the requested action: ${action}.`);
const KEYSTONE_400 =
  " The server could not comply with the request since it is either malformed or otherwise incorrect. The client is assumed to be in error.";

/**
 * Keystone v3 token issuing, and the token check every other service calls. A token is scoped
 * to the one project when the request names it, or comes from an application credential
 * (always bound to its project); a password with no scope gets an unscoped token, without
 * project or catalog, since the user has no default project (keystone/auth/core.py,
 * AuthInfo._validate_and_normalize_scope_data). Also the user's application credentials and
 * their access rules (keystone/api/users.py), and the role list.
 */
export class Keystone {
  private readonly tokens = new Map<string, IssuedToken>();
  readonly applicationCredentials = new Collection("Application Credential", "Not Found");
  readonly accessRules = new Collection("Access Rule", "Not Found");

  constructor(
    private readonly identity: Identity,
    private readonly baseUrl: () => string,
    /** The service types the catalog lists: a cloud without a service has no entry for it. @default every SERVICE_PATHS type */
    private readonly services: readonly string[] = Object.keys(SERVICE_PATHS),
  ) {
    this.applicationCredentials.add({
      id: identity.applicationCredential.id,
      name: "deployer",
      description: null,
      secret: identity.applicationCredential.secret,
      unrestricted: false,
      roles: this.rolesNamed(withImplied(identity.assignedRoles)),
      expires_at: null,
      project_id: identity.project.id,
      access_rules: [],
      seeded: true,
    });
  }

  /** Application credentials and access rules a test created; the seeded credential excluded. */
  resourceCount(): number {
    return this.applicationCredentials.all().filter((c) => c.seeded !== true).length + this.accessRules.size;
  }

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
      if (!issued) throw new ApiError(404, "Not Found", "Could not find token.");
      return { token: this.tokenBody(issued) };
    });
    // keystone/common/policies/role.py: identity:list_roles is for admins, system readers and
    // domain managers; the double's user is none of them.
    app.get("/identity/v3/roles", async (request) => {
      this.requireToken(request, false);
      throw forbidden("identity:list_roles");
    });

    const base = "/identity/v3/users/:user/application_credentials";
    app.post(base, async (request, reply) => {
      // keystone/common/policies/application_credential.py: create is for the owner only
      // (user_id:%(user_id)s, the path's user), checked before the handler runs.
      const issued = this.requireOwner(request, "identity:create_application_credential");
      const body = (request.body as { application_credential?: AppCredBody })?.application_credential ?? {};
      return reply.code(201).send({ application_credential: this.createApplicationCredential(issued, this.identity.user.id, body) });
    });
    app.get(base, async (request) => {
      this.requireOwner(request, "identity:list_application_credentials");
      const { name } = request.query as { name?: string };
      const credentials = this.applicationCredentials.all().filter((c) => name === undefined || c.name === name);
      return { application_credentials: credentials.map((c) => this.applicationCredentialView(c)), links: {} };
    });
    app.get(`${base}/:id`, async (request) => {
      this.requireOwner(request, "identity:get_application_credential");
      return { application_credential: this.applicationCredentialView(this.findApplicationCredential(request)) };
    });
    // keystone/api/users.py, UserAppCredGetDeleteResource.delete: not with a restricted
    // application credential, and the credential's tokens are revoked with it
    // (keystone/application_credential/core.py, delete_application_credential).
    app.delete(`${base}/:id`, async (request, reply) => {
      const issued = this.requireOwner(request, "identity:delete_application_credential");
      this.checkUnrestricted(issued);
      const credential = this.findApplicationCredential(request);
      this.applicationCredentials.delete(credential.id);
      for (const [token, held] of this.tokens) if (held.applicationCredential?.id === credential.id) this.tokens.delete(token);
      return reply.code(204).send();
    });

    app.get("/identity/v3/users/:user/access_rules", async (request) => {
      this.requireOwner(request, "identity:list_access_rules");
      return { access_rules: this.accessRules.all().map((r) => this.accessRuleView(r)), links: {} };
    });
    app.get("/identity/v3/users/:user/access_rules/:id", async (request) => {
      this.requireOwner(request, "identity:get_access_rule");
      return { access_rule: this.accessRuleView(this.findAccessRule(request)) };
    });
    // keystone/application_credential/backends/sql.py, delete_access_rule: 403 while an
    // application credential still uses the rule.
    app.delete("/identity/v3/users/:user/access_rules/:id", async (request, reply) => {
      this.requireOwner(request, "identity:delete_access_rule");
      const rule = this.findAccessRule(request);
      if (this.applicationCredentials.all().some((c) => (c.access_rules as { id: string }[]).some((r) => r.id === rule.id))) {
        throw new ApiError(403, "Forbidden", "May not delete access rule in use");
      }
      this.accessRules.delete(rule.id);
      return reply.code(204).send();
    });
  }

  /**
   * Throws Keystone's 401 unless the request carries a token this double issued, and, for the
   * project-scoped APIs of the other services, the 403 their policies give an unscoped token.
   */
  requireToken(request: FastifyRequest, projectScoped = true): IssuedToken {
    const token = request.headers["x-auth-token"];
    const issued = typeof token === "string" ? this.tokens.get(token) : undefined;
    if (!issued || issued.expires.getTime() < Date.now()) {
      throw new ApiError(401, "Unauthorized", "The request you have made requires authentication.");
    }
    if (projectScoped && !issued.scoped) throw new ApiError(403, "Forbidden", "You are not authorized to perform the requested action.");
    return issued;
  }

  /** The names of the roles a project-scoped request's token carries (after requireToken's checks). */
  tokenRoleNames(request: FastifyRequest): string[] {
    return this.tokenRoles(this.requireToken(request)).map((r) => r.name);
  }

  /**
   * keystone/common/policies/application_credential.py: a user manages only their own
   * credentials and rules (`user_id:%(target.user.id)s`); the policy refusal names the action.
   */
  private requireOwner(request: FastifyRequest, action: string): IssuedToken {
    const issued = this.requireToken(request);
    if ((request.params as { user: string }).user !== this.identity.user.id) throw forbidden(action);
    return issued;
  }

  /** keystone/api/users.py, _check_unrestricted_application_credential. */
  private checkUnrestricted(issued: IssuedToken): void {
    if (issued.methods.includes("application_credential") && issued.applicationCredential?.unrestricted !== true) {
      throw forbidden("Using method 'application_credential' is not allowed for managing additional application credentials.");
    }
  }

  private findApplicationCredential(request: FastifyRequest): Resource {
    const { id } = request.params as { id: string };
    const credential = this.applicationCredentials.find(id);
    if (!credential) throw new ApiError(404, "Not Found", `Could not find Application Credential: ${id}.`);
    return credential;
  }

  private findAccessRule(request: FastifyRequest): Resource {
    const { id } = request.params as { id: string };
    const rule = this.accessRules.find(id);
    if (!rule) throw new ApiError(404, "Not Found", `Could not find Access Rule: ${id}.`);
    return rule;
  }

  /**
   * keystone/api/users.py, UserAppCredListCreateResource.post, in its order: no restricted
   * application credential, a generated secret when none is given (64 random
   * bytes, URL-safe base64 without padding), the requested roles by name or id with the roles
   * they imply, each in the token (else 400), an expiry not in the past; then
   * keystone/application_credential/core.py and backends/sql.py: the user must hold every role,
   * a name is unique per user (409), and an access rule equal to an existing one is reused.
   */
  private createApplicationCredential(issued: IssuedToken, userId: string, body: AppCredBody): Resource {
    this.checkUnrestricted(issued);
    const tokenRoles = this.tokenRoles(issued).map((r) => r.id);
    let roles: Role[];
    if (body.roles && body.roles.length > 0) {
      const named = body.roles.map((wanted) => {
        const role = this.identity.roles.find((r) => (wanted.id !== undefined ? r.id === wanted.id : r.name === wanted.name));
        // keystone/assignment/core.py, RoleManager.get_unique_role_by_name; get_role for an id.
        if (!role) {
          throw new ApiError(
            404,
            "Not Found",
            wanted.id !== undefined ? `Could not find role: ${wanted.id}.` : `Role ${String(wanted.name)} is not defined`,
          );
        }
        return role.name;
      });
      roles = this.rolesNamed(withImplied(named));
      if (roles.some((r) => !tokenRoles.includes(r.id))) {
        throw new ApiError(
          400,
          "Bad Request",
          "Invalid application credential: Cannot create an application credential with unassigned role",
        );
      }
    } else {
      roles = this.tokenRoles(issued);
    }
    let expiresAt: string | null = null;
    if (body.expires_at) {
      // keystone/common/utils.py, parse_expiration_date.
      const parsed = new Date(body.expires_at.endsWith("Z") ? body.expires_at : `${body.expires_at}Z`);
      if (Number.isNaN(parsed.getTime())) throw new ApiError(400, "Bad Request", `Timestamp not in expected format.${KEYSTONE_400}`);
      if (parsed.getTime() < Date.now()) throw new ApiError(400, "Bad Request", `The 'expires_at' must not be before now.${KEYSTONE_400}`);
      expiresAt = parsed.toISOString().replace(/\.\d{3}Z$/, ".000000");
    }
    const assigned = withImplied(this.identity.assignedRoles);
    const missing = roles.find((r) => !assigned.includes(r.name));
    if (missing) {
      throw new ApiError(
        400,
        "Bad Request",
        `Invalid application credential: Could not find role assignment with role: ${missing.id}, user or group: ${userId}, project, domain, or system: ${this.identity.project.id}.`,
      );
    }
    if (this.applicationCredentials.all().some((c) => c.name === body.name)) {
      throw new ApiError(
        409,
        "Conflict",
        `Conflict occurred attempting to store application_credential - Duplicate entry found with name ${String(body.name)}.`,
      );
    }
    const accessRules = (body.access_rules ?? []).map((rule) => {
      const same = this.accessRules
        .all()
        .find((r) =>
          rule.id !== undefined ? r.id === rule.id : r.service === rule.service && r.path === rule.path && r.method === rule.method,
        );
      return (
        same ?? this.accessRules.add({ id: randomUUID().replace(/-/g, ""), service: rule.service, path: rule.path, method: rule.method })
      );
    });
    const secret = body.secret || randomBytes(64).toString("base64url");
    const credential = this.applicationCredentials.add({
      id: randomUUID().replace(/-/g, ""),
      name: body.name,
      description: body.description ?? null,
      secret,
      unrestricted: body.unrestricted === true,
      roles,
      expires_at: expiresAt,
      project_id: this.identity.project.id,
      access_rules: accessRules.map((r) => ({ id: r.id })),
    });
    // The secret is shown once, on create; Keystone stores only its hash.
    return { ...this.applicationCredentialView(credential), secret };
  }

  private rolesNamed(names: readonly string[]): Role[] {
    return names.map((name) => this.identity.roles.find((r) => r.name === name) as Role);
  }

  /** The token's roles: the user's effective roles, or an application credential's (keystone/models/token_model.py, roles). */
  private tokenRoles(issued: IssuedToken): Role[] {
    if (issued.applicationCredential) return issued.applicationCredential.roles as Role[];
    return this.rolesNamed(withImplied(this.identity.assignedRoles));
  }

  /**
   * An application credential as every reply shows it (create, list and show alike): the
   * backend's record (keystone/application_credential/backends/sql.py, _to_dict) but its secret's
   * hash, access rules only when it has some, each role as role_api.get_role gives it
   * (core.py, _process_app_cred), and a self link. keystone/api/users.py's _public_parameters
   * would leave out user_id, but nothing applies them to these replies.
   */
  private applicationCredentialView(credential: Resource) {
    const accessRules = credential.access_rules as { id: string }[];
    return {
      id: credential.id,
      name: credential.name,
      description: credential.description,
      user_id: this.identity.user.id,
      project_id: credential.project_id,
      system: null,
      expires_at: credential.expires_at,
      unrestricted: credential.unrestricted,
      roles: (credential.roles as Role[]).map((r) => roleView(r)),
      ...(accessRules.length > 0 ? { access_rules: accessRules.map((r) => this.accessRuleView(this.accessRules.get(r.id))) } : {}),
      links: { self: `${this.baseUrl()}/identity/v3/users/${this.identity.user.id}/application_credentials/${credential.id}` },
    };
  }

  private accessRuleView(rule: Resource) {
    return { id: rule.id, service: rule.service, path: rule.path, method: rule.method };
  }

  private authenticate(body: AuthBody): IssuedToken {
    const identity = body?.auth?.identity;
    const methods = identity?.methods ?? [];
    const { user, domain } = this.identity;
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
      const credential = this.applicationCredentials
        .all()
        .find((c) => (given?.id !== undefined ? c.id === given.id : c.name === given?.name));
      // keystone/application_credential/backends/sql.py, authenticate: the secret, then the expiry.
      const expired = typeof credential?.expires_at === "string" && new Date(`${credential.expires_at}Z`).getTime() < Date.now();
      if (credential && given?.secret === credential.secret && !expired) {
        return { expires, methods, scoped: true, applicationCredential: credential };
      }
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
    const credential = issued.applicationCredential;
    return {
      ...common,
      project: { id: project.id, name: project.name, domain },
      roles: this.tokenRoles(issued).map((r) => ({ id: r.id, name: r.name })),
      is_domain: false,
      // keystone/common/render_token.py, render_token_response_from_model.
      ...(credential
        ? { application_credential: { id: credential.id, name: credential.name, restricted: credential.unrestricted !== true } }
        : {}),
      catalog: Object.entries(SERVICE_PATHS)
        .filter(([type]) => this.services.includes(type))
        .map(([type, path]) => {
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

interface AppCredBody {
  name?: string;
  description?: string;
  secret?: string;
  unrestricted?: boolean;
  expires_at?: string;
  roles?: { id?: string; name?: string }[];
  access_rules?: { id?: string; service?: string; path?: string; method?: string }[];
}
