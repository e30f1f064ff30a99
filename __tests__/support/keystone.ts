/** Keystone's token request (POST /v3/auth/tokens), the same on the double and on the real cloud. */

/** The password method's identity of the user `name` in the domain named `domain`. */
export function passwordIdentity(name: string, password: string, domain = "Default"): unknown {
  return { methods: ["password"], password: { user: { name, password, domain: { name: domain } } } };
}

/** POST `authUrl`/auth/tokens with `identity`, scoped to `scope` (none: unscoped). */
export function requestToken(authUrl: string, identity: unknown, scope?: unknown): Promise<Response> {
  return fetch(`${authUrl}/auth/tokens`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ auth: { identity, ...(scope === undefined ? {} : { scope }) } }),
  });
}
