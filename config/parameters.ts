import { parseIpv4Network } from "../facts/cidr";
import { MAX_NODES } from "../facts/cluster-size";
import { dhcpRangeSize, firstDhcpHost, IN_HCL, IN_NUMBERS } from "../facts/dhcp-range";
import { HOST_NUMBERS } from "../facts/hosts";
import { DNS_NAME_MAX, LONGEST_HOST, LONGEST_NAME_SUFFIX, OPENSTACK_NAME_MAX } from "../facts/names";
import { ACCESS_ROLE_MACHINES, ingressRules, securityGroupRefs } from "./access";
import {
  all,
  allowing,
  Check,
  attribute,
  characters,
  CrossRule,
  CRYPT_HASH,
  disjointFrom,
  DISTINCT,
  distinctBy,
  DNS_NAME,
  each,
  eachKey,
  eachValue,
  ipv4Address,
  ipv4Network,
  isNot,
  items,
  LINUX_USERNAME,
  NOT_BLANK,
  oneOf,
  outside,
  pattern,
  PEM_CERTIFICATES,
  PlanTimeRule,
  Range,
  Rule,
  rule,
  SSH_PUBLIC_KEY,
  TRIMMED,
  UUID,
  wholeNumber,
  eachEntry,
  onKey,
  onValue,
} from "./rules";
import {
  BOOT_VOLUME_SIZE,
  BOOT_VOLUME_SIZE_MUST_BE,
  LABELS,
  LABELS_MUST_BE,
  MAX_POOL_NODES,
  NODE_POOLS_TYPE,
  NodePools,
  POOL_NAME,
  POOL_NAME_MUST_BE,
  TAINTS,
  TAINTS_MUST_BE,
  VOLUME_TYPE,
  VOLUME_TYPE_MUST_BE,
  ZONES,
  ZONES_MUST_BE,
} from "./node-pools";

/**
 * The deployment parameters. Each one is a Terraform variable of the same name (so `TF_VAR_x`
 * works at plan time) and is read from the same `TF_VAR_x` at synth time, validated there with
 * the same rules, and recorded as the variable's default. docs/parameters.md is generated from
 * this table (`npm run docs:parameters`).
 */

export interface UserAccount {
  readonly username: string;
  readonly ssh_public_key: string;
}

/** The Terraform type constraints the parameters use, each with the TypeScript type of its values. */
export interface TerraformTypes {
  string: string;
  number: number;
  bool: boolean;
  "list(string)": string[];
  "map(string)": Record<string, string>;
  "list(object({ username = string, ssh_public_key = string }))": UserAccount[];
  [NODE_POOLS_TYPE]: NodePools;
}

export type TypeConstraint = keyof TerraformTypes;

/** The constraint whose values are exactly `T`; any for `unknown`. */
type ConstraintOf<T> = unknown extends T
  ? TypeConstraint
  : { [C in TypeConstraint]: [TerraformTypes[C]] extends [T] ? ([T] extends [TerraformTypes[C]] ? C : never) : never }[TypeConstraint];

export interface VariableSpec<T> {
  /** Terraform type constraint; it must hold values of type `T`. */
  readonly type: ConstraintOf<T>;
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
  /**
   * Rules over this and other variables that involve a secret, which synth never sees (it may be
   * given at plan time only): checked by Terraform's validation alone.
   */
  readonly planTimeRules?: readonly PlanTimeRule[];
  /**
   * The value may hold key material (a private key pasted by mistake): a message about it says
   * which rule it broke, never the value. Sensitive values are never shown either.
   */
  readonly concealed?: boolean;
}

/** The hosts the provisioners log in to, as keys of ssh_host_keys. */
export const SSH_HOST_ROLES = ["bastion", "salt_master"] as const;

/** Nova server group policies for the Kubernetes nodes, plus "none" for no group. */
export const SERVER_GROUP_POLICIES = ["soft-anti-affinity", "anti-affinity", "soft-affinity", "affinity", "none"] as const;

/** Whether the Kubernetes API gets an Octavia load balancer: when the catalog lists Octavia, always, never. */
export const API_LOAD_BALANCER_MODES = ["auto", "on", "off"] as const;

/**
 * The pool algorithms of LoadBalancer Services' load balancers, cloud.conf's lb-method (CPO
 * v1.35.0 docs/openstack-cloud-controller-manager/using-openstack-cloud-controller-manager.md;
 * Octavia's lb_algorithm values).
 */
export const LB_METHODS = ["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"] as const;

/**
 * The Octavia provider whose load balancers know one algorithm alone, SOURCE_IP_PORT
 * (ovn-octavia-provider, common/constants.py OVN_NATIVE_LB_ALGORITHMS; CPO's docs: with "ovn"
 * lb-method "must be set to SOURCE_IP_PORT").
 */
export const OVN_LB_PROVIDER = "ovn";

/** An Octavia provider name (octavia/api/v2/types/load_balancer.py: provider, at most 64 characters). */
const LB_PROVIDER = pattern("^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$");

/** Prefix lengths accepted for the networks the stack creates. */
const SUBNET_PREFIX = { min: 8, max: 24 } satisfies Range;

/** How many DNS servers a Neutron subnet takes. */
const NAMESERVERS = { min: 1, max: 5 } satisfies Range;

const SALT_VOLUME_GIB = { min: 1, max: 1024 } satisfies Range;

/** A user name for an account on the machines: root's is never given away. */
const ACCOUNT_NAME = all(LINUX_USERNAME, isNot("root"));

/**
 * Users and groups the machines already have or that our states rely on: a person's account
 * must not take one over (useradd also refuses a name whose group exists). From /etc/passwd and
 * /etc/group of Debian bookworm (base-passwd) and of Ubuntu 24.04's cloud image, plus snapd's
 * and microk8s' groups.
 */
