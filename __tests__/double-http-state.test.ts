/** The http state server speaks the protocol OpenTofu's http backend and GitLab use. */
import { createHash } from "node:crypto";
import { StateServer, startStateServer } from "./doubles/http-state/server";

const AUTH = { username: "gitlab-ci-token", password: "state-secret-31" };
let server: StateServer;

beforeAll(async () => {
  server = await startStateServer(AUTH);
});

afterAll(() => server.close());

function request(method: string, url: string, body?: string, headers: Record<string, string> = {}) {
  const authorization = `Basic ${Buffer.from(`${AUTH.username}:${AUTH.password}`).toString("base64")}`;
  return fetch(url, { method, body, headers: { authorization, "content-type": "application/json", ...headers } });
}

const md5 = (body: string) => createHash("md5").update(body).digest("base64");
const lockBody = (id: string) => JSON.stringify({ ID: id, Operation: "OperationTypeApply", Who: "ci@runner", Version: "1.12.6" });

describe("http state server", () => {
  it("answers 204 before any state exists, then 200 with the stored body and its Content-MD5", async () => {
    expect((await request("GET", server.stateUrl("fresh"))).status).toBe(204);
    const state = JSON.stringify({ version: 4, serial: 1, resources: [] });
    expect((await request("POST", server.stateUrl("fresh"), state, { "content-md5": md5(state) })).status).toBe(200);
    const response = await request("GET", server.stateUrl("fresh"));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-md5")).toBe(md5(state));
    expect(await response.text()).toBe(state);
    expect(server.readState("fresh")).toEqual({ version: 4, serial: 1, resources: [] });
  });

  it("rejects a body whose Content-MD5 does not match", async () => {
    const response = await request("POST", server.stateUrl("md5"), '{"version":4}', { "content-md5": md5("something else") });
    expect(response.status).toBe(400);
    expect(server.readState("md5")).toBeUndefined();
  });

  it("requires basic auth", async () => {
    expect((await fetch(server.stateUrl("fresh"))).status).toBe(401);
    const wrong = `Basic ${Buffer.from(`${AUTH.username}:nope`).toString("base64")}`;
    expect((await fetch(server.stateUrl("fresh"), { headers: { authorization: wrong } })).status).toBe(401);
  });

  it.each([
    ["GitLab's POST/DELETE on <address>/lock", "POST", "DELETE", (s: StateServer, n: string) => s.lockUrl(n)],
    ["LOCK/UNLOCK on the address", "LOCK", "UNLOCK", (s: StateServer, n: string) => s.stateUrl(n)],
  ])("locks with %s: 423 with the holder's LockInfo, 409 for a foreign unlock or write", async (_style, lockMethod, unlockMethod, url) => {
    const name = `lock-${lockMethod.toLowerCase()}`;
    expect((await request(lockMethod, url(server, name), lockBody("first"))).status).toBe(200);
    expect(server.lockInfo(name)).toMatchObject({ ID: "first", Who: "ci@runner" });

    const second = await request(lockMethod, url(server, name), lockBody("second"));
    expect(second.status).toBe(423);
    expect(await second.json()).toMatchObject({ ID: "first", Operation: "OperationTypeApply", Who: "ci@runner" });

    const foreignUnlock = await request(unlockMethod, url(server, name), lockBody("second"));
    expect(foreignUnlock.status).toBe(409);
    expect(await foreignUnlock.json()).toMatchObject({ ID: "first" });

    expect((await request("POST", `${server.stateUrl(name)}?ID=second`, '{"version":4}')).status).toBe(409);
    expect((await request("POST", `${server.stateUrl(name)}?ID=first`, '{"version":4}')).status).toBe(200);

    expect((await request(unlockMethod, url(server, name), lockBody("first"))).status).toBe(200);
    expect(server.lockInfo(name)).toBeUndefined();
  });

  it("records requests without credentials", () => {
    expect(server.requests.length).toBeGreaterThan(0);
    expect(JSON.stringify(server.requests)).not.toContain(AUTH.password);
  });
});
