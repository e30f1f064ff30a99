import { networksOverlap, parseIpv4Network } from "../facts/cidr";
import { SSH_PUBLIC_KEY_SOURCE } from "./ssh-public-key";

/**
 * Every rule on a parameter is checked twice: in TypeScript when synth reads `TF_VAR_*`, and as a
 * Terraform `validation` when a value is given at plan time only. A check here is written once
 * and yields both; __tests__/l1-validate.test.ts plans with real tofu and terraform to prove that the
 * two sides accept and reject the same values.
 *
 * Terraform (1.11) evaluates both operands of `&&` and `||`, where OpenTofu stops at the first
 * that decides; so no operand may fail with an error where another would have made it
 * irrelevant. A check that can fail on a value (a null's length) sits behind a conditional
 * instead, which evaluates only the branch it takes.
 */

/** A check on one value, in both languages. */
export interface Check<T> {
  /** The synth-time check. */
  test(value: T): boolean;
  /** The same check as a Terraform expression over `ref`, an expression holding the value. */
  condition(ref: string): string;
  /** `condition` never fails with an error, whatever `ref` holds (null included). */
  readonly total?: boolean;
}

/** A check bound to one Terraform variable, with what a user reads when it fails. */
export interface Rule<T> {
  test(value: T): boolean;
  /** The check as a Terraform expression over `var.<name>`. */
  readonly condition: string;
  /** Completes "<name> must be ...", or "<subject> must be ..." for a rule with a subject. */
  readonly mustBe: string;
  /** The part of the value a message names instead of the variable: `node_pools["gpu"].count`. */
  readonly subject?: Subject<T>;
}

/** What a failed rule names, worked out on each side from the value itself. */
export interface Subject<T> {
  /** At synth: the part of `value` that breaks the rule. */
  of(value: T): string;
  /** The same as a Terraform expression, for the validation's error_message. */
  readonly expression: string;
  /** What it names, for the docs: `node_pools["<name>"].count`. */
  readonly pattern: string;
}

/** A rule over a secret, which synth cannot check (it may be given at plan time only): Terraform alone does. */
export type PlanTimeRule = Omit<Rule<never>, "test">;

/**
 * A rule on one variable that reads others too, checked at synth over every non-secret value
 * (`C`) and at plan time by the variable's `validation` block (Terraform 1.9+ and OpenTofu 1.8+
 * allow a condition to refer to other variables). Its condition never fails with an error where
 * another rule already rejects a value: it holds then, and that rule's message is the one shown.
 */
export interface CrossRule<C> {
  test(config: C): boolean;
  readonly condition: string;
  readonly mustBe: string;
}

export function rule<T>(name: string, check: Check<T>, mustBe: string): Rule<T> {
  return { test: (value) => check.test(value), condition: check.condition(`var.${name}`), mustBe };
}

/** Inclusive bounds; an absent one is not checked. */
export interface Range {
  readonly min?: number;
  readonly max?: number;
}

function inRange(n: number, { min, max }: Range): boolean {
  return (min === undefined || n >= min) && (max === undefined || n <= max);
}

function rangeCondition(expression: string, { min, max }: Range): string {
  const bounds = [...(min === undefined ? [] : [`${expression} >= ${min}`]), ...(max === undefined ? [] : [`${expression} <= ${max}`])];
  return bounds.join(" && ");
}

/** All of `checks`. */
export function all<T>(...checks: Check<T>[]): Check<T> {
  return {
    test: (value) => checks.every((check) => check.test(value)),
    condition: (ref) => checks.map((check) => check.condition(ref)).join(" && "),
    total: checks.every((check) => check.total),
  };
}

/**
 * `allowed` (null: an unset optional value, "": an empty string meaning "none"), or else `check`:
 * joined by `||` when `check` never fails, else by a conditional.
 */
export function allowing<T>(allowed: null | "", check: Check<T>): Check<T> {
  const literal = JSON.stringify(allowed);
  return {
    test: (value) => value === allowed || (allowed === null && value === undefined) || check.test(value),
    condition: (ref) =>
      check.total ? `${ref} == ${literal} || ${check.condition(ref)}` : `${ref} == ${literal} ? true : ${check.condition(ref)}`,
    total: check.total,
  };
}

