import { parse as parseHcl } from "@cdktf/hcl2json";
import { Ipv4Network, networkSize, networksOverlap, parseIpv4Network } from "../constructs/cidr";
import { HOSTS } from "../constructs/cluster-layout";
import { ConfigError } from "./config-error";
import { withForwardedTfVars } from "./forward";
import { KubeOnOsConfig, TypeConstraint, VARIABLE_NAMES, VariableName, VARIABLES, VariableSpec } from "./parameters";

/** Which state backend the stack declares. */
export type BackendKind = "http" | "local";

export interface LoadedSettings {
  readonly config: KubeOnOsConfig;
  readonly backend: BackendKind;
}

function describeValue(raw: string): string {
  return JSON.stringify(raw);
}

const NUMBER_SYNTAX = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

type ComplexType = Exclude<TypeConstraint, "string" | "number" | "bool">;

function isComplex(type: TypeConstraint): type is ComplexType {
  return type !== "string" && type !== "number" && type !== "bool";
}

const isStringList = (value: unknown) => Array.isArray(value) && value.every((s) => typeof s === "string");

/** Why a parsed TF_VAR_ value does not have the shape of its (complex) type, if it does not. */
const SHAPE_ERRORS: { readonly [C in ComplexType]: (value: unknown) => string | undefined } = {
  "list(string)": (value) => (isStringList(value) ? undefined : "must be a list of strings"),
  // ssh_host_keys is the only map, hence its example.
  "map(string)": (value) => {
    const isStringMap =
      typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string");
    return isStringMap ? undefined : 'must be a map of strings, such as { bastion = "ssh-ed25519 AAAA..." }';
  },
  "list(object({ username = string, ssh_public_key = string }))": (value) => {
    if (!Array.isArray(value)) return "must be a list of objects { username = string, ssh_public_key = string }";
    for (const [i, u] of value.entries()) {
      if (typeof u !== "object" || u === null || Array.isArray(u)) return `element ${i} must be an object { username, ssh_public_key }`;
      const keys = Object.keys(u).sort();
      if (keys.join(",") !== "ssh_public_key,username") {
        return `element ${i} must have exactly the attributes username and ssh_public_key (has ${keys.join(", ") || "none"})`;
      }
      const user = u as Record<string, unknown>;
      if (typeof user.username !== "string" || typeof user.ssh_public_key !== "string") {
        return `element ${i}: username and ssh_public_key must be strings`;
      }
    }
    return undefined;
  },
};

/** Converts a TF_VAR_ string the way Terraform does for the variable's type. */
async function convert(name: VariableName, spec: VariableSpec<unknown>, raw: string): Promise<unknown> {
  const bad = (why: string) => new ConfigError(`Invalid TF_VAR_${name}=${spec.sensitive ? "(hidden)" : describeValue(raw)}: ${why}.`);
  switch (spec.type) {
    case "string":
      return raw;
    case "number":
      if (!NUMBER_SYNTAX.test(raw.trim())) throw bad("must be a number");
      return Number(raw.trim());
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
      if (JSON.stringify(parsed.value).includes("${")) throw bad("must be a literal value without references or interpolation");
      return parsed.value;
    }
  }
}

function checkRules(name: VariableName, spec: VariableSpec<unknown>, value: unknown, raw: string | undefined): void {
  const shown = spec.sensitive ? "(hidden)" : raw !== undefined ? describeValue(raw) : JSON.stringify(value);
  if (isComplex(spec.type)) {
    const why = SHAPE_ERRORS[spec.type](value);
    if (why) throw new ConfigError(`Invalid TF_VAR_${name}=${shown}: ${why}.`);
  }
  for (const rule of spec.rules) {
    if (!rule.test(value)) throw new ConfigError(`Invalid TF_VAR_${name}=${shown}: ${name} must be ${rule.mustBe}.`);
  }
}

/**
 * A rule across parameters. Synth alone checks it: cross-variable `validation` needs newer
 * Terraform and OpenTofu than the stack requires.
 */
export interface CrossRule {
  /** What the rule requires, in Markdown, for docs/parameters.md. */
  readonly summary: string;
  /** The one-line error for `config`, or undefined when it complies. */
  readonly check: (config: KubeOnOsConfig) => string | undefined;
}

const NETWORKS = ["public_network_cidr", "private_network_cidr", "pod_cidr", "service_cidr"] as const;

/** "`a`, `b` and `c`" */
function listed(names: readonly string[]): string {
  const quoted = names.map((name) => `\`${name}\``);
  return `${quoted.slice(0, -1).join(", ")} and ${quoted[quoted.length - 1]}`;
}

/** The cross-variable rules, in the order they are checked. */
export const CROSS_RULES: readonly CrossRule[] = [
  {
    summary: "`deploy_ssh_public_key` and `keypair_name` are not both set.",
    check: (config) =>
      config.deploy_ssh_public_key !== "" && config.keypair_name !== ""
        ? `Invalid TF_VAR_keypair_name=${describeValue(config.keypair_name)}: set either deploy_ssh_public_key or keypair_name, not both.`
        : undefined,
  },
  {
    summary: `${listed(NETWORKS)} do not overlap.`,
    check: (config) => {
      const networks = NETWORKS.map((name) => [name, parseIpv4Network(config[name]) as Ipv4Network] as const);
      for (const [i, [nameA, a]] of networks.entries()) {
        for (const [nameB, b] of networks.slice(i + 1)) {
          if (networksOverlap(a, b)) {
            return `Invalid network layout: ${nameA}=${a.cidr} overlaps ${nameB}=${b.cidr}; every network must be disjoint.`;
          }
        }
      }
      return undefined;
    },
  },
  {
    summary:
      `The workers' fixed addresses, private host numbers ${HOSTS.firstWorkerPrivate} and up (one per worker), lie in the lower` +
      " half of `private_network_cidr`: static hosts use the lower half, DHCP the upper half.",
    check: (config) => {
      const privateNetwork = parseIpv4Network(config.private_network_cidr) as Ipv4Network;
      const lastWorkerHost = HOSTS.firstWorkerPrivate + config.num_kube_nodes - 2;
      if (lastWorkerHost < networkSize(privateNetwork) / 2) return undefined;
      return (
        `Invalid TF_VAR_num_kube_nodes=${config.num_kube_nodes}: workers need private host numbers up to ${lastWorkerHost}, ` +
        `beyond the static (lower) half of private_network_cidr=${privateNetwork.cidr}; use a larger private network or fewer nodes.`
      );
    },
  },
];

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
  for (const crossRule of CROSS_RULES) {
    const error = crossRule.check(config);
    if (error !== undefined) throw new ConfigError(error);
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