export const RESERVED_ACCOUNTS = [
  ...["root", "daemon", "bin", "sys", "sync", "games", "man", "lp", "mail", "news", "uucp", "proxy", "www-data", "backup"],
  ...["list", "irc", "gnats", "_apt", "nobody", "nogroup", "sshd", "_ssh", "messagebus", "syslog", "uuidd", "tss", "tcpdump"],
  ...["systemd-network", "systemd-resolve", "systemd-timesync", "systemd-journal", "systemd-coredump", "dhcpcd", "polkitd"],
  ...["pollinate", "landscape", "fwupd-refresh", "usbmux", "dnsmasq", "lxd", "adm", "tty", "disk", "kmem", "dialout", "fax"],
  ...["voice", "cdrom", "floppy", "tape", "sudo", "audio", "dip", "operator", "src", "shadow", "utmp", "video", "sasl"],
  ...["plugdev", "staff", "users", "input", "sgx", "kvm", "render", "netdev", "crontab", "admin", "snap_daemon", "microk8s"],
] as const;

/** A person's account: a Linux user name that is no system account. */
const PERSON_NAME = all(LINUX_USERNAME, ...RESERVED_ACCOUNTS.map((name) => isNot(name)));

/** Addresses of the private DHCP range kept for what is not a pool worker: Neutron's DHCP ports, load balancers' VIPs. */
export const DHCP_RESERVE = 16;

/** The most Kubernetes nodes in the default pool, the master counted: the cluster's cap. */
export const MAX_KUBE_NODES = MAX_NODES;

/** Nova's server tags: 60 characters each (nova/objects/tag.py, MAX_TAG_LENGTH), 50 at most (nova/objects/instance.py, MAX_TAG_COUNT). */
export const TAG_MAX = 60;
/** The tags a user may give: Nova's count less the cluster's own tag. */
export const MAX_USER_TAGS = 49;

/**
 * Glance's image name holds 255 characters (glance/api/v2/images.py, get_base_properties: `name`
 * has `maxLength: 255`); a longer name can match no image. An image ID passes this rule too: the
 * stack tells IDs from names by the UUID pattern (constructs/machine.ts, baseImageId).
 */
export const IMAGE_NAME_MAX = 255;

const IMAGE_NAME = all(NOT_BLANK, TRIMMED, characters({ max: IMAGE_NAME_MAX }));

/**
 * The oldest Kubernetes minor release the Salt states and the microk8s module support: the parsers
 * are tested on 1.28's output (docs/microk8s-module.md).
 */
export const MICROK8S_MIN_MINOR = 28;

/**
 * The channel a new cluster installs while microk8s_channel is unset: Salt's
 * microk8s:new_cluster_channel (salt/microk8s/defaults.yaml, which a test keeps equal). A running
 * cluster keeps the channel its nodes track, whatever this becomes (docs/decisions.md).
 */
export const NEW_CLUSTER_CHANNEL = "1.35/stable";

/** The risk levels of a snap channel (snapcraft.io/docs/channels). */
export const MICROK8S_RISKS = ["stable", "candidate", "beta", "edge"] as const;

/** A whole number from `min` (two digits) up, without a leading zero, as a regular expression. */
function atLeast(min: number): string {
  if (!Number.isInteger(min) || min < 10 || min > 89) throw new Error(`atLeast(${min}): two digits, below 90`);
  const [tens, ones] = [Math.floor(min / 10), min % 10];
  return `${tens}[${ones}-9]|[${tens + 1}-9][0-9]|[1-9][0-9][0-9]+`;
}

/**
 * A classic microk8s snap channel: `1.<minor>/<risk>`, minor MICROK8S_MIN_MINOR or later. The
 * `-strict` tracks are a strictly confined snap, which the states do not install.
 */
const MICROK8S_CHANNEL = pattern(`^1[.](${atLeast(MICROK8S_MIN_MINOR)})/(${MICROK8S_RISKS.join("|")})$`);

/**
 * The longest domain: every machine's FQDN (`<host>.<domain>`) is a DNS name, and every resource
 * name the stack derives from it (`<fqdn>-private` the longest) fits Nova's and Neutron's limit.
 */
export const DOMAIN_MAX = Math.min(
  DNS_NAME_MAX - LONGEST_HOST.length - 1,
  OPENSTACK_NAME_MAX - LONGEST_HOST.length - 1 - LONGEST_NAME_SUFFIX.length,
);

/** What an OpenSSH public key value must be (config/ssh-public-key.ts). */
const ONE_KEY =
  "single OpenSSH public key lines (ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa, sk-...) whose base64 blob decodes to a key of the type named";

/**
 * A Neutron resource's ID. Neutron makes every ID itself, with oslo.utils' uuidutils.generate_uuid()
 * (neutron_lib/db/model_base.py, HasId: `default=uuidutils.generate_uuid`), a lower-case UUID; the
 * API lets no one choose one (neutron_lib/api/definitions/network.py: `id` has
 * `allow_post: False`). So this admits every ID a network or router can have. Neutron's own
 * validator (`type:uuid`, uuidutils.is_uuid_like) reads upper case and missing hyphens as well,
 * but such a spelling would never equal the ID Neutron reports back, and a port's `network_id` that
 * differs from it would replace the port at every plan.
 */
const NEUTRON_ID = UUID;
const NEUTRON_ID_MUST_BE = (kind: string) =>
  `the ID of an existing Neutron ${kind}: a lower-case UUID such as 9d3f6c1e-2b7a-4c5d-8e9f-0a1b2c3d4e5f (openstack ${kind} show -f value -c id <name>)`;

function nonEmptyString(name: string): Rule<string> {
  return rule(name, all(NOT_BLANK, TRIMMED), "a non-empty string without leading or trailing spaces");
}

/**
 * Networks no subnet of the cluster may overlap: loopback, and link-local, where the metadata
 * service that cloud-init and the cloud controller manager read answers (169.254.169.254).
 */
const HOST_ONLY_NETWORKS = ["127.0.0.0/8", "169.254.0.0/16"];

function subnetCidr(name: string): Rule<string> {
  return rule(
    name,
    all(ipv4Network(SUBNET_PREFIX), outside(HOST_ONLY_NETWORKS)),
    `an IPv4 network address in CIDR form with a prefix from /${SUBNET_PREFIX.min} to /${SUBNET_PREFIX.max}, such as 10.0.0.0/16, ` +
      `overlapping neither ${HOST_ONLY_NETWORKS[0]} (loopback) nor ${HOST_ONLY_NETWORKS[1]} (link-local: the metadata service)`,
  );
}

