import { parse as parseHcl } from "@cdktf/hcl2json";
import { Ipv4Network, networkSize, networksOverlap, parseIpv4Network } from "./cidr";
import { HOSTS } from "./cluster-layout";

/**
 * The deployment parameters. Each one is a Terraform variable of the same name (so `TF_VAR_x`
 * works at plan time) and is read from the same `TF_VAR_x` at synth time, validated here with
 * the same rules, and recorded as the variable's default.
 */

/** A rule checked twice: in TypeScript at synth time and as a Terraform `validation` at plan. */
export interface Rule<T> {
  /** Synth-time check. */
  readonly test: (value: T) => boolean;
  /** The same rule as a Terraform expression over `var.<name>`. */
  readonly condition: string;
  /** Completes "<name> must ...". */
  readonly mustBe: string;
}

export interface VariableSpec<T> {
  /** Terraform type constraint. */
  readonly type: string;
  readonly description: string;
  /** `undefined` means the variable has no usable default (`null`). */
  readonly default: T | undefined;
  readonly rules: readonly Rule<T>[];
  /** Sensitive values are validated for plan time only, and never recorded in the JSON. */
  readonly sensitive?: boolean;
  /**
   * Ephemeral values are kept out of plan files, `tofu show -json` and state as well (OpenTofu
   * 1.11+, Terraform 1.10+); they can feed provisioners and connections, not resource arguments.
   */
  readonly ephemeral?: boolean;
  /** How a TF_VAR_ string becomes a value, the way Terraform converts it for this type. */
  readonly kind: "string" | "number" | "bool" | "complex";
  /**
   * Rules over this and other variables that involve a secret, which synth never sees (it may be
   * given at plan time only): checked by Terraform's validation alone.
   */
  readonly planTimeRules?: readonly Omit<Rule<T>, "test">[];
}

export interface UserAccount {
  readonly username: string;
  readonly ssh_public_key: string;
}

/** Thrown for a bad parameter; its message is the single line a user sees. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "ConfigError";
  }
}

const LINUX_USERNAME = /^[a-z_][a-z0-9_-]{0,31}$/;
const LINUX_USERNAME_HCL = "^[a-z_][a-z0-9_-]{0,31}$";
// An OpenSSH public key line: key type, base64 blob, optional comment.
const SSH_KEY =
  /^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh\.com|sk-ecdsa-sha2-nistp256@openssh\.com) [A-Za-z0-9+/]+={0,3}( [^\n]*)?$/;
const SSH_KEY_HCL =
  "^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)|sk-ssh-ed25519@openssh[.]com|sk-ecdsa-sha2-nistp256@openssh[.]com) [A-Za-z0-9+/]+={0,3}( [^\\n]*)?$";
const DNS_NAME = /^(?=.{1,253}$)[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$/;
const DNS_NAME_HCL = "^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?([.][a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$";
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const UUID_HCL = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";

/** The hosts the provisioners log in to, as keys of ssh_host_keys. */
export const SSH_HOST_ROLES = ["bastion", "salt_master"] as const;

/** Nova server group policies for the Kubernetes nodes, plus "none" for no group. */
export const SERVER_GROUP_POLICIES = ["soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity", "none"] as const;

/** Smallest and largest prefix accepted for the networks the stack creates. */
const MIN_SUBNET_PREFIX = 8;
const MAX_SUBNET_PREFIX = 24;

function isNetwork(value: string, minPrefix: number, maxPrefix: number): boolean {
  const network = parseIpv4Network(value);
  return typeof network !== "string" && network.prefixLength >= minPrefix && network.prefixLength <= maxPrefix;
}

// Terraform twin of isNetwork. try() keeps an unparsable value from turning into a function
// error, so the user sees the rule's message instead.
function networkCondition(ref: string, minPrefix: number, maxPrefix: number): string {
  return (
    `try(can(cidrnetmask(${ref})) && cidrhost(${ref}, 0) == split("/", ${ref})[0]` +
    ` && tonumber(split("/", ${ref})[1]) >= ${minPrefix} && tonumber(split("/", ${ref})[1]) <= ${maxPrefix}, false)`
  );
}

