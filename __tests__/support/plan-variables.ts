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
import { PARAMETER_RULES_ID } from "../../constructs/variables";
import { synthToDir } from "./synth";
import { runTf, TfCli } from "./tofu";

/** What one side made of some TF_VAR_ values. */
export interface Verdict {
  readonly accepted: boolean;
  /** The synth error's message, or the plan's error output on one line; "" when accepted. */
  readonly message: string;
  /** planVerdicts could not judge it side by side with others, and planned it alone. */
  readonly alone?: boolean;
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

/** This process's TF_VAR_ variables, unset: a plan here reads only the values under test. */
function uninherited(): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.keys(process.env).flatMap((key) => (key.startsWith("TF_VAR_") ? [[key, undefined]] : [])));
}

/** `cli plan` of the variables in `dir` with `env`, and no TF_VAR_ inherited from this process. */
export function planVerdict(cli: TfCli, dir: string, env: NodeJS.ProcessEnv): Verdict {
  const plan = runTf(cli, ["plan", "-input=false", "-lock=false"], dir, { ...uninherited(), ...env });
  if (plan.status === 0) return { accepted: true, message: "" };
  return { accepted: false, message: plan.stderr.replace(/\s+/g, " ").trim() };
}

interface Rule {
  readonly condition: string;
  readonly error_message: string;
}
interface VariableBlock {
  readonly validation?: Rule[];
  readonly [attribute: string]: unknown;
}
interface Rules {
  readonly variable: Record<string, VariableBlock>;
  readonly resource: { terraform_data: Record<string, { lifecycle: { precondition: Rule[] } }> };
}

/** The variables a rule reads. */
function reads(rule: Rule, names: readonly string[]): Set<string> {
  const read = new Set<string>();
  for (const text of [rule.condition, rule.error_message]) {
    for (const [, name] of text.matchAll(/\bvar\.([A-Za-z0-9_-]+)/g)) if (names.includes(name)) read.add(name);
  }
  return read;
}

/**
 * The part of `rules` that can judge `values`' variables, under `prefix`: every rule (validation or
 * precondition) that reads one of them, and the variables those rules read, with their types and
 * defaults. A rule that reads none of them reads only defaults, which the default plan accepts.
 */
function rulesFor(rules: Rules, set: ReadonlySet<string>, prefix: string): { variable: object; resource: object } {
  const names = Object.keys(rules.variable);
  const judging = (rule: Rule) => [...reads(rule, names)].some((name) => set.has(name));
  const renamed = <T>(block: T): T =>
    JSON.parse(
      JSON.stringify(block).replace(/\bvar\.([A-Za-z0-9_-]+)/g, (ref, name: string) =>
        names.includes(name) ? `var.${prefix}${name}` : ref,
      ),
    );
  const declared = new Set(set);
  const validations = new Map<string, Rule[]>();
  for (const name of names) {
    const kept = (rules.variable[name].validation ?? []).filter(judging);
    if (kept.length > 0) validations.set(name, kept);
    for (const rule of kept) for (const read of [name, ...reads(rule, names)]) declared.add(read);
  }
  const [rulesId, rulesResource] = Object.entries(rules.resource.terraform_data)[0];
  const preconditions = rulesResource.lifecycle.precondition.filter(judging);
  for (const rule of preconditions) for (const read of reads(rule, names)) declared.add(read);
  const variable = Object.fromEntries(
    [...declared].map((name) => {
      const { validation: _all, ...block } = rules.variable[name];
      const kept = validations.get(name);
      return [`${prefix}${name}`, renamed(kept ? { ...block, validation: kept } : block)];
    }),
  );
  const resource = preconditions.length > 0 ? { [`${prefix}${rulesId}`]: renamed({ lifecycle: { precondition: preconditions } }) } : {};
  return { variable, resource };
}

const batchDirs = new Map<string, string>();

