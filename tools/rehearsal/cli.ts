/**
 * `npm run rehearse` (issue 38): your configuration deployed offline, before it touches a cloud.
 * The stack is synthesized from your TF_VAR_* values, the working tree's salt/ and pillar/, as
 * `npm run deploy` would, and applied with real OpenTofu against the OpenStack API double; each
 * server boots as a host with real cloud-init, sshd and Salt (only microk8s and snap are fakes),
 * and the provisioning chain runs through the bastion. Then it reports the apply's wall time, each
 * host's highstate and memory, and the cluster's nodes and dqlite voters.
 *
 *   npm run rehearse [-- --json FILE]
 *
 * Needs root, network namespaces and the toolchain's Debian root (scripts/rehearse.js installs
 * the toolchain first). Before anything boots, the memory the configuration needs is estimated
 * (memory.ts) and a configuration this machine cannot host is refused in one line. Everything it
 * made goes away when it ends, on Ctrl-C too. At a terminal it says what each step does; under CI
 * (CI set) or without a terminal, only the report.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { rehearsalAvailable, rehearsedStack, startRehearsal, type Rehearsal } from "./engine";
import { availableMiB, estimate } from "./memory";
import { readReport, reportLines } from "./report";
import { stopAll } from "./run";

/** JSON that kubectl, microk8s or tofu printed, read field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

class UsageError extends Error {}

function parseArgs(argv: string[]): { json?: string } {
  const options: { json?: string } = {};
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--json" && argv[i + 1] !== undefined) options.json = path.resolve(argv[++i]);
    else throw new UsageError(`unknown argument ${JSON.stringify(argv[i])}: usage: npm run rehearse [-- --json FILE]`);
  }
  return options;
}

async function main(): Promise<number> {
  const options = parseArgs(process.argv.slice(2));
  const atTerminal = Boolean(process.stderr.isTTY) && !process.env.CI;
  let interrupted = false;
  const progress = (line: string) => {
    if (atTerminal && !interrupted) console.error(`rehearse: ${line}`);
  };
  const available = rehearsalAvailable();
  if (!available.ok) throw new UsageError(`cannot rehearse on this machine: ${available.reason}`);

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
  try {
    progress("starting the offline cloud: the OpenStack API double, a state server, the hosts' network");
    starting = startRehearsal({ onBoot: (name) => progress(`${name} boots`) });
    const rehearsal = await starting;
    await stopped();
    progress("synthesizing your configuration (TF_VAR_*, salt/, pillar/)");
    const stack = await rehearsedStack(rehearsal, { env: process.env });
    await stopped();
    const plan = await stack.tofu(["plan", "-input=false", "-out=rehearse.plan"]);
    await stopped();
    if (plan.status !== 0) throw new UsageError(`the plan failed:\n${plan.stderr.trim()}`);
    const shown = JSON.parse((await stack.tofu(["show", "-json", "rehearse.plan"])).stdout);
    const machines: string[] = (shown.resource_changes ?? [])
      .filter((change: Json) => change.type === "openstack_compute_instance_v2" && change.change.actions.includes("create"))
      .map((change: Json) => String(change.change.after.name));
    const needed = estimate(machines);
    const free = availableMiB();
    if (needed.mib > free) {
      const { bastion, salt, master, node } = needed.hosts;
      throw new UsageError(
        `this configuration needs about ${needed.mib} MiB (${bastion} bastion, ${salt} Salt master, ${master + node} Kubernetes nodes, ` +
          `and the engine), and this machine has ${free} MiB available: rehearse fewer nodes (TF_VAR_num_kube_nodes, TF_VAR_node_pools) or free memory`,
      );
    }
    progress(
      `applying: ${machines.length} machines boot with cloud-init, then the provisioning chain runs ` +
        `(about ${needed.mib} MiB of the ${free} MiB available; several minutes)`,
    );
    const apply = await stack.apply("rehearse.plan");
    await stopped();
    if (apply.status !== 0) console.log(`the apply failed; its last lines:\n${apply.stdout.trimEnd().split("\n").slice(-20).join("\n")}`);
    progress("reading each host and the cluster");
    const master = machines.find((name) => name.startsWith("k8s-master.")) ?? "";
    const report = await readReport(rehearsal, apply, master, { estimate: needed, availableMiB: free });
    for (const line of reportLines(report)) console.log(line);
    if (options.json) fs.writeFileSync(options.json, `${JSON.stringify(report, null, 2)}\n`);
    return apply.status === 0 ? 0 : 1;
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
