/**
 * `npm run rehearse` (issue 38): your configuration deployed offline, before it touches a cloud.
 * The stack is synthesized from your TF_VAR_* values, the working tree's salt/ and pillar/, as
 * `npm run deploy` would, and applied with real OpenTofu against the OpenStack API double; each
 * server boots as a host with real cloud-init, sshd and Salt (only microk8s and snap are fakes),
 * and the provisioning chain runs through the bastion. Then it reports the apply's wall time, each
 * host's highstate and memory, and the cluster's nodes and dqlite voters.
 *
 *   npm run rehearse [-- [--from REF] [--json FILE]]
 *
 * With --from, a change: the project as of REF (from-ref.ts) is applied first, with the same
 * TF_VAR_* values (again, up to REF_APPLIES times, while its apply fails), then the working tree
 * as a change to it (change.ts): its plan, the Salt preview `npm run diff` would print, and its
 * apply with the Kubernetes API probed meanwhile. The report says what the change did: machines
 * created, replaced or destroyed, each host's Salt changes beside its preview, the nodes that
 * joined or left, whether the API answered throughout.
 *
 * Needs root, network namespaces and the toolchain's Debian root (scripts/rehearse.js installs
 * the toolchain first). Before anything boots, the memory the configuration needs is estimated
 * (memory.ts) and a configuration this machine cannot host is refused in one line. Everything it
 * made goes away when it ends, on Ctrl-C too. At a terminal it says what each step does; under CI
 * (CI set) or without a terminal, only the report.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { applyChange, changeLines, ChangeReport, changeReport, planChange, PlannedChange, previewChange } from "./change";
import { initializedStack, rehearsalAvailable, rehearsedStack, RehearsedStack, startRehearsal, type Rehearsal } from "./engine";
import { REF_APPLIES, RefError, resolveRef, restartSilentMinions, stackAtRef } from "./from-ref";
import { availableMiB, estimate } from "./memory";
import { readReport, RehearsalReport, reportLines } from "./report";
import { ApplyOutcome } from "./results";
import { stopAll } from "./run";

class UsageError extends Error {}

/** A ref that cannot be rehearsed is the user's to mend: one line, as bad input is. */
function usage(error: unknown): never {
  throw error instanceof RefError ? new UsageError(error.message) : error;
}

const USAGE = "usage: npm run rehearse [-- [--from REF] [--json FILE]]";

interface Options {
  readonly json?: string;
  readonly from?: string;
}

function parseArgs(argv: string[]): Options {
  const options: { json?: string; from?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--json" && argv[i + 1] !== undefined) options.json = path.resolve(argv[++i]);
    else if (argv[i] === "--from" && argv[i + 1] !== undefined && argv[i + 1] !== "") options.from = argv[++i];
    else throw new UsageError(`unknown argument ${JSON.stringify(argv[i])}: ${USAGE}`);
  }
  return options;
}

/** A ref as the user gave it, and the commit it names when that is another name. */
const named = (ref: string, commit: string) => (ref === commit ? commit : `${commit} (${ref})`);

