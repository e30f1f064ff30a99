/**
 * What the tests of the OpenStack API double share: a fixture of __tests__/fixtures/ run by
 * OpenTofu against a double, and Keystone tokens asked for straight from its API.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { OpenStackDouble } from "../doubles/openstack/server";
import { passwordIdentity, requestToken } from "./keystone";
import { RunResult, runTofuAsync } from "./tofu";

/** Runs OpenTofu in a fixture's directory with the double's credentials, and `env`. */
export type FixtureTofu = (args: string[], env?: NodeJS.ProcessEnv) => Promise<RunResult>;

/** The command's result; a failure throws, with its output. */
export async function ok(result: Promise<RunResult>): Promise<RunResult> {
  const done = await result;
  if (done.status !== 0) throw new Error(`tofu failed (${done.status}):\n${done.stderr}${done.stdout}`);
  return done;
}

/** A working directory holding __tests__/fixtures/<name>.tf.json, initialised offline with local state. */
export async function fixture(double: OpenStackDouble, name: string): Promise<FixtureTofu> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-fixture-"));
  fs.copyFileSync(path.join(__dirname, "..", "fixtures", `${name}.tf.json`), path.join(dir, "main.tf.json"));
  const tofu: FixtureTofu = (args, env = {}) => runTofuAsync(args, dir, { ...double.passwordEnv(), ...env });
  await ok(tofu(["init", "-input=false"]));
  return tofu;
}

/** The double's project, by name in its domain, as an openrc file names it. */
export function projectScope(double: OpenStackDouble): unknown {
  return { project: { name: double.identity.project.name, domain: { id: "default" } } };
}

/** POST /v3/auth/tokens with the user's password (or `identity`), scoped to `scope` (none: unscoped). */
export function authenticate(double: OpenStackDouble, scope?: unknown, identity?: unknown): Promise<Response> {
  const { user } = double.identity;
  return requestToken(double.authUrl, identity ?? passwordIdentity(user.name, user.password), scope);
}

/** A token of the user's, scoped to `scope`. */
export async function issueToken(double: OpenStackDouble, scope: unknown = projectScope(double)): Promise<string> {
  const response = await authenticate(double, scope);
  if (response.status !== 201) throw new Error(`Keystone answered ${response.status}: ${await response.text()}`);
  return response.headers.get("x-subject-token") as string;
}