/** A whole number within `range`. */
export function wholeNumber(range: Range): Check<number> {
  return {
    test: (n) => Number.isInteger(n) && inRange(n, range),
    condition: (ref) => `${rangeCondition(ref, range)} && floor(${ref}) == ${ref}`,
  };
}

const GRAPHEMES = new Intl.Segmenter("en", { granularity: "grapheme" });

/** The length of a string as Terraform's length() counts it: in grapheme clusters ("e\u0301" is 1). */
export function terraformLength(s: string): number {
  let count = 0;
  for (const _ of GRAPHEMES.segment(s)) count++;
  return count;
}

/**
 * White space as Go's strings.TrimSpace (Terraform's trimspace()) sees it: unicode.IsSpace, which
 * includes U+0085 (NEL) and leaves U+FEFF, where JavaScript's trim() does the opposite.
 */
const GO_SPACE = "\t\n\v\f\r \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
const GO_TRIM = new RegExp(`^[${GO_SPACE}]+|[${GO_SPACE}]+$`, "g");

/** `s` without leading and trailing white space, as Terraform's trimspace() gives it. */
export function trimSpace(s: string): string {
  return s.replace(GO_TRIM, "");
}

/** A string whose length (as Terraform counts it) is within `range`. */
export function characters(range: Range): Check<string> {
  return { test: (s) => inRange(terraformLength(s), range), condition: (ref) => rangeCondition(`length(${ref})`, range) };
}

/** A list whose length is within `range`. */
export function items(range: Range): Check<readonly unknown[]> {
  return { test: (list) => inRange(list.length, range), condition: (ref) => rangeCondition(`length(${ref})`, range) };
}

/** A string with something besides white space. */
export const NOT_BLANK: Check<string> = { test: (s) => trimSpace(s).length > 0, condition: (ref) => `length(trimspace(${ref})) > 0` };

/** A string without leading or trailing white space. */
export const TRIMMED: Check<string> = { test: (s) => trimSpace(s) === s, condition: (ref) => `trimspace(${ref}) == ${ref}` };

/** One of `values`. */
export function oneOf(values: readonly string[]): Check<string> {
  return { test: (s) => values.includes(s), condition: (ref) => `contains(${JSON.stringify(values)}, ${ref})` };
}

/** Anything but `value`. */
export function isNot(value: string): Check<string> {
  return { test: (s) => s !== value, condition: (ref) => `${ref} != ${JSON.stringify(value)}` };
}

/**
 * A regular expression written once, in syntax that RE2 (Terraform's `regex()`) and JavaScript
 * read alike. It is pasted verbatim into an HCL string, so it holds no `"`, no `${` or `%{` and no
 * backslash but `\n` (a newline to HCL and to JavaScript alike): a literal `.` or `$` is `[.]`
 * or `[$]`. JavaScript lacks POSIX classes, so `[:space:]` is spelled out for it as RE2 defines
 * it.
 */