/** The report --json writes: the rehearsal's; with --from, the ref's applies and the change's too. */
type JsonReport =
  | RehearsalReport
  | {
      from: { ref: string; commit: string; applies: { seconds: number; succeeded: boolean; last: string | null }[] };
      change: ChangeReport | null;
      rehearsal: RehearsalReport | null;
    };

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const atTerminal = Boolean(process.stderr.isTTY) && !process.env.CI;
  let interrupted = false;
  const progress = (line: string) => {
    if (atTerminal && !interrupted) console.error(`rehearse: ${line}`);
  };
  const available = rehearsalAvailable();
  if (!available.ok) throw new UsageError(`cannot rehearse on this machine: ${available.reason}`);
  const fromCommit = options.from === undefined ? undefined : await resolveRef(options.from).catch(usage);

  let starting: Promise<Rehearsal> | undefined;
  let closing: Promise<void> | undefined;
  // tofu first, which would go on asking the double, then the cloud, once it has started.
  const close = () =>
    (closing ??= stopAll().then(async () => {
      const started = await starting?.catch(() => undefined);
      await started?.close();
    }));
  // Ctrl-C (and a runner's stop): every host, namespace and volume goes before the process does,
  // and nothing else happens meanwhile (stopped() holds the steps below).
  const stopped = (): Promise<void> => (interrupted ? new Promise<void>(() => {}) : Promise.resolve());
  for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
    process.on(signal, () => {
      if (interrupted) return;
      interrupted = true;
      console.error(`rehearse: ${signal}: removing the rehearsal's machines and networks`);
      void close().finally(() => process.exit(130));
    });
  }
  const writeJson = (report: JsonReport) => {
    if (options.json) fs.writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
  };
  const failedLines = (what: string, apply: ApplyOutcome) =>
    `${what} failed; its last lines:\n${apply.stdout.trimEnd().split("\n").slice(-20).join("\n")}`;
  try {
    progress("starting the offline cloud: the OpenStack API double, a state server, the hosts' network");
    starting = startRehearsal({ onBoot: (name) => progress(`${name} boots`) });
    const rehearsal = await starting;
    await stopped();
    let from: { ref: string; commit: string; stack: RehearsedStack } | undefined;
    if (options.from !== undefined && fromCommit !== undefined) {
      progress(`taking ${named(options.from, fromCommit)} from this repository (git archive)`);
      const built = await stackAtRef(fromCommit, rehearsal.dir, process.env, rehearsal.publicKey, progress).catch(usage);
      from = { ref: options.from, commit: built.commit, stack: await initializedStack(rehearsal, built.dir, process.env) };
      await stopped();
    }
    progress("synthesizing your configuration (TF_VAR_*, salt/, pillar/)");
    const today = await rehearsedStack(rehearsal, { env: process.env });
    await stopped();

    // The memory it needs: every machine of the first apply, and with --from every machine the
    // working tree's stack has too (a replacement is created before its machine goes).
    const first = await planChange(from?.stack ?? today);
    await stopped();
    const machines = new Set(first.machines.created);
    if (from) for (const name of (await planChange(today)).machines.created) machines.add(name);
    await stopped();
    const needed = estimate([...machines].sort());
    const free = availableMiB();
    if (needed.mib > free) {
      const { bastion, salt, master, node } = needed.hosts;
      throw new UsageError(
        `this configuration needs about ${needed.mib} MiB (${bastion} bastion, ${salt} Salt master, ${master + node} Kubernetes nodes, ` +
          `and the engine), and this machine has ${free} MiB available: rehearse fewer nodes (TF_VAR_num_kube_nodes, TF_VAR_node_pools) or free memory`,
      );
    }
    const memory = { estimate: needed, availableMiB: free };
    const master = first.machines.created.find((name) => name.startsWith("k8s-master.")) ?? "";
    const saltMaster = first.machines.created.find((name) => name.startsWith("salt.")) ?? "";
    progress(
      `applying${from ? ` ${from.commit}` : ""}: ${first.machines.created.length} machines boot with cloud-init, then the provisioning chain runs ` +
        `(about ${needed.mib} MiB of the ${free} MiB available; several minutes)`,
    );
    if (!from) {
      const apply = await today.apply(first.file);
      await stopped();
      if (apply.status !== 0) console.log(failedLines("the apply", apply));
      progress("reading each host and the cluster");
      const report = await readReport(rehearsal, apply, master, memory);
      for (const line of reportLines(report)) console.log(line);
      writeJson(report);
      return apply.status === 0 ? 0 : 1;
    }

    // --from: the ref applied as its user did, then the working tree's change to it.
    const applies: ApplyOutcome[] = [];
    for (let plan: string | undefined = first.file; ; plan = undefined) {
      applies.push(await from.stack.apply(plan));
      await stopped();
      const last = applies.at(-1)!;
      if (last.status === 0 || applies.length === REF_APPLIES) break;
      progress(
        `${from.commit}'s apply ${applies.length} failed (${last.last ?? "no line of the chain"}): applying it again, as its user would`,
      );
      const { restarted } = saltMaster ? await restartSilentMinions(rehearsal, saltMaster) : { restarted: [] };
      if (restarted.length) progress(`restarted the salt-minion its user would have, on ${restarted.join(", ")}: it stopped answering`);
      await stopped();
    }
    const fromReport = {
      ref: from.ref,
      commit: from.commit,
      applies: applies.map((apply) => ({ seconds: apply.seconds, succeeded: apply.status === 0, last: apply.last ?? null })),
    };
    const seconds = applies.reduce((sum, apply) => sum + apply.seconds, 0);
    const fromLines = [
      `from ${named(from.ref, from.commit)}: ` +
        (applies.length === 1 ? `applied in ${seconds} s` : `${applies.length} applies, ${seconds} s in all`),
      ...applies.flatMap((apply, n) =>
        apply.status === 0 ? [] : [`  its apply ${n + 1} failed: ${apply.last ?? "before the chain ran"}`],
      ),
    ];
    if (applies.at(-1)!.status !== 0) {
      console.log(failedLines(`${from.commit}'s last apply`, applies.at(-1)!));
      for (const line of fromLines) console.log(line);
      console.log(`${from.commit} did not apply, so there is no change to rehearse`);
      writeJson({ from: fromReport, change: null, rehearsal: null });
      return 1;
    }
    progress(`planning the working tree's change to the cluster ${from.commit} made`);
    const planned: PlannedChange = await planChange(today);
    await stopped();
    progress("previewing it with Salt on the running cluster, as npm run diff does");
    const preview = await previewChange(rehearsal, today, planned);
    await stopped();
    progress("applying the working tree; the Kubernetes API probed every few seconds");
    // Every Kubernetes node, the master first: a worker's kubectl has no API and is passed over.
    const nodes = rehearsal.cloud.hostNames().filter((name) => name.startsWith("k8s-") && name !== master);
    const applied = await applyChange(rehearsal, today, planned, master, [master, ...nodes]);
    await stopped();
    if (applied.apply.status !== 0) console.log(failedLines("the working tree's apply", applied.apply));
    progress("reading each host and the cluster");
    const change = changeReport(planned, preview, applied);
    const report = await readReport(rehearsal, applied.apply, master, memory);
    // What npm run diff would have printed, its file diffs included; then the change beside it.
    process.stdout.write(preview.stdout);
    for (const line of fromLines) console.log(line);
    for (const line of changeLines(change)) console.log(line);
    for (const line of reportLines(report).slice(1)) console.log(line);
    writeJson({ from: fromReport, change, rehearsal: report });
    return applied.apply.status === 0 ? 0 : 1;
  } finally {
    progress("removing the rehearsal's machines and networks");
    await close();
  }
}

main().then(
  (status) => process.exit(status),
  (error: unknown) => {
    if (error instanceof UsageError) {
      console.error(`rehearse: ${error.message}`);
      process.exit(1);
    }
    console.error(error);
    process.exit(1);
  },
);
