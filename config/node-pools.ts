import { MAX_NODES } from "../facts/cluster-size";
import { POOL_NAME_MAX } from "../facts/names";
import {
  all,
  allowing,
  characters,
  Check,
  DISTINCT,
  DISTINCT_TAINTS,
  each,
  eachKey,
  eachValue,
  isNot,
  LABEL_KEY,
  LABEL_VALUE,
  NOT_BLANK,
  pattern,
  TAINT,
  TRIMMED,
  UNRESERVED_KEY,
  wholeNumber,
} from "./rules";
import { parseTerraformNumber } from "./terraform-number";

/**
 * Node pools: the Kubernetes workers beyond the default pool. The default pool is the wiki's
 * (num_kube_nodes nodes: the master, whose first nodes are the control plane, and the
 * k8s-worker-<n>); each pool in node_pools adds `count` workers named `k8s-<pool>-<n>`, with their
 * own flavor, image, zones, boot volume, labels and taints.
 */

/** One pool of workers, as a `node_pools` entry gives it; the stack's `nodePools` in TypeScript. */
export interface NodePool {
  /** Workers in the pool: 0 keeps the pool with no machine. */
  readonly count: number;
  /** Nova flavor of the pool's workers. @default - kube_node_flavor */
  readonly flavor?: string | null;
  /** Glance image ID or name. @default - base_image */
  readonly image?: string | null;
  /** Availability zones the workers are spread over, round-robin. @default [] - the cloud's default zone */
  readonly availability_zones?: readonly string[];
  /** Size in GiB of a Cinder boot volume made from the image. @default 0 - boot from the image on the hypervisor's disk */
  readonly boot_volume_size?: number;
  /** Cinder volume type of the boot volume. @default "" - the cloud's default type */
  readonly boot_volume_type?: string;
  /** Kubernetes labels Salt gives each worker. @default {} */
  readonly labels?: Readonly<Record<string, string>>;
  /** Kubernetes taints Salt gives each worker, `key=value:Effect` or `key:Effect`. @default [] */
  readonly taints?: readonly string[];
}

export type NodePools = Readonly<Record<string, NodePool>>;

/** The Terraform type of `node_pools`: optional attributes take these defaults, flavor and image null. */
// One literal: TerraformTypes (config/parameters.ts) keys the TypeScript type by this exact text.
// prettier-ignore
export const NODE_POOLS_TYPE = 'map(object({ count = number, flavor = optional(string), image = optional(string), availability_zones = optional(list(string), []), boot_volume_size = optional(number, 0), boot_volume_type = optional(string, ""), labels = optional(map(string), {}), taints = optional(list(string), []) }))';

/** The name the default pool has in labels and docs; no pool in node_pools may take it. */
export const DEFAULT_POOL = "default";

/** The label Terraform gives every node: the name of its pool. */
export const POOL_LABEL = "kube-on-os/pool";

/** The most workers a pool has: the cluster's cap, less the master. */
export const MAX_POOL_NODES = MAX_NODES - 1;

/**
 * Pool names no pool may take: the default pool's name, "worker" (whose workers would be
 * k8s-worker-<n>, the default pool's names) and "master" (k8s-master-<n> reads as the master).
 */
export const RESERVED_POOL_NAMES = [DEFAULT_POOL, "worker", "master"] as const;

/** The taint effects Kubernetes knows (k8s.io/api/core/v1, TaintEffect). */
export const TAINT_EFFECTS = ["NoSchedule", "PreferNoSchedule", "NoExecute"] as const;

type Converted = { readonly value: unknown } | { readonly error: string };

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value);

/** go-cty's conversion of a primitive to string: numbers and bools become their text. */
function toString(value: unknown): Converted {
  if (value === null || typeof value === "string") return { value };
  if (typeof value === "number" || typeof value === "boolean") return { value: String(value) };
  return { error: "a string is required" };
}

/** go-cty's conversion to number: a number, or a string Terraform reads as one. */
function toNumber(value: unknown): Converted {
  if (value === null || typeof value === "number") return { value };
  if (typeof value === "string") {
    const parsed = parseTerraformNumber(value);
    return parsed === undefined ? { error: "a number is required" } : { value: parsed };
  }
  return { error: "a number is required" };
}

function toStringList(value: unknown): Converted {
  if (value === null) return { value };
  if (!Array.isArray(value)) return { error: "a list of strings is required" };
  const items = value.map(toString);
  const bad = items.find((item) => "error" in item);
  return bad ?? { value: items.map((item) => (item as { value: unknown }).value) };
}

function toStringMap(value: unknown): Converted {
  if (value === null) return { value };
  if (!isObject(value)) return { error: "a map of strings is required" };
  const entries = Object.entries(value).map(([key, item]) => [key, toString(item)] as const);
  const bad = entries.find(([, item]) => "error" in item);
  return bad ? bad[1] : { value: Object.fromEntries(entries.map(([key, item]) => [key, (item as { value: unknown }).value])) };
}