function cidrList(name: string, minItems: number): Rule<string[]> {
  return rule(
    name,
    all(items({ min: minItems }), each("c", ipv4Network({ min: 0, max: 32 }))),
    `a list of${minItems > 0 ? ` at least ${minItems}` : ""} IPv4 networks in CIDR form, such as ["203.0.113.0/24"]`,
  );
}

/** A boot volume type only with a boot volume. */
const BOOT_VOLUME_TYPE_WITH_SIZE: Check<{ readonly boot_volume_type: string; readonly boot_volume_size: number }> = {
  test: (pool) => pool.boot_volume_type === "" || pool.boot_volume_size > 0,
  condition: (ref) => `${ref}.boot_volume_type == "" || ${ref}.boot_volume_size > 0`,
};

/**
 * Each role's ingress rules and security groups (config/access.ts), the three roles' in one
 * pattern; spelled out, so that VARIABLES keeps their names' literal types.
 */
function accessVariables() {
  const ingress = (role: keyof typeof ACCESS_ROLE_MACHINES) => ({
    type: "list(string)" as const,
    description:
      `Ingress rules for ${ACCESS_ROLE_MACHINES[role]}, besides the stack's own: each "tcp/<port> from <network>", ` +
      '"udp/<first>-<last> from <network>" or "icmp from <network>". They go into a security group of their own, on every port of those machines, made only when there are rules.',
    default: [] as string[],
    rules: [ingressRules(`${role}_ingress_rules`)],
  });
  const groups = (role: keyof typeof ACCESS_ROLE_MACHINES) => ({
    type: "list(string)" as const,
    description:
      `Security groups the project already has, by name or ID, attached to every port of ${ACCESS_ROLE_MACHINES[role]} beside the stack's own. ` +
      "Read at plan time: a group the project cannot see, or a name two groups share, fails the plan. The stack never changes them.",
    default: [] as string[],
    rules: [securityGroupRefs(`${role}_security_groups`)],
  });
  return {
    bastion_ingress_rules: ingress("bastion") satisfies VariableSpec<string[]>,
    control_plane_ingress_rules: ingress("control_plane") satisfies VariableSpec<string[]>,
    worker_ingress_rules: ingress("worker") satisfies VariableSpec<string[]>,
    bastion_security_groups: groups("bastion") satisfies VariableSpec<string[]>,
    control_plane_security_groups: groups("control_plane") satisfies VariableSpec<string[]>,
    worker_security_groups: groups("worker") satisfies VariableSpec<string[]>,
  };
}

/** A floating IP the project holds, for `what`, by address (constructs/floating-ips.ts), or "" to allocate one. */
function givenFloatingIp(name: string, what: string) {
  return {
    type: "string" as const,
    description:
      `A floating IP this project already holds, by address, for ${what}, instead of one allocated for the cluster: ` +
      "its address, and the DNS records that name it, survive a rebuild or a redeploy, and the stack never releases it. " +
      "It must be on external_network_name's network and free, or already this deployment's; the plan refuses it otherwise. " +
      "Empty: allocate one, released with the cluster.",
    default: "" as string,
    rules: [
      rule(
        name,
        allowing("", ipv4Address()),
        "empty or a floating IP's IPv4 address, such as 203.0.113.10 (openstack floating ip list): the OpenStack provider looks floating IPs up by address, not by ID",
      ),
    ],
  } satisfies VariableSpec<string>;
}

