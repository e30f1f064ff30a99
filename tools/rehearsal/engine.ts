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
import { ApplyOutcome, applyOutcome } from "./results";
import { runAsync, RunResult, tofuBinary } from "./run";

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

/**
 * A rehearsal's stack: synthesized from `options` in a directory of the rehearsal's own, and
 * initialized as initializedStack() says.
 */
export async function rehearsedStack(rehearsal: Rehearsal, options: StackOptions): Promise<RehearsedStack> {
  const synthEnv = { ...options.env, TF_VAR_deploy_ssh_public_key: rehearsal.publicKey };
  const dir = await synthToDir(fs.mkdtempSync(path.join(rehearsal.dir, "synth-")), synthEnv, {
    saltTree: options.saltTree,
    pillarTree: options.pillarTree,
  });
  return initializedStack(rehearsal, dir, synthEnv);
}

/**
 * A synthesized stack in `dir` (its backend http), initialized with the double's credentials,
 * the state server's backend and the rehearsal's deploy key in place of the caller's; `env`'s
 * TF_VAR_* reach its tofu. Every stack of one rehearsal shares one state.
 */
export async function initializedStack(rehearsal: Rehearsal, dir: string, env: NodeJS.ProcessEnv): Promise<RehearsedStack> {
  const ours = (vars: NodeJS.ProcessEnv) => Object.fromEntries(Object.entries(vars).filter(([name]) => !FOREIGN.test(name)));
  const tofuEnv = {
    ...ours(process.env),
    ...ours(env),
    TF_VAR_deploy_ssh_public_key: rehearsal.publicKey,
    TF_IN_AUTOMATION: "1",
    ...rehearsal.double.passwordEnv(),
    ...rehearsal.state.backendEnv("rehearsal"),
    ...rehearsal.agentEnv,
  };
  const tofu = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    runAsync(tofuBinary(), [...args, "-no-color"], { cwd: dir, env: { ...tofuEnv, ...extra } });
  const init = await tofu(["init", "-input=false"]);
  if (init.status !== 0) throw new Error(`tofu init failed:\n${init.stderr}`);
  return {
    dir,
    tofu,
    async apply(plan?: string) {
      const started = Date.now();
      const result = await tofu(["apply", "-input=false", ...(plan === undefined ? ["-auto-approve"] : [plan])]);
      return applyOutcome(result, Date.now() - started);
    },
  };
}

export { rehearsalAvailable, startRehearsal };
export type { ApplyOutcome, Rehearsal };