/** A directory initialised for `cli`, for rules written into it one batch at a time. */
function batchDir(cli: TfCli): string {
  let dir = batchDirs.get(cli.name);
  if (dir === undefined) {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-vars-batch-${cli.name}-`));
    fs.writeFileSync(path.join(dir, "variables.tf.json"), "{}");
    const init = runTf(cli, ["init", "-input=false"], dir);
    if (init.status !== 0) throw new Error(`${cli.name} init failed in ${dir}:\n${init.stderr}${init.stdout}`);
    batchDirs.set(cli.name, dir);
  }
  return dir;
}

const SAMPLE = /\bs(\d+)__/g;
/** Environments a plan: Terraform renders each diagnostic at a cost that grows with the configuration. */
const BATCH = 25;

/**
 * planVerdict of each of `envs` (TF_VAR_ values alone) against the rules planned in `rulesDir`,
 * in few plans: each environment's variables, and the rules that read them, under a prefix of its
 * own (`s<n>__`) in one configuration, so that one plan judges them all side by side (a rule costs
 * Terraform about 3 ms, a plan of every rule 0.25 s). A diagnostic belongs to the one environment
 * whose prefix it names; an environment is accepted only by a plan that succeeds with it, so the
 * rejected ones are taken out and the rest planned again. A diagnostic naming no environment, or
 * several, leaves the batch to planVerdict one by one (marked alone). Messages lose the prefix.
 */
export function planVerdicts(cli: TfCli, rulesDir: string, envs: readonly NodeJS.ProcessEnv[]): Verdict[] {
  const rules: Rules = JSON.parse(fs.readFileSync(path.join(rulesDir, "variables.tf.json"), "utf8"));
  const verdicts: Verdict[] = [];
  for (let start = 0; start < envs.length; start += BATCH) {
    verdicts.push(...planBatch(cli, rulesDir, rules, envs.slice(start, start + BATCH)));
  }
  return verdicts;
}

function planBatch(cli: TfCli, rulesDir: string, rules: Rules, envs: readonly NodeJS.ProcessEnv[]): Verdict[] {
  const dir = batchDir(cli);
  const verdicts: (Verdict | undefined)[] = envs.map(() => undefined);
  let remaining = envs.map((_, index) => index);
  while (remaining.length > 0) {
    const config = { variable: {}, resource: { terraform_data: {} } };
    const env = uninherited();
    for (const index of remaining) {
      const set = new Set(Object.keys(envs[index]).map((key) => key.replace(/^TF_VAR_/, "")));
      const part = rulesFor(rules, set, `s${index}__`);
      Object.assign(config.variable, part.variable);
      Object.assign(config.resource.terraform_data, part.resource);
      for (const [key, value] of Object.entries(envs[index])) env[key.replace(/^TF_VAR_/, `TF_VAR_s${index}__`)] = value;
    }
    // An empty block is an error of its own: no resource when no rule of the batch is a precondition.
    const written = Object.keys(config.resource.terraform_data).length > 0 ? config : { variable: config.variable };
    fs.writeFileSync(path.join(dir, "variables.tf.json"), JSON.stringify(written, null, 2));
    const plan = runTf(cli, ["plan", "-input=false", "-lock=false"], dir, env);
    if (plan.status === 0) {
      for (const index of remaining) verdicts[index] = { accepted: true, message: "" };
      break;
    }
    const messages = new Map<number, string[]>();
    let ambiguous = false;
    for (const block of plan.stderr.split(/^(?=Error: )/m).filter((text) => text.startsWith("Error: "))) {
      const named = new Set([...block.matchAll(SAMPLE)].map((match) => Number(match[1])));
      const [index] = named;
      if (named.size !== 1 || !remaining.includes(index)) {
        ambiguous = true;
        break;
      }
      messages.set(index, [...(messages.get(index) ?? []), block.replace(SAMPLE, "")]);
    }
    if (ambiguous || messages.size === 0) {
      for (const index of remaining) verdicts[index] = { ...planVerdict(cli, rulesDir, envs[index]), alone: true };
      break;
    }
    for (const [index, blocks] of messages) verdicts[index] = { accepted: false, message: blocks.join("").replace(/\s+/g, " ").trim() };
    remaining = remaining.filter((index) => !messages.has(index));
  }
  return verdicts as Verdict[];
}
