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
import type { ApplyOutcome } from "./engine";
import { highstates, rehearsedCluster, scriptLines } from "./results";
import { runAsync, RunResult } from "./run";

/** What rehearseChange's steps need of a stack: its directory and its tofu. */
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
}

/** Plans the stack's change, `env` added to tofu's environment, and saves the plan. */
export async function planChange(stack: ChangeStack, env: NodeJS.ProcessEnv = {}): Promise<PlannedChange> {
  const plan = await stack.tofu(["plan", "-input=false", "-out=change.plan"], env);
  if (plan.status !== 0) throw new Error(`the change's plan failed:\n${plan.stderr}`);
  const shown = await stack.tofu(["show", "-json", "change.plan"]);
  const json = path.join(stack.dir, "change.plan.json");
  fs.writeFileSync(json, shown.stdout);
  const machines = { created: [] as string[], replaced: [] as string[], destroyed: [] as string[] };
  for (const change of (JSON.parse(shown.stdout).resource_changes ?? []) as Json[]) {
    if (change.type !== "openstack_compute_instance_v2") continue;
    const actions: string[] = change.change.actions;
    if (actions.includes("create") && actions.includes("delete")) machines.replaced.push(String(change.change.after.name));
    else if (actions.includes("create")) machines.created.push(String(change.change.after.name));
    else if (actions.includes("delete")) machines.destroyed.push(String(change.change.before.name));
  }
  for (const list of Object.values(machines)) list.sort();
  return { file: "change.plan", json, machines };
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

/** Seconds between two probes of the API while the change applies. */
const PROBE_SECONDS = 3;

/**
 * Applies the planned change, asking the Kubernetes API every PROBE_SECONDS meanwhile through
 * each of `voters` (minion ids) in turn until one answers.
 */
export async function applyChange(
  rehearsal: Rehearsal,
  stack: ChangeStack,
  planned: PlannedChange,
  master: string,
  voters: string[],
): Promise<AppliedChange> {
  const cluster = rehearsedCluster(() => rehearsal, master);
  const before = await cluster.readyNodes();
  const probes: { at: number; answered: boolean }[] = [];
  let applying = true;
  const probing = (async () => {
    while (applying) {
      const at = Date.now();
      let answered = false;
      for (const voter of voters) {
        if (!rehearsal.cloud.hostNames().includes(voter)) continue;
        if ((await rehearsal.cloud.host(voter).exec("microk8s kubectl get nodes -o name")).status === 0) {
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
  const seconds = Math.round((Date.now() - started) / 1000);
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
    apply: { ...result, seconds, highstates: highstates(result.stdout), last: scriptLines(result.stdout).at(-1) },
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
  readonly apply: { readonly seconds: number; readonly succeeded: boolean; readonly last: string | null };
  /** Each host the apply's orchestration highstated: its changed and failed states. */
  readonly salt: Record<string, { readonly changed: number; readonly failed: number }>;
  readonly membership: { readonly joined: string[]; readonly removed: string[] };
  readonly api: AppliedChange["api"];
  /** Per host, what the preview said (its report's status) beside how many states the apply changed (null: not highstated). */
  readonly preview: Record<string, { readonly previewed: string; readonly changed: number | null }>;
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
    apply: { seconds: applied.apply.seconds, succeeded: applied.apply.status === 0, last: applied.apply.last ?? null },
    salt,
    membership: {
      joined: applied.ready.after.filter((node) => !applied.ready.before.includes(node)),
      removed: applied.ready.before.filter((node) => !applied.ready.after.includes(node)),
    },
    api: applied.api,
    preview: Object.fromEntries(
      hosts.map((host) => [host, { previewed: previewed[host]?.status ?? "not previewed", changed: salt[host]?.changed ?? null }]),
    ),
  };
}