function subnetCidrRules(name: string): Rule<string>[] {
  return [
    {
      test: (v) => isNetwork(v, MIN_SUBNET_PREFIX, MAX_SUBNET_PREFIX),
      condition: networkCondition(`var.${name}`, MIN_SUBNET_PREFIX, MAX_SUBNET_PREFIX),
      mustBe: `an IPv4 network address in CIDR form with a prefix from /${MIN_SUBNET_PREFIX} to /${MAX_SUBNET_PREFIX}, such as 10.0.0.0/16`,
    },
  ];
}

function cidrListRules(name: string, minItems: number): Rule<string[]>[] {
  return [
    {
      test: (v) => v.length >= minItems && v.every((c) => isNetwork(c, 0, 32)),
      condition: `length(var.${name}) >= ${minItems} && alltrue([for c in var.${name} : ${networkCondition("c", 0, 32)}])`,
      mustBe: `a list of${minItems > 0 ? ` at least ${minItems}` : ""} IPv4 networks in CIDR form, such as ["203.0.113.0/24"]`,
    },
  ];
}

function nonEmptyString(name: string): Rule<string> {
  return {
    test: (v) => v.trim().length > 0 && v.trim() === v,
    condition: `length(trimspace(var.${name})) > 0 && trimspace(var.${name}) == var.${name}`,
    mustBe: "a non-empty string without leading or trailing spaces",
  };
}

