import { TerraformResource, TerraformVariable } from "cdktf";
import { Construct } from "constructs";
import { CROSS_RULES, KubeOnOsConfig, VARIABLE_NAMES, VariableName, VARIABLES, VariableSpec } from "../config/parameters";
import { QUOTA_USAGE_VARIABLE } from "./quotas";

/** One Terraform variable per parameter, by its Terraform name. */
export type TerraformVariables = { readonly [K in VariableName]: TerraformVariable };

/** The construct id (and Terraform name) of the terraform_data resource that holds the rules on concealed values. */
export const PARAMETER_RULES_ID = "ParameterRules";

/**
 * Whether Terraform would print the variable's value when a `validation` condition that reads it
 * fails. Terraform 1.11 prints every string a failed condition refers to, a sensitive one too
 * (lists and maps it summarises, and ephemeral values it hides); a lifecycle precondition shows
 * a sensitive value as such. So such a variable is sensitive, and its rules are preconditions.
 */
function printedOnFailure(spec: VariableSpec<unknown>): boolean {
  return spec.type === "string" && (spec.concealed === true || (spec.sensitive === true && !spec.ephemeral));
}

const CONCEALED = VARIABLE_NAMES.filter((name) => printedOnFailure(VARIABLES[name]));

function readsConcealed(condition: string): boolean {
  return CONCEALED.some((name) => new RegExp(`\\bvar[.]${name}\\b`).test(condition));
}

interface Condition {
  readonly condition: string;
  readonly errorMessage: string;
}

/**
 * Declares every parameter as a Terraform variable in `stack` (the stack alone calls it: the stack
 * owns the variables), with the validated value from `config` as its default, in the table's
 * order. Every rule is a `validation` block of its variable, except those that read a concealed
 * value: they are preconditions of one terraform_data resource, which fail the plan just as
 * early, before anything is created.
 */
export function declareVariables(stack: Construct, config: KubeOnOsConfig): TerraformVariables {
  const preconditions: Condition[] = [];
  const variables = new Map(VARIABLE_NAMES.map((name) => [name, declareVariable(stack, name, VARIABLES[name], config, preconditions)]));
  new TerraformResource(stack, PARAMETER_RULES_ID, { terraformResourceType: "terraform_data", lifecycle: { precondition: preconditions } });
  // Object.fromEntries() is typed by string keys; the map holds exactly one per VariableName.
  return Object.fromEntries(variables) as TerraformVariables;
}

function declareVariable(
  stack: Construct,
  name: VariableName,
  spec: VariableSpec<unknown>,
  config: KubeOnOsConfig,
  preconditions: Condition[],
): TerraformVariable {
  // Sensitive values are never recorded.
  const value = spec.sensitive ? undefined : config[name as keyof KubeOnOsConfig];
  const conditions = [...spec.rules, ...(CROSS_RULES[name] ?? []), ...(spec.planTimeRules ?? [])].map((rule) => ({
    condition: `\${${rule.condition}}`,
    errorMessage: `${"subject" in rule && rule.subject ? `\${${rule.subject.expression}}` : name} must be ${rule.mustBe}.`,
  }));
  preconditions.push(...conditions.filter((rule) => readsConcealed(rule.condition)));
  // Maps go in as an override: cdktf snake-cases every key of a `default` (a label key
  // "kube-on-os/pool" would become "kube_on_os_pool", a pool "gpu-a" "gpu_a").
  const map = typeof value === "object" && value !== null && !Array.isArray(value);
  const variable = new TerraformVariable(stack, name, {
    type: spec.type,
    description: spec.description,
    default: map ? undefined : value,
    nullable: value === undefined,
    sensitive: spec.sensitive || printedOnFailure(spec) || undefined,
    validation: conditions.filter((rule) => !readsConcealed(rule.condition)),
  });
  if (spec.ephemeral) {
    // cdktf 0.21 predates ephemeral input variables; the override is the only way to declare one.
    variable.addOverride("ephemeral", true);
  }
  if (map) {
    variable.addOverride("default", withoutNulls(value));
  }
  if (value === undefined) {
    // Optional: root_password, for one, is only needed when set_root_password is true.
    nullDefault(variable);
  }
  return variable;
}

/**
 * The `quota_usage` variable, which is not a parameter: scripts/quota-usage.js reads it from the
 * cloud and the state before each plan (npm run diff|deploy, the pipeline's plan job), and hands
 * it over as TF_VAR_quota_usage. Null compares the quotas' limits alone.
 */
export function declareQuotaUsage(stack: Construct): TerraformVariable {
  const quotaUsage = new TerraformVariable(stack, QUOTA_USAGE_VARIABLE, {
    type: "map(object({ used = number, own = number }))",
    description:
      'What the project uses of each quota, and what this deployment holds of it, by "<service>.<quota>" of quota_needs; written before each plan by scripts/quota-usage.js. null compares the limits alone.',
    nullable: true,
  });
  nullDefault(quotaUsage);
  return quotaUsage;
}

/** Gives `variable` the default null: cdktf drops a null `default`, which would make the variable required. */
function nullDefault(variable: TerraformVariable): void {
  variable.addOverride("default", null);
}

/** `value` without its objects' null attributes: an optional attribute left out is null to Terraform anyway. */
function withoutNulls(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutNulls);
  if (typeof value !== "object" || value === null) return value;
  return Object.fromEntries(Object.entries(value).flatMap(([key, item]) => (item === null ? [] : [[key, withoutNulls(item)]])));
}