export const VARIABLES = {
  num_kube_nodes: {
    type: "number",
    description: "Number of Kubernetes nodes, the master included: 3 gives 1 master and 2 workers.",
    default: 3,
    rules: [
      rule(
        "num_kube_nodes",
        wholeNumber({ min: 1, max: MAX_KUBE_NODES }),
        `a whole number from 1 to ${MAX_KUBE_NODES} (the master counts, and so do node_pools' workers: ${MAX_NODES} nodes in all at most)`,
      ),
    ],
  } satisfies VariableSpec<number>,
  kube_node_flavor: {
    type: "string",
    description: "OpenStack flavor of the Kubernetes nodes (see `openstack flavor list`).",
    default: "m1.large",
    rules: [nonEmptyString("kube_node_flavor")],
  } satisfies VariableSpec<string>,
  kube_node_availability_zones: {
    type: "list(string)",
    description:
      "Availability zones the default pool's nodes are spread over, round-robin from the master (so the 3 control-plane nodes take 3 zones). Empty: the cloud's default zone. A node's zone is fixed at creation: a changed list replaces the nodes whose zone changes.",
    default: [],
    rules: [rule("kube_node_availability_zones", ZONES, ZONES_MUST_BE)],
  } satisfies VariableSpec<string[]>,
  kube_node_boot_volume_size: {
    type: "number",
    description:
      "Size in GiB of a Cinder boot volume for each node of the default pool, made from the image and deleted with the node. 0 boots from the image on the hypervisor's disk (a flavor with no disk needs a volume).",
    default: 0,
    rules: [rule("kube_node_boot_volume_size", BOOT_VOLUME_SIZE, BOOT_VOLUME_SIZE_MUST_BE)],
  } satisfies VariableSpec<number>,
  kube_node_boot_volume_type: {
    type: "string",
    description: "Cinder volume type of the default pool's boot volumes. Empty: the cloud's default type.",
    default: "",
    rules: [rule("kube_node_boot_volume_type", VOLUME_TYPE, VOLUME_TYPE_MUST_BE)],
  } satisfies VariableSpec<string>,
  kube_node_labels: {
    type: "map(string)",
    description: `Kubernetes labels Salt gives every node of the default pool (besides ${"kube-on-os/pool"}=default), when it joins and at every orchestration.`,
    default: {},
    rules: [rule("kube_node_labels", LABELS, LABELS_MUST_BE)],
  } satisfies VariableSpec<Record<string, string>>,
  kube_node_taints: {
    type: "list(string)",
    description:
      "Kubernetes taints Salt gives every node of the default pool (key=value:Effect or key:Effect). The control plane is in this pool: a NoSchedule taint keeps workloads off it.",
    default: [],
    rules: [rule("kube_node_taints", TAINTS, TAINTS_MUST_BE)],
  } satisfies VariableSpec<string[]>,
  control_plane_flavor: {
    type: "string",
    description:
      "OpenStack flavor of the control plane: the three dqlite voters, the master and the default pool's first two workers. Unset (null): kube_node_flavor. A node keeps the flavor it was created with: a new one reaches new and replaced nodes (npm run roll), and the plan warns about the nodes built otherwise.",
    default: undefined,
    rules: [
      rule(
        "control_plane_flavor",
        allowing(null, all(NOT_BLANK, TRIMMED)),
        "null (kube_node_flavor) or a flavor name without leading or trailing spaces",
      ),
    ],
  } satisfies VariableSpec<string>,
  control_plane_image: {
    type: "string",
    description:
      "Image the control plane boots from, an image ID or a name looked up at plan time as base_image is. Unset (null): base_image. A node keeps the image it was created with.",
    default: undefined,
    rules: [
      rule(
        "control_plane_image",
        allowing(null, IMAGE_NAME),
        `null (base_image) or an image ID or name of 1 to ${IMAGE_NAME_MAX} characters without leading or trailing spaces`,
      ),
    ],
  } satisfies VariableSpec<string>,
  control_plane_boot_volume_size: {
    type: "number",
    description:
      "Size in GiB of the control plane's Cinder boot volumes, 0 for none (the hypervisor's disk). Unset (null): kube_node_boot_volume_size. A node keeps the boot disk it was created with.",
    default: undefined,
    rules: [
      rule(
        "control_plane_boot_volume_size",
        allowing(null, BOOT_VOLUME_SIZE),
        `null (kube_node_boot_volume_size) or ${BOOT_VOLUME_SIZE_MUST_BE}`,
      ),
    ],
  } satisfies VariableSpec<number>,
  control_plane_boot_volume_type: {
    type: "string",
    description:
      "Cinder volume type of the control plane's boot volumes, empty for the cloud's default. Unset (null): kube_node_boot_volume_type.",
    default: undefined,
    rules: [
      rule("control_plane_boot_volume_type", allowing(null, VOLUME_TYPE), `null (kube_node_boot_volume_type) or ${VOLUME_TYPE_MUST_BE}`),
    ],
  } satisfies VariableSpec<string>,
  node_pools: {
    type: NODE_POOLS_TYPE,
    description:
      "Worker pools besides the default pool, by name: { <name> = { count, flavor, image, availability_zones, boot_volume_size, boot_volume_type, labels, taints } }. Only count is required; flavor and image default to kube_node_flavor and base_image, the others to the default pool's empty defaults. Pool workers are k8s-<name>-<n>.<domain>, on the private network only (addresses from its DHCP range), joined as Kubernetes workers.",
    default: {},
    rules: [
      eachEntry("node_pools", "", onKey(POOL_NAME), POOL_NAME_MUST_BE),
      eachEntry(
        "node_pools",
        ".count",
        onValue(attribute("count", wholeNumber({ min: 0, max: MAX_POOL_NODES }))),
        `a whole number from 0 to ${MAX_POOL_NODES}`,
      ),
      eachEntry(
        "node_pools",
        ".flavor",
        onValue(attribute("flavor", allowing(null, all(NOT_BLANK, TRIMMED)))),
        "null (kube_node_flavor) or a flavor name without leading or trailing spaces",
      ),
      eachEntry(
        "node_pools",
        ".image",
        onValue(attribute("image", allowing(null, IMAGE_NAME))),
        `null (base_image) or an image ID or name of 1 to ${IMAGE_NAME_MAX} characters without leading or trailing spaces`,
      ),
      eachEntry("node_pools", ".availability_zones", onValue(attribute("availability_zones", ZONES)), ZONES_MUST_BE),
      eachEntry("node_pools", ".boot_volume_size", onValue(attribute("boot_volume_size", BOOT_VOLUME_SIZE)), BOOT_VOLUME_SIZE_MUST_BE),
      eachEntry("node_pools", ".boot_volume_type", onValue(attribute("boot_volume_type", VOLUME_TYPE)), VOLUME_TYPE_MUST_BE),
      eachEntry(
        "node_pools",
        ".boot_volume_type",
        onValue(BOOT_VOLUME_TYPE_WITH_SIZE),
        "empty unless boot_volume_size is above 0 (a volume type needs a boot volume)",
      ),
      eachEntry("node_pools", ".labels", onValue(attribute("labels", LABELS)), LABELS_MUST_BE),
      eachEntry("node_pools", ".taints", onValue(attribute("taints", TAINTS)), TAINTS_MUST_BE),
    ],
  } satisfies VariableSpec<NodePools>,
  tags: {
    type: "list(string)",
    description: `Tags on every resource of the stack's that takes them (servers, networks, subnets, ports, routers, floating IPs, security groups, the API load balancer's parts), besides ${"`kube-on-os:<deploy_domain_name>`"}, which names the cluster (its first ${TAG_MAX} characters). Changing them updates those resources in place; Cinder volumes, keypairs, server groups and security group rules take no tags.`,
    default: [],
    rules: [
      rule(
        "tags",
        all(items({ max: MAX_USER_TAGS }), each("t", all(NOT_BLANK, TRIMMED, characters({ max: TAG_MAX }), pattern("^[^,/]*$"))), DISTINCT),
        `a list of at most ${MAX_USER_TAGS} distinct tags (Nova's ${MAX_USER_TAGS + 1} less the cluster's), each 1 to ${TAG_MAX} characters without ',' or '/' (Nova's server tags) and without leading or trailing spaces`,
      ),
    ],
  } satisfies VariableSpec<string[]>,
  server_metadata: {
    type: "map(string)",
    description:
      "Metadata on every server (Nova's key-value properties, which billing and inventory tools read). Changing it updates the servers in place. The project's metadata_items quota (128 by default) bounds the number of entries: the plan checks it.",
    default: {},
    rules: [
      rule(
        "server_metadata",
        all(eachKey("key", pattern("^[a-zA-Z0-9_:. -]{1,255}$")), eachValue("value", characters({ max: 255 }))),
        "a map whose keys are 1 to 255 characters of a-z, A-Z, 0-9, '-', '_', ':', '.' and space, and whose values have at most 255 characters (Nova's server metadata)",
      ),
    ],
  } satisfies VariableSpec<Record<string, string>>,
  external_network_name: {
    type: "string",
    description: "Name of the external (provider) network the router uplinks to and floating IPs come from.",
    default: "vlan1066",
    rules: [nonEmptyString("external_network_name")],
  } satisfies VariableSpec<string>,
  router_id: {
    type: "string",
    description:
      "ID of an existing Neutron router to attach the public network to, instead of creating <domain>-router. Its external gateway must be on external_network_name's network. Empty: create one.",
    default: "",
    rules: [rule("router_id", allowing("", NEUTRON_ID), `empty or ${NEUTRON_ID_MUST_BE("router")}`)],
  } satisfies VariableSpec<string>,
  public_network_id: {
    type: "string",
    description:
      "ID of an existing Neutron network to use as the public network, instead of creating one with its router: its subnet whose CIDR is public_network_cidr takes the bastion's and the Kubernetes master's public ports and the API load balancer's VIP, and must already be routed to external_network_name. Empty: create the public network, its subnet and a router.",
    default: "",
    rules: [rule("public_network_id", allowing("", NEUTRON_ID), `empty or ${NEUTRON_ID_MUST_BE("network")}`)],
  } satisfies VariableSpec<string>,
  private_network_id: {
    type: "string",
    description:
      "ID of an existing Neutron network of this project to use as the private network, instead of creating one: its subnet whose CIDR is private_network_cidr takes every machine's private port, and must fit the layout, checked at plan time: DHCP on, the bastion's private address (host 1) its gateway, and its allocation pools above the fixed addresses (the lower half is theirs). The stack never changes or deletes it. Empty: create the private network and its subnet.",
    default: "",
    rules: [rule("private_network_id", allowing("", NEUTRON_ID), `empty or ${NEUTRON_ID_MUST_BE("network")}`)],
  } satisfies VariableSpec<string>,
  bastion_floating_ip: givenFloatingIp("bastion_floating_ip", "the bastion's public port (the SSH jump host, ssh_config's HostName)"),
  master_floating_ip: givenFloatingIp(
    "master_floating_ip",
    "the Kubernetes master's public port (the API on 16443 without a load balancer, ingress)",
  ),
  api_floating_ip: givenFloatingIp(
    "api_floating_ip",
    "the API load balancer's VIP (the kubeconfig's server); it needs one (api_load_balancer on, or auto on a cloud with Octavia)",
  ),
  base_image: {
    type: "string",
    description:
      "Image every machine boots from: an image ID (a lower-case UUID, used as is) or an image name, looked up in Glance at plan time (the most recent image of that name). Machines keep the image they were created with: a new image applies to new or replaced machines.",
    default: "Ubuntu 24.04",
    rules: [
      rule(
        "base_image",
        IMAGE_NAME,
        `an image ID (a lower-case UUID such as ad156007-77bb-4e32-ac97-7f8340cab73d) or an image name of 1 to ${IMAGE_NAME_MAX} characters without leading or trailing spaces, such as "Ubuntu 24.04"`,
      ),
    ],
  } satisfies VariableSpec<string>,
  deploy_domain_name: {
    type: "string",
    description: "DNS domain appended to every machine name: the Salt master is salt.<domain>.",
    default: "kube-on-os",
    rules: [
      rule(
        "deploy_domain_name",
        all(characters({ max: DOMAIN_MAX }), DNS_NAME),
        `a lower-case DNS name of at most ${DOMAIN_MAX} characters (so every machine's FQDN and resource name fits): labels of a-z, 0-9 and '-', separated by dots, no spaces`,
      ),
    ],
  } satisfies VariableSpec<string>,
  deploy_user: {
    type: "string",
    description: "The image's default user, used by the provisioners to log in.",
    default: "ubuntu",
    rules: [rule("deploy_user", ACCOUNT_NAME, "a Linux user name other than root (lower case, starting with a letter or '_')")],
  } satisfies VariableSpec<string>,
  set_root_password: {
    type: "bool",
    description:
      "Set root's console password on every machine, from root_password_hash (by cloud-init at creation, and by the provisioning chain through Salt whenever it changes) or root_password (by the provisioning chain, through Salt); for debugging only, SSH root login stays disabled.",
    default: false,
    rules: [],
    planTimeRules: [
      {
        condition: "!var.set_root_password || var.root_password != null || var.root_password_hash != null",
        mustBe: "false unless root_password or root_password_hash is given",
      },
    ],
  } satisfies VariableSpec<boolean>,
  root_password: {
    type: "string",
    description:
      "Root console password set when set_root_password is true, on every machine through Salt, as a SHA-512 crypt hash, each time the orchestration runs. Ephemeral: given at plan and apply, never stored in the synthesized JSON, a plan or the state.",
    default: undefined,
    sensitive: true,
    ephemeral: true,
    rules: [rule("root_password", allowing(null, characters({ min: 12 })), "at least 12 characters long")],
  } satisfies VariableSpec<string>,
  root_password_hash: {
    type: "string",
    description:
      "Recommended form of the root console password: a crypt(3) hash (e.g. from `openssl passwd -6`), set when set_root_password is true: through cloud-init on a new machine, and through Salt on every machine each time it changes (root_password, when given too, wins).",
    default: undefined,
    sensitive: true,
    rules: [
      rule(
        "root_password_hash",
        allowing(null, CRYPT_HASH),
        "a crypt(3) SHA-512, SHA-256, yescrypt or bcrypt hash such as $6$salt$... (or unset)",
      ),
    ],
  } satisfies VariableSpec<string>,
  users: {
    type: "list(object({ username = string, ssh_public_key = string }))",
    description: "People who get an account with SSH access on every machine (created by Salt's core.users state).",
    default: [],
    concealed: true,
    rules: [
      rule(
        "users",
        each("u", attribute("username", PERSON_NAME)),
        "a list whose usernames are Linux user names (lower case, starting with a letter or '_') and no system account such as root or sshd",
      ),
      rule("users", each("u", attribute("ssh_public_key", SSH_PUBLIC_KEY)), `a list whose ssh_public_key values are ${ONE_KEY}`),
      rule("users", distinctBy("u", "username"), "a list without duplicate usernames"),
    ],
  } satisfies VariableSpec<UserAccount[]>,
  deploy_ssh_public_key: {
    type: "string",
    description:
      "OpenSSH public key installed for deploy_user on every machine, as a new Nova keypair. Empty: use keypair_name, or no keypair.",
    default: "",
    concealed: true,
    rules: [rule("deploy_ssh_public_key", allowing("", SSH_PUBLIC_KEY), `empty or ${ONE_KEY}`)],
  } satisfies VariableSpec<string>,
  keypair_name: {
    type: "string",
    description:
      "Name of an existing Nova keypair for deploy_user, used when deploy_ssh_public_key is empty. The plan reads it, and fails naming it when the project has no such keypair.",
    default: "",
    rules: [
      rule(
        "keypair_name",
        // nova/api/validation/parameter_types.py keypair_name_special_chars_v292: the widest set
        // Nova ever accepted in a keypair name.
        allowing("", all(TRIMMED, pattern("^[-_@. a-zA-Z0-9]{1,255}$"))),
        "empty, or a Nova keypair name: 1 to 255 characters of a-z, A-Z, 0-9, space, '_', '-', '@' and '.', without leading or trailing spaces",
      ),
    ],
  } satisfies VariableSpec<string>,
  bastion_flavor: {
    type: "string",
    description: "OpenStack flavor of the bastion.",
    default: "m1.small",
    rules: [nonEmptyString("bastion_flavor")],
  } satisfies VariableSpec<string>,
  salt_master_flavor: {
    type: "string",
    description: "OpenStack flavor of the Salt master.",
    default: "m1.medium",
    rules: [nonEmptyString("salt_master_flavor")],
  } satisfies VariableSpec<string>,
  salt_volume_size: {
    type: "number",
    description: "Size in GiB of the Salt master's persistent volume (/srv/salt and the Salt PKI).",
    default: 10,
    rules: [
      rule("salt_volume_size", wholeNumber(SALT_VOLUME_GIB), `a whole number of GiB from ${SALT_VOLUME_GIB.min} to ${SALT_VOLUME_GIB.max}`),
    ],
  } satisfies VariableSpec<number>,
  kube_server_group_policy: {
    type: "string",
    description: "Nova server group policy that spreads the Kubernetes nodes, or none.",
    default: "soft-anti-affinity",
    rules: [rule("kube_server_group_policy", oneOf(SERVER_GROUP_POLICIES), `one of ${SERVER_GROUP_POLICIES.join(", ")}`)],
  } satisfies VariableSpec<string>,
  public_network_cidr: {
    type: "string",
    description: "CIDR of the public network (router, bastion, Kubernetes master). Static hosts use its lower half, DHCP the upper half.",
    default: "10.0.0.0/16",
    rules: [subnetCidr("public_network_cidr")],
  } satisfies VariableSpec<string>,
  private_network_cidr: {
    type: "string",
    description:
      "CIDR of the private network (all machines; the bastion is its gateway). Static hosts use its lower half, DHCP the upper half.",
    default: "10.1.0.0/16",
    rules: [subnetCidr("private_network_cidr")],
  } satisfies VariableSpec<string>,
  pod_cidr: {
    type: "string",
    description: "Kubernetes pod network. Must not overlap the public or private network (microk8s' own default, 10.1.0.0/16, does).",
    default: "10.244.0.0/16",
    rules: [subnetCidr("pod_cidr")],
  } satisfies VariableSpec<string>,
  service_cidr: {
    type: "string",
    description: "Kubernetes service network. Must not overlap the other networks.",
    default: "10.152.183.0/24",
    rules: [subnetCidr("service_cidr")],
  } satisfies VariableSpec<string>,
  microk8s_channel: {
    type: "string",
    description: `Snap channel microk8s runs from on every Kubernetes node: <track>/<risk>, the track a Kubernetes minor release (1.${MICROK8S_MIN_MINOR} or later). Unset (null), every node keeps the channel the cluster's nodes track, and a new cluster installs ${NEW_CLUSTER_CHANNEL}. Set above the nodes' minor, the next deploy rolls them up one minor at a time, one node at a time.`,
    default: undefined,
    rules: [
      rule(
        "microk8s_channel",
        allowing(null, MICROK8S_CHANNEL),
        `a classic microk8s channel <track>/<risk>: track 1.${MICROK8S_MIN_MINOR} or later (1.<minor>), risk ${MICROK8S_RISKS.join(", ")}, such as 1.35/stable (or unset)`,
      ),
    ],
  } satisfies VariableSpec<string>,
  reboot_for_updates: {
    type: "bool",
    description:
      "Reboot the Kubernetes nodes whose package updates need it (/run/reboot-required), one at a time (drain, reboot, Ready, uncordon), after each orchestration. false names them in the apply's output and reboots none.",
    default: false,
    rules: [],
  } satisfies VariableSpec<boolean>,
  api_load_balancer: {
    type: "string",
    description:
      "Put the Kubernetes API behind an Octavia load balancer over the control-plane nodes, with its own floating IP (the kubeconfig's server): auto when the cloud's catalog lists Octavia, on (the plan fails without it), or off (the master's floating IP only).",
    default: "auto",
    rules: [rule("api_load_balancer", oneOf(API_LOAD_BALANCER_MODES), `one of ${API_LOAD_BALANCER_MODES.join(", ")}`)],
  } satisfies VariableSpec<string>,
  cloud_integration: {
    type: "bool",
    description:
      "Deploy the OpenStack cloud controller manager and the Cinder CSI driver (a default Cinder StorageClass, LoadBalancer Services on Octavia, nodes' providerIDs) with an application credential the stack creates for the cluster. The deploying credential must be allowed to create one: a password, or an unrestricted application credential. false leaves the cluster without cloud integration.",
    default: true,
    rules: [],
  } satisfies VariableSpec<boolean>,
  openstack_ca_certificate: {
    type: "string",
    description:
      "PEM certificates of the private CA behind the cloud's API endpoints (Keystone's above all), for the cloud controller manager and the Cinder CSI driver: Salt adds them to the cloud-config Secret as ca.crt, which cloud.conf's [Global] ca-file names. Empty: the CAs they trust already (the nodes' /etc/ssl/certs for the cloud controller manager, its image's own for Cinder CSI). The OpenStack provider of OpenTofu or Terraform reads its CA from OS_CACERT or clouds.yaml's cacert instead (docs/deploying.md).",
    default: "",
    // A private key pasted by mistake must not be printed; nor a whole bundle in a one-line error.
    concealed: true,
    rules: [
      rule(
        "openstack_ca_certificate",
        allowing("", PEM_CERTIFICATES),
        "empty or PEM certificates: one or more blocks of -----BEGIN CERTIFICATE-----, base64 lines and -----END CERTIFICATE-----, separated by line breaks (LF), and nothing else",
      ),
    ],
  } satisfies VariableSpec<string>,
  lb_provider: {
    type: "string",
    description:
      "Octavia provider of LoadBalancer Services' load balancers (cloud.conf's [LoadBalancer] lb-provider), such as ovn where Octavia offers no amphora (`openstack loadbalancer provider list`). Empty: the cloud controller manager's default, amphora. The Kubernetes API's own load balancer (api_load_balancer) keeps the cloud's default provider.",
    default: "",
    rules: [
      rule(
        "lb_provider",
        allowing("", LB_PROVIDER),
        "empty or an Octavia provider name of 1 to 64 letters, digits, '_', '.' and '-', such as amphora or ovn",
      ),
    ],
  } satisfies VariableSpec<string>,
  lb_method: {
    type: "string",
    description:
      "Pool algorithm of LoadBalancer Services' load balancers (cloud.conf's [LoadBalancer] lb-method); a Service's annotation loadbalancer.openstack.org/lb-method overrides it. Empty: the cloud controller manager's default, ROUND_ROBIN. OVN's provider knows SOURCE_IP_PORT alone.",
    default: "",
    rules: [rule("lb_method", allowing("", oneOf(LB_METHODS)), `empty or one of ${LB_METHODS.join(", ")}`)],
  } satisfies VariableSpec<string>,
  ssh_allowed_cidrs: {
    type: "list(string)",
    description: "Networks allowed to reach the bastion's SSH port. The provisioners connect from here too.",
    default: ["0.0.0.0/0"],
    rules: [cidrList("ssh_allowed_cidrs", 1)],
  } satisfies VariableSpec<string[]>,
  api_allowed_cidrs: {
    type: "list(string)",
    description: "Networks allowed to reach the Kubernetes API (port 16443) on the master and on the API load balancer. Empty closes it.",
    default: ["0.0.0.0/0"],
    rules: [cidrList("api_allowed_cidrs", 0)],
  } satisfies VariableSpec<string[]>,
  ...accessVariables(),
  dns_nameservers: {
    type: "list(string)",
    description: "DNS servers handed out by DHCP on both networks.",
    default: ["1.1.1.1", "1.0.0.1"],
    rules: [
      rule(
        "dns_nameservers",
        // Neutron refuses a repeated one (neutron-lib validate_nameservers: "Duplicate
        // nameserver"); 0.0.0.0 is no server a resolver can ask.
        all(items(NAMESERVERS), each("a", all(ipv4Address(), isNot("0.0.0.0"))), DISTINCT),
        `a list of ${NAMESERVERS.min} to ${NAMESERVERS.max} distinct IPv4 addresses other than 0.0.0.0`,
      ),
    ],
  } satisfies VariableSpec<string[]>,
  run_provisioners: {
    type: "bool",
    description:
      "Run the provisioning chain (wait for cloud-init, sync Salt, accept minion keys, orchestrate) through the bastion. false creates the machines only (tests against an API double, or configuring them by other means).",
    default: true,
    rules: [],
  } satisfies VariableSpec<boolean>,
  check_quotas: {
    type: "bool",
    description:
      "Read the project's Nova, Cinder and Neutron quotas at plan time and stop the plan if a limit is smaller than the deployment needs. false skips it (a cloud whose policy hides quotas from project members).",
    default: true,
    rules: [],
  } satisfies VariableSpec<boolean>,
  ssh_host_keys: {
    type: "map(string)",
    description:
      "Known SSH host keys (or signing CA keys) of the hosts the provisioners log in to, by role: bastion, salt_master. A role without a key is not checked.",
    default: {},
    concealed: true,
    rules: [
      rule("ssh_host_keys", eachKey("role", oneOf(SSH_HOST_ROLES)), `a map whose keys are ${SSH_HOST_ROLES.join(" or ")}`),
      rule("ssh_host_keys", eachValue("key", SSH_PUBLIC_KEY), `a map whose values are ${ONE_KEY}`),
    ],
  } satisfies VariableSpec<Record<string, string>>,
};

