/**
 * A change rehearsed on a running rehearsal (issue 38): what it plans, what the Salt preview of
 * that plan says (Part A, scripts/preview.js), and what its apply then did: the machines it
 * created, replaced or destroyed, each host's Salt changes, the nodes that joined or left, and
 * whether the Kubernetes API answered throughout. The steps are apart, so that a caller can look
 * at the cluster between them; changeReport() puts their results side by side.
 *
 * The API is the fake microk8s' (__tests__/doubles/microk8s_core/kubectl.py): a voter's kubectl
 * is refused while its kubelite restarts, as a real one's is. There is no data plane: "answered"
 * means some voter's API server was up, as a load balancer in front of them would find one.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Rehearsal } from "../../__tests__/doubles/rehearsal/rehearsal";
import { ApplyOutcome, applyOutcome, rehearsedCluster } from "./results";
import { runAsync, RunResult } from "./run";

/** What a change's steps need of a stack: its directory and its tofu. */
export interface ChangeStack {
  readonly dir: string;
  tofu(args: string[], extra?: NodeJS.ProcessEnv): Promise<RunResult>;
}

/** JSON that tofu printed, read field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

export interface PlannedChange {
  /** The saved plan, in the stack's directory. */
  readonly file: string;
  /** Its `show -json`, in the stack's directory too (the preview reads it). */
  readonly json: string;
  /** Machines by name (= minion id). */
  readonly machines: { readonly created: string[]; readonly replaced: string[]; readonly destroyed: string[] };
  /** Resources the plan adds, changes and destroys, as its summary counts them (a replacement adds and destroys). */
  readonly resources: { readonly add: number; readonly change: number; readonly destroy: number };
}

/** Plans the stack's change, `env` added to tofu's environment, and saves the plan. */
export async function planChange(stack: ChangeStack, env: NodeJS.ProcessEnv = {}): Promise<PlannedChange> {
  const plan = await stack.tofu(["plan", "-input=false", "-out=change.plan"], env);
  if (plan.status !== 0) throw new Error(`the change's plan failed:\n${plan.stderr}`);
  const shown = await stack.tofu(["show", "-json", "change.plan"]);
  const json = path.join(stack.dir, "change.plan.json");
  fs.writeFileSync(json, shown.stdout);
  const machines = { created: [] as string[], replaced: [] as string[], destroyed: [] as string[] };
  const resources = { add: 0, change: 0, destroy: 0 };
  for (const change of (JSON.parse(shown.stdout).resource_changes ?? []) as Json[]) {
    const actions: string[] = change.change.actions;
    if (actions.includes("create")) resources.add++;
    if (actions.includes("update")) resources.change++;
    if (actions.includes("delete")) resources.destroy++;
    if (change.type !== "openstack_compute_instance_v2") continue;
    if (actions.includes("create") && actions.includes("delete")) machines.replaced.push(String(change.change.after.name));
    else if (actions.includes("create")) machines.created.push(String(change.change.after.name));
    else if (actions.includes("delete")) machines.destroyed.push(String(change.change.before.name));
  }
  for (const list of Object.values(machines)) list.sort();
  return { file: "change.plan", json, machines, resources };
}

/** npm run diff's Salt preview of the planned change (scripts/preview.js): its lines and report. */
export async function previewChange(
  rehearsal: Rehearsal,
  stack: ChangeStack,
  planned: PlannedChange,
  env: NodeJS.ProcessEnv = {},
): Promise<RunResult & { report: Json }> {
  const report = path.join(stack.dir, "salt-preview.json");
  fs.rmSync(report, { force: true });
  const preview = await runAsync(
    process.execPath,
    [path.join(__dirname, "..", "..", "scripts", "preview.js"), "--plan", planned.json, "--stack", stack.dir, "--report", report],
    { env: { PATH: process.env.PATH, HOME: process.env.HOME, ...rehearsal.agentEnv, ...env } },
  );
  return { ...preview, report: fs.existsSync(report) ? JSON.parse(fs.readFileSync(report, "utf8")) : undefined };
}

export interface AppliedChange {
  readonly apply: ApplyOutcome;
  /** The Kubernetes nodes Ready before and after, by name. */
  readonly ready: { readonly before: string[]; readonly after: string[] };
  readonly api: { readonly probes: number; readonly answered: number; readonly longestGapSeconds: number };
}

/**
 * Whether kubectl's `get nodes -o json` got the API server's List of Nodes. A node joined with
 * --worker has no API server: its kubectl says so and exits 0 all the same.
 */
function listsNodes(asked: RunResult): boolean {
  try {
    return asked.status === 0 && JSON.parse(asked.stdout).kind === "List";
  } catch {
    return false;
  }
}

/** Seconds between two probes of the API while the change applies. */
const PROBE_SECONDS = 3;

/**
 * Applies the planned change, asking the Kubernetes API every PROBE_SECONDS meanwhile through
 * each of `nodes` (minion ids; a worker's kubectl has no API server and never answers) in turn
 * until one answers, as a load balancer in front of the control plane would.
 */
