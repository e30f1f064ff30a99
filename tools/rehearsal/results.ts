/**
 * What a rehearsal reads back (issue 38): the chain's lines in an apply's output, each minion's
 * highstate, and the cluster as the Kubernetes master's fake microk8s sees it
 * (__tests__/doubles/rehearsal/). `npm run rehearse` reports them; the rehearsal's tests check them.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import type { Rehearsal } from "../../__tests__/doubles/rehearsal/rehearsal";
import type { RunResult } from "./run";

/** JSON that kubectl, microk8s or tofu printed, read field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Json = any;

/** The provisioners' lines, as "<Step>: <line>", without Terraform's own connection lines. */
export function scriptLines(stdout: string): string[] {
  const terraform =
    /^(Connecting to remote host via SSH\.\.\.|Host: |User: |Password: |Private key: |Certificate: |SSH Agent: |Checking Host Key: |Target Platform: |Using configured bastion host\.\.\.|Connected!|Bastion )/;
  return [
    ...stdout.matchAll(/^(?:null_resource|terraform_data)\.SaltProvisioner_([A-Za-z]+)_[0-9A-F]{8}\[(\d+)\] \(remote-exec\): (.*)$/gm),
  ]
    .map(([, step, index, line]) => [/^Node(Membership|Drain)$/.test(step) ? `${step}[${index}]` : step, line.trim()])
    .filter(([, line]) => !terraform.test(line))
    .map(([step, line]) => `${step}: ${line}`);
}

/** The steps that ran, in order of their first line. */
export function stepsRun(stdout: string): string[] {
  return [...new Set(scriptLines(stdout).map((line) => line.split(":")[0]))];
}

/** One apply's outcome, read from its output. */
export interface ApplyOutcome extends RunResult {
  readonly seconds: number;
  /** Each minion's highstate, by minion id (orchestrate.sh's lines). */
  readonly highstates: Record<string, HostHighstate>;
  /** The chain's last line: on a failure, the reason. */
  readonly last: string | undefined;
}

/** An apply's outcome, read from its output; `milliseconds` is how long it took. */
export function applyOutcome(result: RunResult, milliseconds: number): ApplyOutcome {
  return {
    ...result,
    seconds: Math.round(milliseconds / 1000),
    highstates: highstates(result.stdout),
    last: scriptLines(result.stdout).at(-1),
  };
}

/** A minion's highstate, as orchestrate.sh's line gives it. */
export interface HostHighstate {
  readonly states: number;
  readonly changed: number;
  readonly failed: number;
  readonly line: string;
}

/** Per minion, its highstate's "N states, C changed, F failed" from orchestrate.sh's lines. */
export function highstates(stdout: string): Record<string, HostHighstate> {
  const result: Record<string, HostHighstate> = {};
  for (const [line, minion, states, changed, failed] of stdout.matchAll(
    /\[([^\]]+)\] state\.highstate: (\d+) states, (\d+) changed, (\d+) failed.*$/gm,
  )) {
    result[minion] = { states: Number(states), changed: Number(changed), failed: Number(failed), line };
  }
  return result;
}

/** The cluster a rehearsal runs, read through its Kubernetes master (`master`, a host name). */
export interface RehearsedCluster {
  /** The Nova servers' ids by short host name. */
  servers(): Map<string, string>;
  /** Objects as the master's kubectl reads them from the cluster's database, by "<Kind>/<namespace>/<name>". */
  kubeObjects(refs: string[]): Promise<Record<string, Json>>;
  /** The Kubernetes nodes the master's kubectl shows Ready, by name. */
  readyNodes(): Promise<string[]>;
  /** dqlite voters, from the master's `microk8s status --format yaml`. */
  voters(): Promise<number>;
  /** The Kubernetes nodes cordoned (spec.unschedulable), by name. */
  cordoned(): Promise<string[]>;
  /** True on a node joined with --worker (microk8s' var/lock/clustered.lock). */
  isWorker(host: string): Promise<boolean>;
  /**
   * A record of the fake microk8s (quorum.log, voter-removals.log) on every Kubernetes machine
   * the rehearsal booted, gone ones too (each keeps its overlay's upper layer), by its directory.
   */
  fakeRecords(name: string): Record<string, string>;
}

export function rehearsedCluster(rehearsal: () => Rehearsal, master: string): RehearsedCluster {
  const exec = (command: string) => rehearsal().cloud.host(master).exec(command);
  const nodes = async () => {
    const result = await exec("microk8s kubectl get nodes -o json");
    if (result.status !== 0) throw new Error(`kubectl get nodes failed: ${result.stderr}`);
    return JSON.parse(result.stdout).items as Json[];
  };
  return {
    servers: () =>
      new Map(
        rehearsal()
          .double.nova.servers.all()
          .map((server: Json) => [String(server.name).split(".")[0], String(server.id)]),
      ),
    async kubeObjects(refs) {
      const objects: Record<string, Json> = {};
      for (const ref of refs) {
        const [kind, namespace, name] = ref.split("/");
        const got = await exec(`microk8s kubectl get ${kind.toLowerCase()} ${name}${namespace ? ` -n ${namespace}` : ""} -o json`);
        if (got.status !== 0) throw new Error(`kubectl get ${ref} failed: ${got.stderr}`);
        objects[ref] = JSON.parse(got.stdout);
      }
      return objects;
    },
    readyNodes: async () =>
      (await nodes())
        .filter((node) => node.status.conditions.some((c: Json) => c.type === "Ready" && c.status === "True"))
        .map((node) => node.metadata.name)
        .sort(),
    async voters() {
      const status = YAML.parse((await exec("microk8s status --format yaml")).stdout);
      return (status["high-availability"]?.nodes ?? []).filter((node: Json) => node.role === "voter").length;
    },
    cordoned: async () => (await nodes()).filter((node) => node.spec?.unschedulable === true).map((node) => node.metadata.name),
    isWorker: async (host) =>
      (await rehearsal().cloud.host(host).exec("test -e /var/snap/microk8s/current/var/lock/clustered.lock")).status === 0,
    fakeRecords(name) {
      const cloud = path.join(rehearsal().dir, "cloud");
      return Object.fromEntries(
        fs
          .readdirSync(cloud)
          .filter((dir) => /^\d+-k8s-/.test(dir))
          .map((dir) => {
            const file = path.join(cloud, dir, "upper/var/snap/microk8s/current/fake", name);
            return [dir, fs.existsSync(file) ? fs.readFileSync(file, "utf8") : ""];
          }),
      );
    },
  };
}