export const VARIABLES = {
  num_kube_nodes: {
    kind: "number",
    type: "number",
    description: "Number of Kubernetes nodes, the master included: 3 gives 1 master and 2 workers.",
    default: 3,
    rules: [
      {
        test: (v: number) => Number.isInteger(v) && v >= 1,
        condition: "var.num_kube_nodes >= 1 && floor(var.num_kube_nodes) == var.num_kube_nodes",
        mustBe: "a whole number of at least 1 (the master counts)",
      },
    ],
  } as VariableSpec<number>,
  kube_node_flavor: {
    kind: "string",
    type: "string",
    description: "OpenStack flavor of the Kubernetes nodes (see `openstack flavor list`).",
    default: "m1.large",
    rules: [nonEmptyString("kube_node_flavor")],
  } as VariableSpec<string>,
  external_network_name: {
    kind: "string",
    type: "string",
    description: "Name of the external (provider) network the router uplinks to and floating IPs come from.",
    default: "vlan1066",
    rules: [nonEmptyString("external_network_name")],
  } as VariableSpec<string>,
  base_image: {
    kind: "string",
    type: "string",
    description: "ID of the Ubuntu 20.04 (focal) image every machine boots from.",
    default: "ad156007-77bb-4e32-ac97-7f8340cab73d",
    rules: [
      {
        test: (v: string) => UUID.test(v),
        condition: `can(regex("${UUID_HCL}", var.base_image))`,
        mustBe: "an image ID (a lower-case UUID such as ad156007-77bb-4e32-ac97-7f8340cab73d)",
      },
    ],
  } as VariableSpec<string>,
  deploy_domain_name: {
    kind: "string",
    type: "string",
    description: "DNS domain appended to every machine name: the Salt master is salt.<domain>.",
    default: "kube-on-os",
    rules: [
      {
        test: (v: string) => DNS_NAME.test(v),
        condition: `length(var.deploy_domain_name) <= 253 && can(regex("${DNS_NAME_HCL}", var.deploy_domain_name))`,
        mustBe: "a lower-case DNS name: labels of a-z, 0-9 and '-', separated by dots, no spaces",
      },
    ],
  } as VariableSpec<string>,
  deploy_user: {
    kind: "string",
    type: "string",
    description: "The image's default user, used by the provisioners to log in.",
    default: "ubuntu",
    rules: [
      {
        test: (v: string) => LINUX_USERNAME.test(v) && v !== "root",
        condition: `can(regex("${LINUX_USERNAME_HCL}", var.deploy_user)) && var.deploy_user != "root"`,
        mustBe: "a Linux user name other than root (lower case, starting with a letter or '_')",
      },
    ],
  } as VariableSpec<string>,
  set_root_password: {
    kind: "bool",
    type: "bool",
    description:
      "Set root's console password on every machine, from root_password_hash (by cloud-init, at creation) or root_password (by the provisioning chain, through Salt); for debugging only, SSH root login stays disabled.",
    default: false,
    rules: [],
    planTimeRules: [
      {
        condition: "!var.set_root_password || var.root_password != null || var.root_password_hash != null",
        mustBe: "false unless root_password or root_password_hash is given",
      },
    ],
  } as VariableSpec<boolean>,
  root_password: {
    kind: "string",
    type: "string",
    description:
      "Root console password set when set_root_password is true, on every machine through Salt, as a SHA-512 crypt hash, each time the orchestration runs. Ephemeral: given at plan and apply, never stored in the synthesized JSON, a plan or the state.",
    default: undefined,
    sensitive: true,
    ephemeral: true,
    rules: [
      {
        test: (v: string) => v.length >= 12,
        // Terraform evaluates both sides of || (OpenTofu stops at the first true one), so a null
        // must never reach length(); a conditional evaluates only the branch it takes.
        condition: "var.root_password == null ? true : length(var.root_password) >= 12",
        mustBe: "at least 12 characters long",
      },
    ],
  } as VariableSpec<string>,
  root_password_hash: {
    kind: "string",
    type: "string",
    description:
      "Recommended form of the root console password: a crypt(3) hash (e.g. from `openssl passwd -6`), set through cloud-init when set_root_password is true.",
    default: undefined,
    sensitive: true,
    rules: [
      {
        test: (v: string) => /^\$(5|6|y|2b)\$\S+$/.test(v),
        condition: 'var.root_password_hash == null || can(regex("^[$](5|6|y|2b)[$][^[:space:]]+$", var.root_password_hash))',
        mustBe: "a crypt(3) SHA-512, SHA-256, yescrypt or bcrypt hash such as $6$salt$... (or unset)",
      },
    ],
  } as VariableSpec<string>,
  users: {
    kind: "complex",
    type: "list(object({ username = string, ssh_public_key = string }))",
    description: "People who get an account with SSH access on every machine (created by Salt's core.users state).",
    default: [],
    rules: [
      {
        test: (v: UserAccount[]) => v.every((u) => LINUX_USERNAME.test(u.username) && u.username !== "root"),
        condition: `alltrue([for u in var.users : can(regex("${LINUX_USERNAME_HCL}", u.username)) && u.username != "root"])`,
        mustBe: "a list whose usernames are Linux user names other than root",
      },
      {
        test: (v: UserAccount[]) => v.every((u) => SSH_KEY.test(u.ssh_public_key)),
        condition: `alltrue([for u in var.users : can(regex("${SSH_KEY_HCL}", u.ssh_public_key))])`,
        mustBe: "a list whose ssh_public_key values are single OpenSSH public key lines (ssh-ed25519, ssh-rsa, ecdsa-...)",
      },
      {
        test: (v: UserAccount[]) => new Set(v.map((u) => u.username)).size === v.length,
        condition: "length(distinct([for u in var.users : u.username])) == length(var.users)",
        mustBe: "a list without duplicate usernames",
      },
    ],
  } as VariableSpec<UserAccount[]>,
  deploy_ssh_public_key: {
    kind: "string",
    type: "string",
    description:
      "OpenSSH public key installed for deploy_user on every machine, as a new Nova keypair. Empty: use keypair_name, or no keypair.",
    default: "",
    rules: [
      {
        test: (v: string) => v === "" || SSH_KEY.test(v),
        condition: `var.deploy_ssh_public_key == "" || can(regex("${SSH_KEY_HCL}", var.deploy_ssh_public_key))`,
        mustBe: "empty or a single OpenSSH public key line (ssh-ed25519, ssh-rsa, ecdsa-...)",
      },
    ],
  } as VariableSpec<string>,
  keypair_name: {
    kind: "string",
    type: "string",
    description: "Name of an existing Nova keypair for deploy_user, used when deploy_ssh_public_key is empty.",
    default: "",
    rules: [
      {
        test: (v: string) => v.trim() === v,
        condition: "trimspace(var.keypair_name) == var.keypair_name",
        mustBe: "a keypair name without leading or trailing spaces",
      },
    ],
  } as VariableSpec<string>,
  bastion_flavor: {
    kind: "string",
    type: "string",
    description: "OpenStack flavor of the bastion.",
    default: "m1.small",
    rules: [nonEmptyString("bastion_flavor")],
  } as VariableSpec<string>,
  salt_master_flavor: {
    kind: "string",
    type: "string",
    description: "OpenStack flavor of the Salt master.",
    default: "m1.medium",
    rules: [nonEmptyString("salt_master_flavor")],
  } as VariableSpec<string>,
  salt_volume_size: {
    kind: "number",
    type: "number",
    description: "Size in GiB of the Salt master's persistent volume (/srv/salt and the Salt PKI).",
    default: 10,
    rules: [
      {
        test: (v: number) => Number.isInteger(v) && v >= 1 && v <= 1024,
        condition: "var.salt_volume_size >= 1 && var.salt_volume_size <= 1024 && floor(var.salt_volume_size) == var.salt_volume_size",
        mustBe: "a whole number of GiB from 1 to 1024",
      },
    ],
  } as VariableSpec<number>,
  kube_server_group_policy: {
    kind: "string",
    type: "string",
    description: "Nova server group policy that spreads the Kubernetes nodes, or none.",
    default: "soft-anti-affinity",
    rules: [
      {
        test: (v: string) => (SERVER_GROUP_POLICIES as readonly string[]).includes(v),
        condition: `contains(${JSON.stringify(SERVER_GROUP_POLICIES)}, var.kube_server_group_policy)`,
        mustBe: `one of ${SERVER_GROUP_POLICIES.join(", ")}`,
      },
    ],
  } as VariableSpec<string>,
  public_network_cidr: {
    kind: "string",
    type: "string",
    description: "CIDR of the public network (router, bastion, Kubernetes master). Static hosts use its lower half, DHCP the upper half.",
    default: "10.0.0.0/16",
    rules: subnetCidrRules("public_network_cidr"),
  } as VariableSpec<string>,
  private_network_cidr: {
    kind: "string",
    type: "string",
    description:
      "CIDR of the private network (all machines; the bastion is its gateway). Static hosts use its lower half, DHCP the upper half.",
    default: "10.1.0.0/16",
    rules: subnetCidrRules("private_network_cidr"),
  } as VariableSpec<string>,
  pod_cidr: {
    kind: "string",
    type: "string",
    description: "Kubernetes pod network. Must not overlap the public or private network (microk8s' own default, 10.1.0.0/16, does).",
    default: "10.244.0.0/16",
    rules: subnetCidrRules("pod_cidr"),
  } as VariableSpec<string>,
  service_cidr: {
    kind: "string",
    type: "string",
    description: "Kubernetes service network. Must not overlap the other networks.",
    default: "10.152.183.0/24",
    rules: subnetCidrRules("service_cidr"),
  } as VariableSpec<string>,
  ssh_allowed_cidrs: {
    kind: "complex",
    type: "list(string)",
    description: "Networks allowed to reach the bastion's SSH port. The provisioners connect from here too.",
    default: ["0.0.0.0/0"],
    rules: cidrListRules("ssh_allowed_cidrs", 1),
  } as VariableSpec<string[]>,
  api_allowed_cidrs: {
    kind: "complex",
    type: "list(string)",
    description: "Networks allowed to reach the Kubernetes API (port 16443) on the master. Empty closes it.",
    default: ["0.0.0.0/0"],
    rules: cidrListRules("api_allowed_cidrs", 0),
  } as VariableSpec<string[]>,
  dns_nameservers: {
    kind: "complex",
    type: "list(string)",
    description: "DNS servers handed out by DHCP on both networks.",
    default: ["1.1.1.1", "1.0.0.1"],
    rules: [
      {
        test: (v: string[]) =>
          v.length >= 1 && v.length <= 5 && v.every((a) => /^\d+\.\d+\.\d+\.\d+$/.test(a) && isNetwork(`${a}/32`, 32, 32)),
        condition: `length(var.dns_nameservers) >= 1 && length(var.dns_nameservers) <= 5 && alltrue([for a in var.dns_nameservers : ${networkCondition('format("%s/32", a)', 32, 32)}])`,
        mustBe: "a list of 1 to 5 IPv4 addresses",
      },
    ],
  } as VariableSpec<string[]>,
  run_provisioners: {
    kind: "bool",
    type: "bool",
    description:
      "Run the provisioning chain (wait for cloud-init, sync Salt, accept minion keys, orchestrate) through the bastion. false creates the machines only (tests against an API double, or configuring them by other means).",
    default: true,
    rules: [],
  } as VariableSpec<boolean>,
  check_quotas: {
    kind: "bool",
    type: "bool",
    description:
      "Read the project's Nova, Cinder and Neutron quotas at plan time and stop the plan if a limit is smaller than the deployment needs. false skips it (a cloud whose policy hides quotas from project members).",
    default: true,
    rules: [],
  } as VariableSpec<boolean>,
  ssh_host_keys: {
    kind: "complex",
    type: "map(string)",
    description:
      "Known SSH host keys (or signing CA keys) of the hosts the provisioners log in to, by role: bastion, salt_master. A role without a key is not checked.",
    default: {},
    rules: [
      {
        test: (v: Record<string, string>) => Object.keys(v).every((role) => (SSH_HOST_ROLES as readonly string[]).includes(role)),
        condition: `alltrue([for role in keys(var.ssh_host_keys) : contains(${JSON.stringify(SSH_HOST_ROLES)}, role)])`,
        mustBe: `a map whose keys are ${SSH_HOST_ROLES.join(" or ")}`,
      },
      {
        test: (v: Record<string, string>) => Object.values(v).every((key) => SSH_KEY.test(key)),
        condition: `alltrue([for key in values(var.ssh_host_keys) : can(regex("${SSH_KEY_HCL}", key))])`,
        mustBe: "a map whose values are single OpenSSH public key lines (ssh-ed25519, ecdsa-..., ssh-rsa)",
      },
    ],
  } as VariableSpec<Record<string, string>>,
} as const;