/** Each attribute: how Terraform converts a given value, and the default of an optional one (null: none). */
const ATTRIBUTES: Readonly<Record<keyof NodePool, { convert: (value: unknown) => Converted; default?: unknown }>> = {
  count: { convert: toNumber },
  flavor: { convert: toString, default: null },
  image: { convert: toString, default: null },
  availability_zones: { convert: toStringList, default: [] },
  boot_volume_size: { convert: toNumber, default: 0 },
  boot_volume_type: { convert: toString, default: "" },
  labels: { convert: toStringMap, default: {} },
  taints: { convert: toStringList, default: [] },
};

/**
 * A parsed TF_VAR_node_pools value converted as Terraform converts it to NODE_POOLS_TYPE: every
 * entry an object, `count` required, a missing or null optional attribute its default, primitives
 * converted (a number where a string is wanted becomes its text, a numeric string a number), and
 * attributes the type lacks dropped, as Terraform drops them. A reason when it cannot be.
 */
export function convertNodePools(value: unknown): { readonly value: NodePools } | { readonly error: string } {
  if (!isObject(value)) return { error: 'must be a map of pools, such as { gpu = { count = 2, flavor = "g1.large" } }' };
  const pools: Record<string, unknown> = {};
  for (const [name, pool] of Object.entries(value)) {
    const where = `node_pools[${JSON.stringify(name)}]`;
    // A null element stays null, as in Terraform; the rules then reject it.
    if (pool === null) {
      pools[name] = null;
      continue;
    }
    if (!isObject(pool)) return { error: `${where} must be an object such as { count = 2 }` };
    if (!("count" in pool)) return { error: `${where} must have the attribute count` };
    const converted: Record<string, unknown> = {};
    for (const [attribute, { convert, default: fallback }] of Object.entries(ATTRIBUTES)) {
      const given = pool[attribute] ?? null;
      const result = convert(given);
      if ("error" in result) return { error: `${where}.${attribute}: ${result.error}` };
      converted[attribute] = result.value === null && fallback !== undefined ? fallback : result.value;
    }
    pools[name] = converted;
  }
  return { value: pools as NodePools };
}

// The checks a pool's settings share with the default pool's variables, and what each reads.

/** Nova's availability zone names are at most 255 characters (nova/api/validation/parameter_types.py, `az_name`). */
const ZONE_NAME = all(NOT_BLANK, TRIMMED, characters({ max: 255 }));

export const ZONES: Check<readonly string[]> = all(each("zone", ZONE_NAME), DISTINCT);
export const ZONES_MUST_BE = "a list of distinct availability zone names, each 1 to 255 characters without leading or trailing spaces";

/** The largest boot volume, in GiB (16 TiB): a typo guard, since Cinder itself sets no limit but the quota. */
export const BOOT_VOLUME_MAX = 16384;

export const BOOT_VOLUME_SIZE = wholeNumber({ min: 0, max: BOOT_VOLUME_MAX });
export const BOOT_VOLUME_SIZE_MUST_BE = `a whole number of GiB from 0 (no boot volume: the image on the hypervisor's disk) to ${BOOT_VOLUME_MAX}`;

export const VOLUME_TYPE = allowing("", all(NOT_BLANK, TRIMMED, characters({ max: 255 })));
export const VOLUME_TYPE_MUST_BE =
  "empty (the cloud's default volume type) or a Cinder volume type name without leading or trailing spaces";

/** What a key may not be, said once for labels and taints (rules.ts UNRESERVED_KEY). */
const RESERVED_KEYS =
  "outside the kubernetes.io and k8s.io namespaces, which Kubernetes and microk8s keep for their own labels and taints " +
  "(node-role.kubernetes.io/ and node-restriction.kubernetes.io/ are allowed)";

export const LABELS: Check<Readonly<Record<string, string>>> = all(
  eachKey("label", all(LABEL_KEY, isNot(POOL_LABEL), UNRESERVED_KEY)),
  eachValue("value", LABEL_VALUE),
);
export const LABELS_MUST_BE =
  "a map of Kubernetes node labels: keys [prefix/]name (a DNS subdomain prefix, a name of 1 to 63 characters of A-Z, a-z, 0-9, '-', '_' and '.' " +
  `that starts and ends with a letter or digit) other than ${POOL_LABEL}, which every node gets, ${RESERVED_KEYS}, and values empty or like a name`;

export const TAINTS: Check<readonly string[]> = all(each("taint", all(TAINT, UNRESERVED_KEY)), DISTINCT_TAINTS);
export const TAINTS_MUST_BE = `a list of Kubernetes taints key=value:Effect or key:Effect (key and value as in a label, the key ${RESERVED_KEYS}, Effect one of ${TAINT_EFFECTS.join(", ")}), no two with the same key and effect`;

/** A pool name: a DNS label that starts with a letter, short enough for `k8s-<pool>-<n>` to be a host name the layout allows. */
export const POOL_NAME = all(
  pattern(`^[a-z]([a-z0-9-]{0,${POOL_NAME_MAX - 2}}[a-z0-9])?$`),
  ...RESERVED_POOL_NAMES.map((name) => isNot(name)),
);
export const POOL_NAME_MUST_BE = `a pool name of 1 to ${POOL_NAME_MAX} characters of a-z, 0-9 and '-' that starts with a letter and ends with a letter or digit, other than ${RESERVED_POOL_NAMES.join(", ")}`;
