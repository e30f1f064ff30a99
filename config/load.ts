import { ConfigError } from "./config-error";
import { withForwardedTfVars } from "./forward";
import { convertNodePools, NODE_POOLS_TYPE } from "./node-pools";
import { CROSS_RULES, KubeOnOsConfig, TypeConstraint, VARIABLE_NAMES, VariableName, VARIABLES, VariableSpec } from "./parameters";
import { parseTerraformNumber } from "./terraform-number";

/** Which state backend the stack declares. */
export type BackendKind = "http" | "local";

export interface LoadedSettings {
  readonly config: KubeOnOsConfig;
  readonly backend: BackendKind;
}

function describeValue(raw: string): string {
  return JSON.stringify(raw);
}

/** How a message shows a value: never a secret's, nor one that may hold key material. */
function shown(spec: VariableSpec<unknown>, raw: string | undefined, value: unknown): string {
  if (spec.sensitive) return "(hidden)";
  if (spec.concealed) return "(not shown)";
  return raw !== undefined ? describeValue(raw) : JSON.stringify(value);
}

/**
 * A string from @cdktf/hcl2json, which gives strings as HCL template source: `$${` and `%%{` are
 * escapes for a literal `${` and `%{`, and an unescaped `${` or `%{` is an interpolation or a
 * directive, which a TF_VAR_ value cannot hold (Terraform evaluates it without variables or
 * functions). undefined for such a string.
 */
function templateLiteral(source: string): string | undefined {
  let text = "";
  for (let i = 0; i < source.length; i++) {
    const rest = source.slice(i, i + 3);
    if (rest === "$${" || rest === "%%{") {
      text += rest.slice(1);
      i += 2;
    } else if (rest.startsWith("${") || rest.startsWith("%{")) {
      return undefined;
    } else {
      text += source[i];
    }
  }
  return text;
}

/** A value from @cdktf/hcl2json with every string and key read as a literal, or undefined if one is not. */
function literalValue(value: unknown): { value: unknown } | undefined {
  if (typeof value === "string") {
    const text = templateLiteral(value);
    return text === undefined ? undefined : { value: text };
  }
  if (Array.isArray(value)) {
    const items = value.map(literalValue);
    return items.every((item) => item !== undefined) ? { value: items.map((item) => item!.value) } : undefined;
  }
  if (typeof value === "object" && value !== null) {
    const entries: [string, unknown][] = [];
    for (const [key, item] of Object.entries(value)) {
      const literalKey = templateLiteral(key);
      const literalItem = literalValue(item);
      if (literalKey === undefined || literalItem === undefined) return undefined;
      entries.push([literalKey, literalItem.value]);
    }
    return { value: Object.fromEntries(entries) };
  }
  return { value };
}

type ComplexType = Exclude<TypeConstraint, "string" | "number" | "bool">;

function isComplex(type: TypeConstraint): type is ComplexType {
  return type !== "string" && type !== "number" && type !== "bool";
}

const isStringList = (value: unknown) => Array.isArray(value) && value.every((s) => typeof s === "string");

const isStringMap = (value: unknown) =>
  typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string");

/** Why a parsed TF_VAR_ value does not have the shape of its (complex) type, if it does not. */
const SHAPE_ERRORS: { readonly [C in ComplexType]: (value: unknown) => string | undefined } = {
  "list(string)": (value) => (isStringList(value) ? undefined : "must be a list of strings"),
  "map(string)": (value) => (isStringMap(value) ? undefined : 'must be a map of strings, such as { key = "value" }'),
  "list(object({ username = string, ssh_public_key = string }))": (value) => {
    if (!Array.isArray(value)) return "must be a list of objects { username = string, ssh_public_key = string }";
    for (const [i, u] of value.entries()) {
      if (typeof u !== "object" || u === null || Array.isArray(u)) return `element ${i} must be an object { username, ssh_public_key }`;
      const missing = ["username", "ssh_public_key"].filter((key) => !(key in u));
      if (missing.length > 0) return `element ${i} must have the attributes username and ssh_public_key (lacks ${missing.join(", ")})`;
      const user = u as Record<string, unknown>;
      if (typeof user.username !== "string" || typeof user.ssh_public_key !== "string") {
        return `element ${i}: username and ssh_public_key must be strings`;
      }
    }
    return undefined;
  },
  [NODE_POOLS_TYPE]: (value) => {
    const converted = convertNodePools(value);
    return "error" in converted ? converted.error : undefined;
  },
};

/** A bool or number where Terraform wants a string, converted as go-cty converts it; anything else as it is. */
function asString(value: unknown): unknown {
  return typeof value === "boolean" || typeof value === "number" ? String(value) : value;
}

/**
 * A parsed value converted to its type the way Terraform converts a TF_VAR_ value: an object
 * loses the attributes its type does not have, a bool or number where a string belongs becomes
 * its text, and node_pools' optional attributes take their defaults. A value that cannot be
 * converted stays as it is, for SHAPE_ERRORS to say why.
 */
function conformed(type: ComplexType, value: unknown): unknown {
  switch (type) {
    case "list(string)":
      return Array.isArray(value) ? value.map(asString) : value;
    case "map(string)":
      return typeof value === "object" && value !== null && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, asString(item)]))
        : value;
    case NODE_POOLS_TYPE: {
      const converted = convertNodePools(value);
      return "error" in converted ? value : converted.value;
    }
    default:
      if (!Array.isArray(value)) return value;
      return value.map((u) =>
        typeof u === "object" && u !== null && !Array.isArray(u)
          ? Object.fromEntries(
              Object.entries(u)
                .filter(([key]) => key === "username" || key === "ssh_public_key")
                .map(([key, attribute]) => [key, asString(attribute)]),
            )
          : u,
      );
  }
}

