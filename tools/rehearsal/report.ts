/**
 * What a rehearsal reports (issue 38): the apply's wall time and outcome, each host's highstate
 * and memory, and the cluster's membership as its Kubernetes master sees it. `npm run rehearse`
 * prints it as a table and writes it as JSON; the rehearsal's test checks it against the cluster.
 */
import type { Rehearsal } from "../../__tests__/doubles/rehearsal/rehearsal";
import type { ApplyOutcome } from "./results";
import type { Estimate } from "./memory";
import { rehearsedCluster } from "./results";

export interface HostReport {
  /** Its highstate in the apply's orchestration; absent when the orchestration did not reach it. */
  readonly highstate?: { readonly states: number; readonly changed: number; readonly failed: number };
  readonly memoryMiB?: number;
}

export interface RehearsalReport {
  readonly apply: { readonly seconds: number; readonly succeeded: boolean; readonly last: string | null };
  readonly hosts: Record<string, HostReport>;
  /** As the Kubernetes master's microk8s sees it; null when it could not be read (no cluster). */
  readonly cluster: { readonly ready: string[]; readonly voters: number; readonly workers: string[] } | null;
  readonly memory: { readonly estimateMiB: number; readonly availableMiB: number };
}

/** The report of `apply` on the rehearsal's hosts, `master` being the Kubernetes master's minion id. */
export async function readReport(
  rehearsal: Rehearsal,
  apply: ApplyOutcome,
  master: string,
  memory: { estimate: Estimate; availableMiB: number },
): Promise<RehearsalReport> {
  const memoryMiB = await rehearsal.cloud.memoryMiB();
  const names = [...new Set([...rehearsal.cloud.hostNames(), ...Object.keys(apply.highstates)])].sort();
  const hosts = Object.fromEntries(
    names.map((name) => {
      const highstate = apply.highstates[name];
      return [
        name,
        {
          ...(highstate ? { highstate: { states: highstate.states, changed: highstate.changed, failed: highstate.failed } } : {}),
          ...(memoryMiB[name] === undefined ? {} : { memoryMiB: memoryMiB[name] }),
        },
      ];
    }),
  );
  let cluster: RehearsalReport["cluster"] = null;
  if (rehearsal.cloud.hostNames().includes(master)) {
    const read = rehearsedCluster(() => rehearsal, master);
    try {
      const ready = await read.readyNodes();
      const workers: string[] = [];
      for (const name of names.filter((each) => each.startsWith("k8s-"))) if (await read.isWorker(name)) workers.push(name.split(".")[0]);
      cluster = { ready, voters: await read.voters(), workers };
    } catch {
      // No cluster to read: the apply failed before microk8s ran.
    }
  }
  return {
    apply: { seconds: apply.seconds, succeeded: apply.status === 0, last: apply.last ?? null },
    hosts,
    cluster,
    memory: { estimateMiB: memory.estimate.mib, availableMiB: memory.availableMiB },
  };
}

/** The report as lines: one per host, then the cluster. */
export function reportLines(report: RehearsalReport): string[] {
  const width = Math.max(4, ...Object.keys(report.hosts).map((name) => name.length));
  const lines = [
    `apply: ${report.apply.succeeded ? "succeeded" : "failed"} in ${report.apply.seconds} s${report.apply.last ? `; its last line: ${report.apply.last}` : ""}`,
    `${"host".padEnd(width)}  ${"highstate".padEnd(34)}  memory`,
  ];
  for (const [name, host] of Object.entries(report.hosts)) {
    const highstate = host.highstate
      ? `${host.highstate.states} states, ${host.highstate.changed} changed, ${host.highstate.failed} failed`
      : "not run";
    lines.push(`${name.padEnd(width)}  ${highstate.padEnd(34)}  ${host.memoryMiB === undefined ? "-" : `${host.memoryMiB} MiB`}`);
  }
  const { cluster, memory } = report;
  lines.push(
    cluster
      ? `cluster: ${cluster.ready.length} nodes Ready (${cluster.ready.join(", ")}), ${cluster.voters} dqlite voters` +
          (cluster.workers.length ? `, joined as workers: ${cluster.workers.join(", ")}` : "")
      : "cluster: none to read (the Kubernetes master runs no microk8s)",
    `memory: ${Object.values(report.hosts).reduce((sum, host) => sum + (host.memoryMiB ?? 0), 0)} MiB in the hosts; ` +
      `estimated ${memory.estimateMiB} MiB with the engine, of ${memory.availableMiB} MiB available`,
  );
  return lines;
}
