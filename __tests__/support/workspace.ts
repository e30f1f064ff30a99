/**
 * A synthesized stack in a scratch directory, initialised against a fresh state in the http
 * state server and pointed at the OpenStack API double (or the real services), as the L2/L3 tests use it.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { StateServer } from "../doubles/http-state/server";
import { synthToDir } from "./synth";
import { RunResult, runTfAsync, TfCli, tfClis } from "./tofu";

/** The cloud a workspace deploys to: the double, or a project of the real services (openstack-kit.ts). */
export interface Target {
  /** OS_* variables for password authentication, as an openrc file would set them. */
  passwordEnv(): Record<string, string>;
}

export interface Workspace {
  readonly dir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly stateName: string;
  /** The CLI it runs. */
  readonly cli: TfCli;
  /** Runs the workspace's CLI (OpenTofu unless given). */
  tofu(args: string[], extra?: NodeJS.ProcessEnv, input?: string): Promise<RunResult>;
}

/**
 * The documented test switch: the double has no machines to log in to, so applies run without
 * the provisioning chain. Plans keep it, to show what it would run.
 */
export const WITHOUT_PROVISIONERS = { TF_VAR_run_provisioners: "false" };

let states = 0;

/**
 * Synthesizes the stack with `synthEnv`, and inits it against a fresh state in `state`; every
 * command gets `runEnv` and the target's credentials.
 */
export async function workspace(
  target: Target,
  state: StateServer,
  synthEnv: NodeJS.ProcessEnv = {},
  runEnv: NodeJS.ProcessEnv = WITHOUT_PROVISIONERS,
  cli: TfCli = tfClis()[0],
): Promise<Workspace> {
  const name = `kube-on-os-${process.pid}-${++states}`;
  const dir = await synthToDir(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-l2-")), synthEnv);
  const env = { ...target.passwordEnv(), ...state.backendEnv(name), ...runEnv };
  const tofu = (args: string[], extra: NodeJS.ProcessEnv = {}, input = "") => runTfAsync(cli, args, dir, { ...env, ...extra }, input);
  const init = await tofu(["init", "-input=false"]);
  if (init.status !== 0 || init.stderr !== "") throw new Error(`init failed (${init.status}):\n${init.stderr}${init.stdout}`);
  return { dir, env, stateName: name, cli, tofu };
}