export async function applyChange(
  rehearsal: Rehearsal,
  stack: ChangeStack,
  planned: PlannedChange,
  master: string,
  nodes: string[],
): Promise<AppliedChange> {
  const cluster = rehearsedCluster(() => rehearsal, master);
  const before = await cluster.readyNodes();
  const probes: { at: number; answered: boolean }[] = [];
  let applying = true;
  const probing = (async () => {
    while (applying) {
      const at = Date.now();
      let answered = false;
      for (const node of nodes) {
        if (!rehearsal.cloud.hostNames().includes(node)) continue;
        if (listsNodes(await rehearsal.cloud.host(node).exec("microk8s kubectl get nodes -o json"))) {
          answered = true;
          break;
        }
      }
      probes.push({ at, answered });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, at + PROBE_SECONDS * 1000 - Date.now())));
    }
  })();
  const started = Date.now();
  const result = await stack.tofu(["apply", "-input=false", planned.file]);
  const apply = applyOutcome(result, Date.now() - started);
  applying = false;
  await probing;
  // The longest time from a probe that went unanswered to the next one answered (or the end).
  let longestGap = 0;
  let gapStart: number | undefined;
  for (const probe of [...probes, { at: Date.now(), answered: true }]) {
    if (!probe.answered) gapStart ??= probe.at;
    else if (gapStart !== undefined) {
      longestGap = Math.max(longestGap, probe.at - gapStart);
      gapStart = undefined;
    }
  }
  return {
    apply,
    ready: { before, after: await cluster.readyNodes() },
    api: {
      probes: probes.length,
      answered: probes.filter((probe) => probe.answered).length,
      longestGapSeconds: Math.round(longestGap / 1000),
    },
  };
}

export interface ChangeReport {
  readonly machines: PlannedChange["machines"];
  readonly resources: PlannedChange["resources"];
  readonly apply: { readonly seconds: number; readonly succeeded: boolean; readonly last: string | null };
  /** Each host the apply's orchestration highstated: its changed and failed states. */
  readonly salt: Record<string, { readonly changed: number; readonly failed: number }>;
  readonly membership: { readonly joined: string[]; readonly removed: string[] };
  readonly api: AppliedChange["api"];
  /**
   * The preview's outcome (its report's status: previewed, nothing-to-preview, unreachable, ...)
   * and the line that says why, if it did not preview; then per host, what it said beside how many
   * states the apply changed there (null: not highstated).
   */
  readonly preview: {
    readonly outcome: string;
    readonly reason: string | null;
    readonly hosts: Record<string, { readonly previewed: string; readonly changed: number | null }>;
  };
}

/** The change's report: the plan, the preview and the apply side by side. */
export function changeReport(planned: PlannedChange, preview: { report: Json } | undefined, applied: AppliedChange): ChangeReport {
  const salt = Object.fromEntries(
    Object.entries(applied.apply.highstates).map(([host, result]) => [host, { changed: result.changed, failed: result.failed }]),
  );
  const previewed: Record<string, { status: string }> = preview?.report?.hosts ?? {};
  const hosts = [...new Set([...Object.keys(previewed), ...Object.keys(salt)])].sort();
  return {
    machines: planned.machines,
    resources: planned.resources,
    apply: { seconds: applied.apply.seconds, succeeded: applied.apply.status === 0, last: applied.apply.last ?? null },
    salt,
    membership: {
      joined: applied.ready.after.filter((node) => !applied.ready.before.includes(node)),
      removed: applied.ready.before.filter((node) => !applied.ready.after.includes(node)),
    },
    api: applied.api,
    preview: {
      outcome: String(preview?.report?.status ?? "no report"),
      reason: preview?.report?.reason ?? null,
      hosts: Object.fromEntries(
        hosts.map((host) => [host, { previewed: previewed[host]?.status ?? "not previewed", changed: salt[host]?.changed ?? null }]),
      ),
    },
  };
}

/** The change's report as lines: the machines, the apply, a row per host (preview beside apply), membership, the API. */
export function changeLines(report: ChangeReport): string[] {
  const { created, replaced, destroyed } = report.machines;
  const machines = [
    ["created", created],
    ["replaced", replaced],
    ["destroyed", destroyed],
  ]
    .filter(([, names]) => names.length > 0)
    .map(([what, names]) => `${names.length} ${what} (${(names as string[]).join(", ")})`);
  const width = Math.max(4, ...Object.keys(report.preview.hosts).map((name) => name.length));
  const { add, change, destroy } = report.resources;
  const lines = [
    `plan: ${add} to add, ${change} to change, ${destroy} to destroy; machines: ${machines.length ? machines.join(", ") : "none created, replaced or destroyed"}`,
    `apply: ${report.apply.succeeded ? "succeeded" : "failed"} in ${report.apply.seconds} s${report.apply.last ? `; its last line: ${report.apply.last}` : ""}`,
    `preview: ${report.preview.outcome}${report.preview.reason ? `: ${report.preview.reason}` : ""}`,
    `${"host".padEnd(width)}  ${"preview said".padEnd(14)}  the apply's highstate`,
  ];
  for (const [host, { previewed, changed }] of Object.entries(report.preview.hosts)) {
    const failed = report.salt[host]?.failed ?? 0;
    const applied = changed === null ? "not run" : `${changed} changed${failed ? `, ${failed} failed` : ""}`;
    lines.push(`${host.padEnd(width)}  ${previewed.padEnd(14)}  ${applied}`);
  }
  const { joined, removed } = report.membership;
  lines.push(
    joined.length || removed.length
      ? `membership: ${[joined.length ? `joined ${joined.join(", ")}` : "", removed.length ? `left ${removed.join(", ")}` : ""].filter(Boolean).join("; ")}`
      : "membership: no node joined or left",
  );
  const { probes, answered, longestGapSeconds } = report.api;
  lines.push(
    answered === probes
      ? `API: answered ${probes === 1 ? "the one probe" : `all ${probes} probes`} (one every ${PROBE_SECONDS} s during the apply)`
      : `API: answered ${answered} of ${probes} probes (one every ${PROBE_SECONDS} s during the apply); unanswered for ${longestGapSeconds} s at most`,
  );
  return lines;
}
