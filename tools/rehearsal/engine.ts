/**
 * The rehearsal's engine (issue 38): the stack synthesized from a user's TF_VAR_* values, Salt
 * tree and pillar, applied with real OpenTofu against the OpenStack API double, whose servers
 * boot as hosts with real cloud-init and Salt (__tests__/doubles/rehearsal/). `npm run rehearse`
 * (cli.ts) runs it for a user; the rehearsal's tests run the same.
 *
 * Nothing leaves this machine: the cloud is the double on 127.0.0.1, the hosts live in network
 * namespaces with no route out, and every OpenStack and state setting of the caller's environment
 * is replaced by the double's.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { App } from "cdktf";
import { loadConfig } from "../../config/load";
import { KubeOnOsStack, KubeOnOsStackProps } from "../../constructs/stack";
import { Rehearsal, rehearsalAvailable, startRehearsal } from "../../__tests__/doubles/rehearsal/rehearsal";
import { highstates, HostHighstate, scriptLines } from "./results";
import { runAsync, RunResult } from "./run";

/** Synthesizes the stack into `outdir` as `cdktf synth` does, from `env`'s TF_VAR_*; returns the stack's directory. */
export async function synthToDir(
  outdir: string,
  env: NodeJS.ProcessEnv = {},
  props: Omit<KubeOnOsStackProps, "config" | "backend"> = {},
): Promise<string> {
  const app = new App({ outdir, skipValidation: false });
  new KubeOnOsStack(app, "kube-on-os", { ...props, config: await loadConfig(env), backend: "http" });
  app.synth();
  return `${outdir}/stacks/kube-on-os`;
}

/**
 * The caller's environment variables that must never reach the rehearsal's tofu: a real cloud's
 * (OS_*, OS_CLOUD's clouds.yaml included), a real state's, and what would move tofu's working
 * data or arguments. How providers install (the CLI configuration, a plugin cache) stays.
 */
const FOREIGN = /^(OS_|TF_HTTP_|TF_DATA_DIR$|TF_WORKSPACE$|TF_CLI_ARGS)/;

/** One apply's outcome, read from its output. */
export interface ApplyOutcome extends RunResult {
  readonly seconds: number;
  /** Each minion's highstate, by minion id (orchestrate.sh's lines). */
  readonly highstates: Record<string, HostHighstate>;
  /** The chain's last line: on a failure, the reason. */
  readonly last: string | undefined;
}

/** A synthesized stack, initialized against the rehearsal's double and state. */
export interface RehearsedStack {
  readonly dir: string;
  /** tofu in the stack's directory, `extra` added to its environment. */
  tofu(args: string[], extra?: NodeJS.ProcessEnv): Promise<RunResult & { stamped?: string }>;
  /** Applies `plan` (a saved plan's file, in the stack's directory), or plans and applies. */
  apply(plan?: string): Promise<ApplyOutcome>;
}

export interface StackOptions {
  /** The user's TF_VAR_* values (and anything else synth reads). */
  readonly env: NodeJS.ProcessEnv;
  /** @default the repository's salt/ */
  readonly saltTree?: string;
  /** @default the repository's pillar/ */
  readonly pillarTree?: string;
}

/** The pinned tofu of the project's toolchain (KOO_TOFU, which scripts/toolchain/env.sh exports). */
export function tofuBinary(): string {
  const tofu = process.env.KOO_TOFU;
  if (!tofu) throw new Error("KOO_TOFU is not set: run through npm, which installs the toolchain and exports it");
  return tofu;
}

/**
 * A rehearsal's stack: synthesized from `options` in a directory of the rehearsal's own, and
 * initialized with the double's credentials, the state server's backend and the rehearsal's
 * deploy key in place of the caller's.
 */
export async function rehearsedStack(rehearsal: Rehearsal, options: StackOptions): Promise<RehearsedStack> {
  const synthEnv = { ...options.env, TF_VAR_deploy_ssh_public_key: rehearsal.publicKey };
  const dir = await synthToDir(fs.mkdtempSync(path.join(rehearsal.dir, "synth-")), synthEnv, {
    saltTree: options.saltTree,
    pillarTree: options.pillarTree,
  });
  const ours = (vars: NodeJS.ProcessEnv) => Object.fromEntries(Object.entries(vars).filter(([name]) => !FOREIGN.test(name)));
  const env = {
    ...ours(process.env),
    ...ours(synthEnv),
    TF_IN_AUTOMATION: "1",
    ...rehearsal.double.passwordEnv(),
    ...rehearsal.state.backendEnv("rehearsal"),
    ...rehearsal.agentEnv,
  };
  const tofu = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    runAsync(tofuBinary(), [...args, "-no-color"], { cwd: dir, env: { ...env, ...extra } });
  const init = await tofu(["init", "-input=false"]);
  if (init.status !== 0) throw new Error(`tofu init failed:\n${init.stderr}`);
  return {
    dir,
    tofu,
    async apply(plan?: string) {
      const started = Date.now();
      const result = await tofu(["apply", "-input=false", ...(plan === undefined ? ["-auto-approve"] : [plan])]);
      return {
        ...result,
        seconds: Math.round((Date.now() - started) / 1000),
        highstates: highstates(result.stdout),
        last: scriptLines(result.stdout).at(-1),
      };
    },
  };
}

export { rehearsalAvailable, startRehearsal };
export type { Rehearsal };
