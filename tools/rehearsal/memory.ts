/**
 * How much memory a rehearsal needs (issue 38): each host's memory once the first apply is done,
 * by role, as the rehearsal measured it (Cloud.memoryMiB), with room above the largest reading;
 * and what the engine itself holds beside them (the OpenStack double, OpenTofu, the
 * cloud's resolver). `npm run rehearse` refuses a configuration whose estimate is above what this
 * machine has available, before it boots anything. The rehearsal's test holds every host to its
 * role's figure.
 */
import * as fs from "node:fs";

/** A host's role in the rehearsal, from its name (= the first label of its minion id). */
export type Role = "bastion" | "salt" | "master" | "node";

/**
 * MiB per host of each role (the Kubernetes master apart from the other nodes: it runs the
 * cluster's objects and the join protocol's issuer), as the proportional set sizes of its
 * processes after a first apply of 3 nodes (2026-12-06: bastion 215, Salt master 589,
 * Kubernetes master 506, nodes 348 and 365), and a quarter more, in tens.
 */
export const HOST_MIB: Readonly<Record<Role, number>> = { bastion: 270, salt: 740, master: 640, node: 460 };

/**
 * MiB the engine holds itself while the hosts run: node with the double, OpenTofu and its
 * provider, the cloud's services (272 at its peak in a rehearsal of 3 nodes, sampled every
 * second, 2026-12-06; rounded up for what the sampling missed).
 */
export const ENGINE_MIB = 400;

export function roleOf(host: string): Role {
  const name = host.split(".")[0];
  if (name === "bastion" || name === "salt") return name;
  return name === "k8s-master" ? "master" : "node";
}

export interface Estimate {
  readonly mib: number;
  /** How many hosts of each role. */
  readonly hosts: Readonly<Record<Role, number>>;
}

/** The memory a rehearsal of these hosts (names or minion ids) needs, engine included. */
export function estimate(hosts: readonly string[]): Estimate {
  const counts: Record<Role, number> = { bastion: 0, salt: 0, master: 0, node: 0 };
  for (const host of hosts) counts[roleOf(host)] += 1;
  const mib = ENGINE_MIB + (Object.keys(counts) as Role[]).reduce((sum, role) => sum + counts[role] * HOST_MIB[role], 0);
  return { mib, hosts: counts };
}

/** What this machine has available now, in MiB (/proc/meminfo's MemAvailable). */
export function availableMiB(meminfo = fs.readFileSync("/proc/meminfo", "utf8")): number {
  const available = /^MemAvailable:\s+(\d+) kB$/m.exec(meminfo);
  if (!available) throw new Error("/proc/meminfo has no MemAvailable line");
  return Math.floor(Number(available[1]) / 1024);
}