export type VariableName = keyof typeof VARIABLES;

/** The variables, in the table's order (which is the order of the JSON's variable blocks). */
// Object.keys() is typed string[] whatever the object.
export const VARIABLE_NAMES = Object.keys(VARIABLES) as VariableName[];

/** The sensitive variables: validated when given, never recorded, absent from KubeOnOsConfig. */
export type SecretName = { [K in VariableName]: (typeof VARIABLES)[K] extends { readonly sensitive: true } ? K : never }[VariableName];

/** The TypeScript type of a variable's values. */
export type ValueOf<K extends VariableName> = TerraformTypes[(typeof VARIABLES)[K]["type"]];

/** Validated parameters. The secrets are deliberately absent: they exist at plan time only. */
export type KubeOnOsConfig = { readonly [K in Exclude<VariableName, SecretName>]: ValueOf<K> };

/** A rule over several parameters, at synth over the validated values. */
export type ConfigRule = CrossRule<KubeOnOsConfig>;

/** Every pool's workers together; undefined while a count is not a number yet (its own rule says so). */
function poolWorkers(config: KubeOnOsConfig): number | undefined {
  const counts = Object.values(config.node_pools).map((pool) => pool?.count);
  if (counts.some((count) => typeof count !== "number")) return undefined;
  return (counts as number[]).reduce((sum, count) => sum + count, 0);
}