/** Converts a TF_VAR_ string the way Terraform does for the variable's type. */
/**
 * @cdktf/hcl2json starts its Go parser (WebAssembly) as soon as it is loaded, a quarter of a
 * synth's time: it is loaded when a complex TF_VAR_ value first needs it.
 */
let hcl2json: Promise<typeof import("@cdktf/hcl2json")> | undefined;

async function parseHcl(filename: string, contents: string): Promise<Record<string, unknown>> {
  hcl2json ??= import("@cdktf/hcl2json");
  return (await hcl2json).parse(filename, contents);
}

async function convert(name: VariableName, spec: VariableSpec<unknown>, raw: string): Promise<unknown> {
  const bad = (why: string) => new ConfigError(`Invalid TF_VAR_${name}=${shown(spec, raw, undefined)}: ${why}.`);
  switch (spec.type) {
    case "string":
      return raw;
    case "number": {
      const value = parseTerraformNumber(raw);
      if (value === undefined) throw bad("must be a number (Terraform reads no spaces, NaN or hex)");
      return value;
    }
    case "bool":
      // Terraform's string-to-bool conversion accepts exactly these.
      if (raw === "true" || raw === "1") return true;
      if (raw === "false" || raw === "0") return false;
      throw bad("must be true or false");
    default: {
      // Terraform parses complex TF_VAR_ values as HCL expressions (JSON is valid HCL too).
      let parsed: Record<string, unknown>;
      try {
        parsed = await parseHcl(`TF_VAR_${name}`, `value = ${raw}\n`);
      } catch (error) {
        const detail = String(error)
          .replace(/\s+/g, " ")
          .replace(/^Error: /, "");
        throw bad(`is not a valid HCL or JSON value (${detail})`);
      }
      const keys = Object.keys(parsed);
      if (keys.length !== 1 || keys[0] !== "value") throw bad("must be a single value");
      // null for a variable that is not nullable means its default (Terraform's `nullable = false`).
      if (parsed.value === null && spec.default !== undefined) return spec.default;
      const literal = literalValue(parsed.value);
      if (literal === undefined)
        throw bad("must be a literal value without references, interpolation or directives (write $${ and %%{ for a literal ${ and %{)");
      return conformed(spec.type, literal.value);
    }
  }
}

function checkRules(name: VariableName, spec: VariableSpec<unknown>, value: unknown, raw: string | undefined): void {
  const what = `TF_VAR_${name}=${shown(spec, raw, value)}`;
  if (isComplex(spec.type)) {
    const why = SHAPE_ERRORS[spec.type](value);
    if (why) throw new ConfigError(`Invalid ${what}: ${why}.`);
  }
  for (const rule of spec.rules) {
    if (!rule.test(value)) throw new ConfigError(`Invalid ${what}: ${rule.subject?.of(value) ?? name} must be ${rule.mustBe}.`);
  }
}

/**
 * Reads every parameter from `TF_VAR_*` in `env`, falling back to the defaults, and validates
 * them all. Throws ConfigError, with a one-line message, on the first bad value.
 */
export async function loadConfig(env: NodeJS.ProcessEnv = process.env): Promise<KubeOnOsConfig> {
  const values: Record<string, unknown> = {};
  for (const name of VARIABLE_NAMES) {
    const spec: VariableSpec<unknown> = VARIABLES[name];
    const raw = env[`TF_VAR_${name}`];
    const value = raw === undefined ? spec.default : await convert(name, spec, raw);
    if (value !== undefined) checkRules(name, spec, value, raw);
    if (!spec.sensitive) values[name] = value;
  }
  // Every non-secret variable has a value now, checked against its type.
  const config = values as KubeOnOsConfig;
  for (const name of VARIABLE_NAMES) {
    for (const crossRule of CROSS_RULES[name] ?? []) {
      if (!crossRule.test(config)) {
        const spec: VariableSpec<unknown> = VARIABLES[name];
        const raw = env[`TF_VAR_${name}`];
        const what = `${raw === undefined ? name : `TF_VAR_${name}`}=${shown(spec, raw, config[name as keyof KubeOnOsConfig])}`;
        throw new ConfigError(`Invalid ${what}: ${name} must be ${crossRule.mustBe}.`);
      }
    }
  }
  return config;
}

/**
 * The state backend: KUBE_ON_OS_BACKEND when set (`http` or `local`); otherwise `http` when
 * TF_HTTP_ADDRESS names a state server (GitLab-managed state), else `local`. So a laptop deploys
 * with no state server to set up, and whoever has a state server only has to point at it.
 */
export function loadBackend(env: NodeJS.ProcessEnv = process.env): BackendKind {
  const raw = env.KUBE_ON_OS_BACKEND;
  if (raw === "http" || raw === "local") return raw;
  if (raw !== undefined && raw !== "") {
    throw new ConfigError(
      `Invalid KUBE_ON_OS_BACKEND=${describeValue(raw)}: must be "http" or "local" (unset: http when TF_HTTP_ADDRESS is set, else local).`,
    );
  }
  return env.TF_HTTP_ADDRESS ? "http" : "local";
}

/** The parameters and the backend, from `env` and the TF_VAR_* that scripts/cdktf.js forwards. */
export async function loadSettings(env: NodeJS.ProcessEnv = process.env): Promise<LoadedSettings> {
  const withTfVars = withForwardedTfVars(env);
  return { config: await loadConfig(withTfVars), backend: loadBackend(withTfVars) };
}
