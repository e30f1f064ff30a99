/**
 * The cluster's hosts as plain facts: their names and their fixed host numbers in each network.
 * constructs/cluster-layout.ts turns them into every machine's name, FQDN and address
 * (docs/architecture.md, "Addresses"); config/ reads them for its rules.
 */

/** Fixed host numbers within each network, by role: the machine's address is cidrhost(<network>, n). */
export const HOST_NUMBERS = {
  publicGateway: 1,
  bastionPublic: 10,
  kubeMasterPublic: 11,
  bastionPrivate: 1,
  saltMasterPrivate: 5,
  kubeMasterPrivate: 10,
  firstWorkerPrivate: 100,
} as const;

/**
 * Host names: the first label of each machine's FQDN. Worker n of the default pool is
 * `<worker>-<n>`, worker n of pool p is `<poolWorker>-<p>-<n>`: every Kubernetes node's name starts
 * with `k8s-`, which the Salt and pillar top files match.
 */
export const HOST_NAMES = {
  bastion: "bastion",
  saltMaster: "salt",
  kubeMaster: "k8s-master",
  worker: "k8s-worker",
  poolWorker: "k8s",
} as const;

/**
 * The machines besides the workers, in the order every per-machine list takes (the minion ids,
 * their machines' ids, the hosts behind the bastion): the Salt master, the bastion, the
 * Kubernetes master. The workers follow them, the default pool's, then the pools'.
 */
export const FIXED_MACHINES = ["saltMaster", "bastion", "kubeMaster"] as const;

export type FixedMachine = (typeof FIXED_MACHINES)[number];

/** The fixed machines with a port on the public network as well as on the private one. */
export const DUAL_HOMED: readonly FixedMachine[] = ["bastion", "kubeMaster"];