/** `name`'s floating IP is not `other`'s: one address cannot be associated with two ports. */
function distinctFloatingIp(
  name: "master_floating_ip" | "api_floating_ip",
  other: "bastion_floating_ip" | "master_floating_ip",
): ConfigRule {
  return {
    test: (config) => config[name] === "" || config[name] !== config[other],
    condition: `var.${name} == "" || var.${name} != var.${other}`,
    mustBe: `another address than ${other}'s: one floating IP reaches one port`,
  };
}

/**
 * The rules that read several parameters, by the variable whose `validation` block holds each
 * and whose name the message gives.
 */
export const CROSS_RULES: { readonly [K in VariableName]?: readonly ConfigRule[] } = {
  keypair_name: [
    {
      test: (config) => config.keypair_name === "" || config.deploy_ssh_public_key === "",
      condition: 'var.keypair_name == "" || var.deploy_ssh_public_key == ""',
      mustBe: "empty when deploy_ssh_public_key is set (the stack would create one keypair and use another): set one or the other",
    },
  ],
  router_id: [
    {
      test: (config) => config.router_id === "" || config.public_network_id === "",
      condition: 'var.router_id == "" || var.public_network_id == ""',
      mustBe:
        "empty when public_network_id is set: an existing public network is already routed, and the stack attaches no router to a network it does not own (docs/decisions.md)",
    },
  ],
  private_network_id: [
    {
      test: (config) => config.private_network_id === "" || config.private_network_id !== config.public_network_id,
      condition: 'var.private_network_id == "" || var.private_network_id != var.public_network_id',
      mustBe: "another network than public_network_id: the private network is behind the bastion, the public one routed",
    },
  ],
  master_floating_ip: [distinctFloatingIp("master_floating_ip", "bastion_floating_ip")],
  api_floating_ip: [
    distinctFloatingIp("api_floating_ip", "bastion_floating_ip"),
    distinctFloatingIp("api_floating_ip", "master_floating_ip"),
    {
      test: (config) => config.api_floating_ip === "" || config.api_load_balancer !== "off",
      condition: 'var.api_floating_ip == "" || var.api_load_balancer != "off"',
      mustBe: 'empty when api_load_balancer is "off": there is no API load balancer to give it to',
    },
  ],
  private_network_cidr: [disjointFrom("private_network_cidr", ["public_network_cidr"])],
  pod_cidr: [disjointFrom("pod_cidr", ["public_network_cidr", "private_network_cidr"])],
  service_cidr: [disjointFrom("service_cidr", ["public_network_cidr", "private_network_cidr", "pod_cidr"])],
  num_kube_nodes: [
    {
      // Workers take private host numbers firstWorkerPrivate and up, below the DHCP range.
      test: (config) => {
        if (typeof parseIpv4Network(config.private_network_cidr) === "string") return true;
        return HOST_NUMBERS.firstWorkerPrivate + config.num_kube_nodes - 2 < firstDhcpHost(config.private_network_cidr, IN_NUMBERS);
      },
      condition:
        `try(${HOST_NUMBERS.firstWorkerPrivate} + var.num_kube_nodes - 2 < ` +
        `${firstDhcpHost("var.private_network_cidr", IN_HCL)}, true)`,
      mustBe:
        `small enough that every worker's fixed address (private host numbers ${HOST_NUMBERS.firstWorkerPrivate} and up) lies in the ` +
        "lower half of private_network_cidr, below the DHCP range: use a larger private network or fewer nodes",
    },
  ],
  kube_node_boot_volume_type: [
    {
      test: (config) => config.kube_node_boot_volume_type === "" || config.kube_node_boot_volume_size > 0,
      condition: 'var.kube_node_boot_volume_type == "" || var.kube_node_boot_volume_size > 0',
      mustBe: "empty unless kube_node_boot_volume_size is above 0 (a volume type needs a boot volume)",
    },
  ],
  control_plane_boot_volume_type: [
    {
      test: (config) =>
        config.control_plane_boot_volume_type == null ||
        config.control_plane_boot_volume_type === "" ||
        (config.control_plane_boot_volume_size ?? config.kube_node_boot_volume_size) > 0,
      condition:
        'var.control_plane_boot_volume_type == null || var.control_plane_boot_volume_type == "" || ' +
        "(var.control_plane_boot_volume_size == null ? var.kube_node_boot_volume_size : var.control_plane_boot_volume_size) > 0",
      mustBe:
        "null or empty unless the control plane has a boot volume (control_plane_boot_volume_size, or kube_node_boot_volume_size when it is null, above 0): a volume type needs a boot volume",
    },
  ],
  node_pools: [
    {
      test: (config) => {
        const workers = poolWorkers(config);
        return workers === undefined || config.num_kube_nodes + workers <= MAX_NODES;
      },
      condition: `try(var.num_kube_nodes + sum(concat([0], [for pool in values(var.node_pools) : pool.count])) <= ${MAX_NODES}, true)`,
      mustBe: `small enough that num_kube_nodes and every pool's workers add up to ${MAX_NODES} nodes at most: use fewer or smaller pools`,
    },
    {
      // Pool workers take DHCP addresses.
      test: (config) => {
        const workers = poolWorkers(config);
        if (typeof parseIpv4Network(config.private_network_cidr) === "string" || workers === undefined) return true;
        return workers + DHCP_RESERVE <= dhcpRangeSize(config.private_network_cidr, IN_NUMBERS);
      },
      condition:
        `try(sum(concat([0], [for pool in values(var.node_pools) : pool.count])) + ${DHCP_RESERVE} <= ` +
        `${dhcpRangeSize("var.private_network_cidr", IN_HCL)}, true)`,
      mustBe:
        `small enough that its workers fit the DHCP range of private_network_cidr (its upper half, where they take their ` +
        `addresses) with ${DHCP_RESERVE} addresses to spare: use a larger private network or fewer pool workers`,
    },
  ],
  lb_method: [
    {
      test: (config) => config.lb_provider !== OVN_LB_PROVIDER || config.lb_method === "SOURCE_IP_PORT",
      condition: `var.lb_provider != "${OVN_LB_PROVIDER}" || var.lb_method == "SOURCE_IP_PORT"`,
      mustBe: `SOURCE_IP_PORT when lb_provider is ${OVN_LB_PROVIDER}: OVN's load balancers know no other algorithm, and the default (ROUND_ROBIN) fails every LoadBalancer Service`,
    },
  ],
  users: [
    {
      test: (config) => config.users.every((user) => user.username !== config.deploy_user),
      condition: "alltrue([for u in var.users : u.username != var.deploy_user])",
      mustBe: "a list without deploy_user, whose account the image and the provisioners own",
    },
  ],
};