export function pattern(source: string): Check<string> {
  if (/"|[$%]\{|\\([^n]|$)|\(\?/.test(source))
    throw new Error(`pattern ${source}: not verbatim HCL, or not read alike by RE2 and JavaScript`);
  const forJavaScript = source.replace(/\[:space:\]/g, "\\t\\n\\v\\f\\r ");
  if (forJavaScript.includes("[:")) throw new Error(`pattern ${source}: only the POSIX class [:space:] is translated for JavaScript`);
  const regExp = new RegExp(forJavaScript);
  return { test: (s) => regExp.test(s), condition: (ref) => `can(regex("${source}", ${ref}))`, total: true };
}

/** An IPv4 network address (no host bits set) in CIDR form, with a prefix length within `prefix`. */
export function ipv4Network(prefix: Range): Check<string> {
  return {
    test: (s) => {
      const network = parseIpv4Network(s);
      return typeof network !== "string" && inRange(network.prefixLength, prefix);
    },
    // try() keeps an unparsable value from turning into a function error, so the user sees the
    // rule's message instead.
    condition: (ref) =>
      `try(can(cidrnetmask(${ref})) && cidrhost(${ref}, 0) == split("/", ${ref})[0]` +
      ` && can(regex("/(0|[1-9][0-9]?)$", ${ref}))` +
      ` && ${rangeCondition(`tonumber(split("/", ${ref})[1])`, prefix)}, false)`,
    total: true,
  };
}

/** An IPv4 address in four-part decimal form. */
export function ipv4Address(): Check<string> {
  const host = ipv4Network({ min: 32, max: 32 });
  return { test: (s) => host.test(`${s}/32`), condition: (ref) => host.condition(`format("%s/32", ${ref})`), total: true };
}

/**
 * `check` on an element of a list or a value of a map, a null failing it: a null element is no
 * value (`["nova", null]`), and `check`'s condition need not survive one. The conditional keeps
 * Terraform from reporting the error a function of `check` makes on null ("Invalid function
 * argument"), which a `&&` would not (Terraform evaluates both of its sides).
 */
function present<T>(check: Check<T>) {
  return {
    test: (value: T) => value !== null && value !== undefined && check.test(value),
    condition: (ref: string) => `${ref} == null ? false : ${check.condition(ref)}`,
  };
}

/** Every element of a list passes `check` (a null none); `element` names it in the Terraform `for`. */
export function each<T>(element: string, check: Check<T>): Check<readonly T[]> {
  const inList = present(check);
  return {
    test: (list) => list.every((value) => inList.test(value)),
    condition: (ref) => `alltrue([for ${element} in ${ref} : ${inList.condition(element)}])`,
  };
}

/** Every key of a map passes `check`; `key` names it in the Terraform `for`. */
export function eachKey(key: string, check: Check<string>): Check<Readonly<Record<string, unknown>>> {
  return {
    test: (map) => Object.keys(map).every((k) => check.test(k)),
    condition: (ref) => `alltrue([for ${key} in keys(${ref}) : ${check.condition(key)}])`,
  };
}

/** Every value of a map passes `check` (a null none); `value` names it in the Terraform `for`. */
export function eachValue<T>(value: string, check: Check<T>): Check<Readonly<Record<string, T>>> {
  const inMap = present(check);
  return {
    test: (map) => Object.values(map).every((v) => inMap.test(v)),
    condition: (ref) => `alltrue([for ${value} in values(${ref}) : ${inMap.condition(value)}])`,
  };
}

/** The object's attribute `name` passes `check`. */
export function attribute<K extends string, T>(name: K, check: Check<T>): Check<Readonly<Record<K, T>>> {
  return { test: (object) => check.test(object[name]), condition: (ref) => check.condition(`${ref}.${name}`) };
}

/** A list without duplicates. */
export const DISTINCT: Check<readonly string[]> = {
  test: (list) => new Set(list).size === list.length,
  condition: (ref) => `length(distinct(${ref})) == length(${ref})`,
};

/** A check on one entry of a map, by its key and value, each a Terraform reference. */
export interface EntryCheck<T> {
  test(key: string, value: T): boolean;
  condition(key: string, value: string): string;
}

/** `check` on an entry's key. */
export function onKey(check: Check<string>): EntryCheck<unknown> {
  return { test: (key) => check.test(key), condition: (key) => check.condition(key) };
}

/** `check` on an entry's value. */
export function onValue<T>(check: Check<T>): EntryCheck<T> {
  return { test: (_key, value) => check.test(value), condition: (_key, value) => check.condition(value) };
}

/**
 * A rule on every entry of the map variable `name` that names the first entry breaking it (in
 * Terraform's order, the keys' lexical order): `<name>["<key>"]<part>`. Both sides count a check
 * that cannot even be evaluated on an entry (a null where an object belongs) as broken: try() in
 * Terraform, a caught exception here.
 */
export function eachEntry<T>(name: string, part: string, check: EntryCheck<T>, mustBe: string): Rule<Readonly<Record<string, T>>> {
  const holds = (key: string, value: T) => {
    try {
      return check.test(key, value);
    } catch {
      return false;
    }
  };
  const condition = `try(${check.condition("entry_key", "entry")}, false)`;
  const firstBroken = (map: Readonly<Record<string, T>>) =>
    Object.keys(map)
      .sort()
      .find((key) => !holds(key, map[key]));
  return {
    test: (map) => firstBroken(map) === undefined,
    condition: `alltrue([for entry_key, entry in var.${name} : ${condition}])`,
    mustBe,
    subject: {
      of: (map) => `${name}[${JSON.stringify(firstBroken(map) ?? "")}]${part}`,
      expression: `format("${name}[%s]${part}", jsonencode(try([for entry_key, entry in var.${name} : entry_key if !(${condition})][0], "")))`,
      pattern: `${name}["<name>"]${part}`,
    },
  };
}

/** No two objects of a list share a value of `name`; `element` names one in the Terraform `for`. */
export function distinctBy<K extends string>(element: string, name: K): Check<readonly Readonly<Record<K, unknown>>[]> {
  return {
    test: (list) => new Set(list.map((object) => object[name])).size === list.length,
    condition: (ref) => `length(distinct([for ${element} in ${ref} : ${element}.${name}])) == length(${ref})`,
  };
}

// The patterns the parameters share.

/** A Linux user name, as useradd accepts it by default. */
export const LINUX_USERNAME = pattern("^[a-z_][a-z0-9_-]{0,31}$");

/** An OpenSSH public key line: key type, a base64 blob of that type, optional comment (config/ssh-public-key.ts). */
export const SSH_PUBLIC_KEY = pattern(SSH_PUBLIC_KEY_SOURCE);

/** A lower-case DNS name: labels of up to 63 characters, 253 in all. */
export const DNS_NAME = all(
  characters({ max: 253 }),
  pattern("^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?([.][a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$"),
);

/** A lower-case UUID, as OpenStack writes IDs; the source for a `regex()` that the stack itself evaluates. */
export const UUID_PATTERN = "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$";
export const UUID = pattern(UUID_PATTERN);

/** One PEM certificate (RFC 7468 section 5: the label CERTIFICATE, base64 lines), without its line break at the end. */
const PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----\\n([A-Za-z0-9+/=]+\\n)+-----END CERTIFICATE-----";

/**
 * PEM certificates, as `cat ca.pem` prints a bundle of them: one or more, separated by line
 * breaks, nothing else (no text between them, no private key); the last line break optional, as
 * a shell's `$(cat ca.pem)` drops it. Line breaks are LF only.
 */
export const PEM_CERTIFICATES = pattern(`^${PEM_CERTIFICATE}(\\n+${PEM_CERTIFICATE})*\\n*$`);

/** A crypt(3) hash: SHA-256, SHA-512, yescrypt or bcrypt. */
export const CRYPT_HASH = pattern("^[$](5|6|y|2b)[$][^[:space:]]+$");

/**
 * Whether the IPv4 networks `a` and `b` (Terraform expressions of CIDR strings) are disjoint:
 * two networks overlap when their addresses agree on the shorter prefix of the two. True where
 * either is no network (its own rule says so).
 */
export function disjoint(a: string, b: string): string {
  const address = (ref: string) => `split("/", ${ref})[0]`;
  const prefix = (ref: string) => `tonumber(split("/", ${ref})[1])`;
  const shorter = `min(${prefix(a)}, ${prefix(b)})`;
  return `try(cidrhost(format("%s/%d", ${address(a)}, ${shorter}), 0) != cidrhost(format("%s/%d", ${address(b)}, ${shorter}), 0), true)`;
}

/** An IPv4 network that overlaps none of `networks` (CIDR literals); anything that is no network passes. */
export function outside(networks: readonly string[]): Check<string> {
  const fixed = networks.map((cidr) => {
    const network = parseIpv4Network(cidr);
    if (typeof network === "string") throw new Error(`outside: ${cidr}: ${network}`);
    return network;
  });
  return {
    test: (s) => {
      const network = parseIpv4Network(s);
      return typeof network === "string" || fixed.every((other) => !networksOverlap(network, other));
    },
    condition: (ref) => networks.map((cidr) => disjoint(ref, JSON.stringify(cidr))).join(" && "),
    total: true,
  };
}

/** `name` and each of `others` are disjoint IPv4 networks. */
export function disjointFrom<N extends string>(name: N, others: readonly N[]): CrossRule<Readonly<Record<N, string>>> {
  return {
    test: (config) => {
      const network = parseIpv4Network(config[name]);
      return others.every((other) => {
        const otherNetwork = parseIpv4Network(config[other]);
        return typeof network === "string" || typeof otherNetwork === "string" || !networksOverlap(network, otherNetwork);
      });
    },
    condition: others.map((other) => disjoint(`var.${name}`, `var.${other}`)).join(" && "),
    mustBe: `a network that overlaps none of ${others.join(", ")}`,
  };
}

/** A DNS subdomain as Kubernetes reads one (apimachinery validation.IsDNS1123Subdomain), without its 253-character limit. */
const K8S_SUBDOMAIN = "[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
/** The name part of a qualified name (apimachinery validation.IsQualifiedName): 63 characters at most. */
const K8S_NAME = "[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?";
/** A label value (apimachinery validation.IsValidLabelValue): empty, or like a name. */
const K8S_LABEL_VALUE = `(${K8S_NAME})?`;

/** A qualified name `[prefix/]name`, whose prefix holds at most 253 characters. */
function qualified(source: string): Check<string> {
  const structure = pattern(source);
  return {
    test: (s) => structure.test(s) && s.split("/")[0].length <= 253,
    condition: (ref) => `${structure.condition(ref)} && length(split("/", ${ref})[0]) <= 253`,
  };
}

/** A Kubernetes label key (apimachinery validation.IsQualifiedName). */
export const LABEL_KEY = qualified(`^(${K8S_SUBDOMAIN}/)?${K8S_NAME}$`);

/** A Kubernetes label value. */
export const LABEL_VALUE = pattern(`^${K8S_LABEL_VALUE}$`);

/**
 * A taint as kubectl writes one, `key=value:Effect` or `key:Effect` (kubectl's taint parsing,
 * k8s.io/kubectl/pkg/cmd/taint/utils.go, parseTaint): a qualified key, a label value, and one of
 * the effects Kubernetes knows.
 */
export const TAINT = qualified(`^(${K8S_SUBDOMAIN}/)?${K8S_NAME}(=${K8S_LABEL_VALUE})?:(NoSchedule|PreferNoSchedule|NoExecute)$`);

const RESERVED_NAMESPACE = pattern("^([a-z0-9.-]*[.])?(kubernetes|k8s)[.]io/");
const ADMIN_NAMESPACE = pattern("^node-(role|restriction)[.]kubernetes[.]io/");

/**
 * A label or taint key outside the namespaces Kubernetes keeps for itself: `kubernetes.io` and
 * `k8s.io` and their subdomains, which the kubelet refuses in its own --node-labels
 * (cmd/kubelet/app/options/options.go, ValidateKubeletFlags) and which hold the labels and
 * taints the kubelet, the node controllers and microk8s set (`kubernetes.io/hostname`,
 * `node.kubernetes.io/microk8s-controlplane`, which the cloud controller manager's placement
 * selects, `node.kubernetes.io/unreachable`). Two prefixes of theirs are meant for the cluster's
 * administrator and stay allowed: `node-role.kubernetes.io/` and
 * `node-restriction.kubernetes.io/` (which the NodeRestriction admission keeps kubelets from
 * setting). Read on a taint too: its key is where it starts.
 */
export const UNRESERVED_KEY: Check<string> = {
  test: (s) => !RESERVED_NAMESPACE.test(s) || ADMIN_NAMESPACE.test(s),
  condition: (ref) => `(!${RESERVED_NAMESPACE.condition(ref)} || ${ADMIN_NAMESPACE.condition(ref)})`,
  total: true,
};

/** Taints unique by key and effect, as the API server wants them (validateNodeTaints). */
export const DISTINCT_TAINTS: Check<readonly string[]> = {
  test: (list) => new Set(list.map((taint) => taint.replace(/=[^:]*/, ""))).size === list.length,
  condition: (ref) => `length(distinct([for t in ${ref} : replace(t, "/=[^:]*/", "")])) == length(${ref})`,
};
