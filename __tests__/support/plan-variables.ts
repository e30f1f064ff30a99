/**
 * The synthesized stack's `variable` blocks alone, with the terraform_data resource whose
 * preconditions hold the rules on concealed values, planned by a real CLI: that needs no provider
 * and no network (about 0.2 s a plan), and checks exactly the plan-time side of each parameter,
 * its type conversion and every rule. The synth-time side is loadConfig().
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError } from "../../config/config-error";
import { loadConfig } from "../../config/load";
import { PARAMETER_RULES_ID } from "../../config/terraform-variables";
import { synthToDir } from "./synth";
import { runTf, TfCli } from "./tofu";

/** What one side made of some TF_VAR_ values. */
export interface Verdict {
  readonly accepted: boolean;
  /** The synth error's message, or the plan's error output on one line; "" when accepted. */
  readonly message: string;
}

/** The variable blocks of the stack synthesized into `stackDir`, and its terraform_data.ParameterRules. */
export function parameterRules(stackDir: string): object {
  const { variable, resource } = JSON.parse(fs.readFileSync(path.join(stackDir, "cdk.tf.json"), "utf8"));
  return { variable, resource: { terraform_data: { [PARAMETER_RULES_ID]: resource.terraform_data[PARAMETER_RULES_ID] } } };
}

let defaultRules: Promise<object> | undefined;

/** The default stack's parameter rules, synthesized once per test file. */
function synthesizedRules(): Promise<object> {
  defaultRules ??= (async () => parameterRules(await synthToDir(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-vars-src-")))))();
  return defaultRules;
}

/** A new directory holding only the default stack's parameter rules, initialised for `cli`. */
export async function variablesOnlyDir(cli: TfCli): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-vars-${cli.name}-`));
  fs.writeFileSync(path.join(dir, "variables.tf.json"), JSON.stringify(await synthesizedRules(), null, 2));
  const init = runTf(cli, ["init", "-input=false"], dir);
  if (init.status !== 0) throw new Error(`${cli.name} init failed in ${dir}:\n${init.stderr}${init.stdout}`);
  return dir;
}

/** Synth's verdict on `env`, which holds nothing but the TF_VAR_ values under test. */
export async function synthVerdict(env: NodeJS.ProcessEnv): Promise<Verdict> {
  try {
    await loadConfig(env);
    return { accepted: true, message: "" };
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { accepted: false, message: error.message };
  }
}

/** `cli plan` of the variables in `dir` with `env`, and no TF_VAR_ inherited from this process. */
export function planVerdict(cli: TfCli, dir: string, env: NodeJS.ProcessEnv): Verdict {
  const inherited = Object.fromEntries(Object.keys(process.env).flatMap((key) => (key.startsWith("TF_VAR_") ? [[key, undefined]] : [])));
  const plan = runTf(cli, ["plan", "-input=false", "-lock=false"], dir, { ...inherited, ...env });
  if (plan.status === 0) return { accepted: true, message: "" };
  return { accepted: false, message: plan.stderr.replace(/\s+/g, " ").trim() };
}
