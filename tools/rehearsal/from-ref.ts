/**
 * The project as of a git ref, for `npm run rehearse -- --from <ref>` (issue 38): its tree, taken
 * with `git archive` (the work tree is not touched), its dependencies, and its stack synthesized
 * by its own `npm run synth` from the user's TF_VAR_* values, as that version's user ran it. Its
 * backend becomes http, so that the rehearsal's state server holds its state, which the working
 * tree's stack then plans from: the same state, as a user who pulls a new version has.
 *
 * Its dependencies: when the ref's package-lock.json, cdktf.json, provider schemas and bindings
 * generator are the working tree's, the working tree's node_modules/ and .gen/ serve it as they
 * are; otherwise `npm ci` installs them in its tree (from the npm cache or registry, as
 * scripts/upgrade-fixtures.sh does), which takes a minute or two.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Rehearsal } from "../../__tests__/doubles/rehearsal/rehearsal";
import { runAsync } from "./run";

const ROOT = path.resolve(__dirname, "..", "..");

/** What a ref names that cannot be rehearsed, in one line for the user. */
export class RefError extends Error {}

/** The environment the ref's npm runs with: the machine's and npm's settings, the user's TF_VAR_*. */
function refEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const kept = /^(PATH|HOME|NODE_EXTRA_CA_CERTS|SSL_CERT_(FILE|DIR)|(npm|NPM)_CONFIG_\w+|(https?|no|HTTPS?|NO)_PROXY|TF_VAR_\w+|KOO_\w+)$/;
  return Object.fromEntries(Object.entries(env).filter(([name]) => kept.test(name)));
}

/** The inputs of the dependencies and bindings: equal, and the working tree's serve the ref. */
const DEPENDENCY_INPUTS = ["package-lock.json", "cdktf.json", "providers", "scripts/generate-bindings.js"];

export interface StackAtRef {
  /** The commit, abbreviated as git prints it. */
  readonly commit: string;
  /** The ref's synthesized stack's directory: cdk.tf.json (backend http) and its assets. */
  readonly dir: string;
}

const git = (...args: string[]) => runAsync("git", ["-C", ROOT, ...args], { env: process.env });

/** The commit `ref` names in this repository, abbreviated as git prints it; a RefError if none. */
export async function resolveRef(ref: string): Promise<string> {
  const parsed = await git("rev-parse", "--short=7", "--verify", "--quiet", `${ref}^{commit}`);
  if (parsed.status !== 0) throw new RefError(`--from ${ref}: not a commit of this repository (give a tag, a branch or a commit id)`);
  const commit = parsed.stdout.trim();
  if ((await git("cat-file", "-e", `${commit}:cdktf.json`)).status !== 0)
    throw new RefError(`--from ${ref}: ${commit} is not a version of kube-on-os (it has no cdktf.json)`);
  return commit;
}

/**
 * Builds the stack of `commit` (resolveRef's) in a directory under `into`, synthesized from `env`
 * (the user's TF_VAR_*; `deployKey` as TF_VAR_deploy_ssh_public_key). `progress` hears what
 * takes time.
 */
export async function stackAtRef(
  commit: string,
  into: string,
  env: NodeJS.ProcessEnv,
  deployKey: string,
  progress: (line: string) => void = () => {},
): Promise<StackAtRef> {
  const tree = fs.mkdtempSync(path.join(into, `kube-on-os-${commit}-`));
  const archived = await runAsync("bash", ["-c", 'set -o pipefail; git -C "$0" archive "$1" | tar -x -C "$2"', ROOT, commit, tree], {
    env: process.env,
  });
  if (archived.status !== 0) throw new RefError(`--from ${commit}: git archive failed: ${archived.stderr.trim()}`);

  const npmEnv = { ...refEnv(env), TF_VAR_deploy_ssh_public_key: deployKey };
  const same = (await git("diff", "--quiet", commit, "--", ...DEPENDENCY_INPUTS)).status === 0;
  if (same && fs.existsSync(path.join(ROOT, "node_modules")) && fs.existsSync(path.join(ROOT, ".gen"))) {
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(tree, "node_modules"));
    fs.symlinkSync(path.join(ROOT, ".gen"), path.join(tree, ".gen"));
  } else {
    progress(`installing ${commit}'s dependencies (npm ci; a minute or two)`);
    const installed = await runAsync("npm", ["ci", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: tree, env: npmEnv });
    if (installed.status !== 0) throw new RefError(`--from ${commit}: npm ci failed:\n${installed.stderr.trim()}`);
  }
  progress(`synthesizing ${commit}'s stack with your TF_VAR_* values (its npm run synth)`);
  const synth = await runAsync("npm", ["run", "--silent", "synth"], { cwd: tree, env: npmEnv });
  const dir = path.join(tree, "cdktf.out", "stacks", "kube-on-os");
  const file = path.join(dir, "cdk.tf.json");
  if (synth.status !== 0 || !fs.existsSync(file)) {
    const said = `${synth.stderr}\n${synth.stdout}`.trim().split("\n").slice(-5).join("\n");
    throw new RefError(`--from ${commit}: npm run synth failed:\n${said}`);
  }
  const stack = JSON.parse(fs.readFileSync(file, "utf8"));
  // The rehearsal's state server, whichever backend that version wrote (TF_HTTP_* set by the engine).
  stack.terraform.backend = { http: { lock_method: "POST", unlock_method: "DELETE" } };
  fs.writeFileSync(file, `${JSON.stringify(stack, null, 2)}\n`);
  return { commit, dir };
}

/**
 * How many applies an earlier version may take to deploy: its user applied again after a failed
 * apply. dc03610's first deploy always failed at the Salt master's restart under its own
 * orchestration, and on a loaded machine its workers' batch or the master's highstate can fail
 * again while that master comes back (l5-rehearsal-upgrade.test.ts).
 */
export const REF_APPLIES = 5;

/**
 * What an earlier version's user had to do after a failed apply, before the next: restart the
 * salt-minion of every host that no longer answers the Salt master (`saltMaster`, a minion id).
 * dc03610 restarts the Salt master under its own orchestration while its minions run Salt 3007's
 * default zmq_monitor, and such a minion's main process can hang for good in pyzmq's
 * Context.term (salt/core/files/minion.conf); no later apply of that version brings it back.
 * Returns the hosts restarted, and what the Salt master said when it did not answer itself.
 */
export async function restartSilentMinions(
  rehearsal: Rehearsal,
  saltMaster: string,
): Promise<{ restarted: string[]; masterSaid?: string }> {
  const pinged = await rehearsal.cloud.host(saltMaster).exec("salt --out=json --static --timeout=15 '*' test.ping");
  let answers: Record<string, unknown> = {};
  let masterSaid: string | undefined;
  try {
    answers = JSON.parse(pinged.stdout);
  } catch {
    masterSaid = pinged.stderr.trim() || `salt exited ${pinged.status}`;
  }
  const restarted = rehearsal.cloud.hostNames().filter((host) => answers[host] !== true);
  for (const host of restarted) {
    const result = await rehearsal.cloud.host(host).exec("/etc/init.d/salt-minion restart");
    if (result.status !== 0) throw new Error(`restarting salt-minion on ${host} failed: ${result.stderr}`);
  }
  return { restarted, ...(masterSaid === undefined ? {} : { masterSaid }) };
}
