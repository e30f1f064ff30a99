/**
 * What the rehearsal's journeys read back: the chain's lines in an apply's output, each minion's
 * highstate, and the cluster as the Kubernetes master's fake microk8s sees it
 * (__tests__/doubles/rehearsal/).
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import type { Rehearsal } from "../doubles/rehearsal/rehearsal";

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

/** Per minion, its highstate's "N states, C changed, F failed" from orchestrate.sh's lines. */
export function highstates(stdout: string): Record<string, { states: number; changed: number; failed: number; line: string }> {
  const result: Record<string, { states: number; changed: number; failed: number; line: string }> = {};
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
  kubeObjects(refs: string[]): Promise<Record<string, any>>;
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
    return JSON.parse(result.stdout).items as any[];
  };
  return {
    servers: () =>
      new Map(
        rehearsal()
          .double.nova.servers.all()
          .map((server: any) => [String(server.name).split(".")[0], String(server.id)]),
      ),
    async kubeObjects(refs) {
      const objects: Record<string, any> = {};
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
        .filter((node) => node.status.conditions.some((c: any) => c.type === "Ready" && c.status === "True"))
        .map((node) => node.metadata.name)
        .sort(),
    async voters() {
      const status = YAML.parse((await exec("microk8s status --format yaml")).stdout);
      return (status["high-availability"]?.nodes ?? []).filter((node: any) => node.role === "voter").length;
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

/**
 * What a host holds, for a check that something changed nothing on it: every file its overlay's
 * upper layer holds (what the host changed of its image), by path, as its mode, owner and
 * SHA-256 (a link's target); and its daemons (PID 1's children) by PID, start time and command
 * line, so that a restart shows. Not what changes while a host only runs or reads: logs (the
 * fake microk8s' cluster agent's too: what a request did is in the fake's other files), Salt's job
 * records (`proc/`, the master's `jobs/`), apt's binary caches (which any apt read rebuilds from
 * /var/lib/apt/lists), bytecode (which records its source's modification time), /tmp.
 */
export interface HostState {
  readonly files: Record<string, string>;
  readonly daemons: string[];
}

const VOLATILE = [
  /^var\/log\//,
  /^tmp\//,
  /^var\/tmp\//,
  /^var\/cache\/salt\/(minion|master)\/proc\//,
  /^var\/cache\/salt\/master\/jobs\//,
  /^var\/cache\/apt\/(src)?pkgcache\.bin$/,
  /^var\/snap\/microk8s\/current\/fake\/agent\.log$/,
  /(^|\/)__pycache__\//,
];

/** PID 1's children, as "<pid> <start time> <command line>" (/proc/PID/stat's fields 4 and 22). */
const DAEMONS = `python3 -c "
import os
for pid in filter(str.isdigit, os.listdir('/proc')):
    try:
        stat = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
        cmdline = open(f'/proc/{pid}/cmdline', 'rb').read().replace(bytes(1), b' ').decode().strip()
    except OSError:
        continue
    if stat[1] == '1':
        print(pid, stat[19], cmdline)
"`;

export async function hostState(rehearsal: Rehearsal, name: string): Promise<HostState> {
  const host = rehearsal.cloud.host(name);
  const files: Record<string, string> = {};
  for (const entry of fs.readdirSync(host.upper, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const relative = path.relative(host.upper, full);
    if (entry.isDirectory() || VOLATILE.some((pattern) => pattern.test(relative))) continue;
    const stat = fs.lstatSync(full);
    const owner = `${(stat.mode & 0o7777).toString(8)} ${stat.uid}:${stat.gid}`;
    if (entry.isSymbolicLink()) files[relative] = `${owner} -> ${fs.readlinkSync(full)}`;
    else if (entry.isFile()) files[relative] = `${owner} ${crypto.createHash("sha256").update(fs.readFileSync(full)).digest("hex")}`;
    else files[relative] = `${owner} ${stat.mode >> 12}`;
  }
  const listed = await host.exec(DAEMONS);
  if (listed.status !== 0) throw new Error(`${name}: listing its processes failed: ${listed.stderr}`);
  return { files, daemons: listed.stdout.split("\n").filter(Boolean).sort() };
}

/** What differs between two states of a host: paths and daemons, each once. */
export function stateChanges(before: HostState, after: HostState): string[] {
  const paths = new Set([...Object.keys(before.files), ...Object.keys(after.files)]);
  const files = [...paths].filter((file) => before.files[file] !== after.files[file]).map((file) => `file ${file}`);
  const daemons = [...new Set([...before.daemons, ...after.daemons])]
    .filter((daemon) => before.daemons.includes(daemon) !== after.daemons.includes(daemon))
    .map((daemon) => `daemon ${daemon}`);
  return [...files, ...daemons].sort();
}
