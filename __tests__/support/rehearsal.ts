/**
 * What the rehearsal's journeys read back: tools/rehearsal/results.ts (the chain's lines, each
 * minion's highstate, the cluster), and each host's state, for a check that something changed
 * nothing on it.
 */
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import type { Rehearsal } from "../doubles/rehearsal/rehearsal";

export { highstates, rehearsedCluster, scriptLines, stepsRun } from "../../tools/rehearsal/results";
export type { RehearsedCluster } from "../../tools/rehearsal/results";

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