export type VariableName = keyof typeof VARIABLES;
type ValueOf<S> = S extends VariableSpec<infer T> ? T : never;

/** The sensitive variables: validated when given, never recorded, absent from KubeOnOsConfig. */
type SecretName = "root_password" | "root_password_hash";

/** Validated parameters. The secrets are deliberately absent: they exist at plan time only. */
export type KubeOnOsConfig = { readonly [K in Exclude<VariableName, SecretName>]: ValueOf<(typeof VARIABLES)[K]> };

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

/** Converts a TF_VAR_ string the way Terraform does for the variable's type. */
async function convert(name: VariableName, spec: VariableSpec<unknown>, raw: string): Promise<unknown> {
  const bad = (why: string) => new ConfigError(`Invalid TF_VAR_${name}=${spec.sensitive ? "(hidden)" : describeValue(raw)}: ${why}.`);
  switch (spec.kind) {
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
    case "complex": {
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

/** Checks that `value` has the shape of the Terraform type `spec.type`, for complex types. */
function shapeError(name: VariableName, value: unknown): string | undefined {
  const isStringList = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string");
  if (name === "users") {
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
  }
  if (name === "ssh_host_keys") {
    const isStringMap =
      typeof value === "object" && value !== null && !Array.isArray(value) && Object.values(value).every((v) => typeof v === "string");
    return isStringMap ? undefined : 'must be a map of strings, such as { bastion = "ssh-ed25519 AAAA..." }';
  }
  return isStringList(value) ? undefined : "must be a list of strings";
}

function checkRules(name: VariableName, spec: VariableSpec<unknown>, value: unknown, raw: string | undefined): void {
  const shown = spec.sensitive ? "(hidden)" : raw !== undefined ? describeValue(raw) : JSON.stringify(value);
  if (spec.kind === "complex") {
    const why = shapeError(name, value);
    if (why) throw new ConfigError(`Invalid TF_VAR_${name}=${shown}: ${why}.`);
  }
  for (const rule of spec.rules) {
    if (!rule.test(value)) throw new ConfigError(`Invalid TF_VAR_${name}=${shown}: ${name} must be ${rule.mustBe}.`);
  }
}

function crossCheck(config: KubeOnOsConfig): void {
  if (config.deploy_ssh_public_key !== "" && config.keypair_name !== "") {
    throw new ConfigError(
      `Invalid TF_VAR_keypair_name=${describeValue(config.keypair_name)}: set either deploy_ssh_public_key or keypair_name, not both.`,
    );
  }
  const networks: [VariableName, Ipv4Network][] = (
    ["public_network_cidr", "private_network_cidr", "pod_cidr", "service_cidr"] as const
  ).map((n) => [n, parseIpv4Network(config[n]) as Ipv4Network]);
  for (const [i, [nameA, a]] of networks.entries()) {
    for (const [nameB, b] of networks.slice(i + 1)) {
      if (networksOverlap(a, b)) {
        throw new ConfigError(`Invalid network layout: ${nameA}=${a.cidr} overlaps ${nameB}=${b.cidr}; every network must be disjoint.`);
      }
    }
  }
  // Static addresses live in the lower half of each network, DHCP in the upper half.
  const privateNetwork = networks[1][1];
  const lastWorkerHost = HOSTS.firstWorkerPrivate + config.num_kube_nodes - 2;
  if (lastWorkerHost >= networkSize(privateNetwork) / 2) {
    throw new ConfigError(
      `Invalid TF_VAR_num_kube_nodes=${config.num_kube_nodes}: workers need private host numbers up to ${lastWorkerHost}, ` +
        `beyond the static (lower) half of private_network_cidr=${privateNetwork.cidr}; use a larger private network or fewer nodes.`,
    );
  }
}

/**
 * Reads every parameter from `TF_VAR_*` in `env`, falling back to the defaults, and validates
 * them all. Throws ConfigError, with a one-line message, on the first bad value.
 */
export async function loadConfig(env: NodeJS.ProcessEnv = process.env): Promise<KubeOnOsConfig> {
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(VARIABLES) as [VariableName, VariableSpec<unknown>][]) {
    const raw = env[`TF_VAR_${name}`];
    const value = raw === undefined ? spec.default : await convert(name, spec, raw);
    if (value !== undefined) checkRules(name, spec, value, raw);
    if (!spec.sensitive) values[name] = value;
  }
  const config = values as KubeOnOsConfig;
  crossCheck(config);
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

/**
 * Carries TF_VAR_* past the cdktf CLI, which removes them from the app's environment;
 * scripts/cdktf.js (behind `npm run synth|diff|deploy`) sets it to a JSON object.
 */
export const FORWARDED_TF_VARS = "KUBE_ON_OS_FORWARDED_TF_VARS";

/** `env` plus the TF_VAR_* forwarded by scripts/cdktf.js; variables set directly win. */
export function withForwardedTfVars(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const forwarded = env[FORWARDED_TF_VARS];
  if (forwarded === undefined || forwarded === "") return env;
  let parsed: unknown;
  try {
    parsed = JSON.parse(forwarded);
  } catch {
    throw new ConfigError(`Invalid ${FORWARDED_TF_VARS}: must be a JSON object of TF_VAR_* strings (set by scripts/cdktf.js).`);
  }
  const valid =
    typeof parsed === "object" &&
    parsed !== null &&
    Object.entries(parsed).every(([key, value]) => key.startsWith("TF_VAR_") && typeof value === "string");
  if (!valid) throw new ConfigError(`Invalid ${FORWARDED_TF_VARS}: must be a JSON object of TF_VAR_* strings (set by scripts/cdktf.js).`);
  return { ...(parsed as Record<string, string>), ...env };
}

export async function loadSettings(env: NodeJS.ProcessEnv = process.env): Promise<LoadedSettings> {
  const withTfVars = withForwardedTfVars(env);
  return { config: await loadConfig(withTfVars), backend: loadBackend(withTfVars) };
}
