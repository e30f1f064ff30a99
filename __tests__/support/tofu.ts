import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { runAsync, RunResult, tofuBinary } from "../../tools/rehearsal/run";

export type { RunResult };
export { tofuBinary };

/** A Terraform-compatible CLI the stack must work with. */
export interface TfCli {
  /** `tofu` or `terraform`, as the user would type it. */
  readonly name: "tofu" | "terraform";
  readonly path: string;
}

/**
 * Every CLI the stack is tested with: the pinned OpenTofu always, and Terraform when the machine
 * has one recent enough (KOO_TERRAFORM, set by scripts/toolchain/env.sh; it cannot be built here).
 */
export function tfClis(): TfCli[] {
  const clis: TfCli[] = [{ name: "tofu", path: tofuBinary() }];
  if (process.env.KOO_TERRAFORM) clis.push({ name: "terraform", path: process.env.KOO_TERRAFORM });
  return clis;
}

/**
 * describe() once per CLI in `tfClis()`, named after it; Terraform missing from the machine is
 * reported as a skipped suite, never a silent pass.
 */
export function describeEachCli(title: string, body: (cli: TfCli) => void): void {
  for (const cli of tfClis()) describe(`${title} (${cli.name})`, () => body(cli));
  if (!process.env.KOO_TERRAFORM) {
    describe.skip(`${title} (terraform: none >= the minimum on PATH)`, () => it("runs on Terraform", () => undefined));
  }
}

/**
 * How the tests run OpenTofu and Terraform: Go's garbage collector off until a process holds
 * 512 MiB, then on again (GOGC=off with GOMEMLIMIT, the Go runtime's own settings; the providers
 * inherit them). The suites run thousands of plans and applies of a few seconds, which never
 * collect much: a plan of the whole stack takes a fifth less CPU (docs/decisions.md, "The
 * longest suite comes first on the cores"). The collector has no say in what a plan or apply
 * does; the journeys run the README's commands with the user's environment, and so Go's default.
 */
const TEST_GO_GC: NodeJS.ProcessEnv = { GOGC: "off", GOMEMLIMIT: "512MiB" };

/** The environment of every CLI run here: this process's, in automation mode, then `env`. */
export function tfEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...process.env, TF_IN_AUTOMATION: "1", ...TEST_GO_GC, ...env };
}

/** Runs `cli` (OpenTofu or Terraform) with `-no-color`, in automation mode. */
export function runTf(cli: TfCli, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): RunResult {
  const result = spawnSync(cli.path, [...args, "-no-color"], {
    cwd,
    encoding: "utf8",
    env: tfEnv(env),
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

export function runTofu(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): RunResult {
  return runTf({ name: "tofu", path: tofuBinary() }, args, cwd, env);
}

/** A command run without blocking the event loop (the rehearsal engine's). */
export { runAsync };

/** runTf without blocking the event loop (see runAsync). */
export function runTfAsync(
  cli: TfCli,
  args: string[],
  cwd: string,
  env: NodeJS.ProcessEnv = {},
  input = "",
  stamp = false,
): Promise<RunResult & { stamped?: string }> {
  return runAsync(cli.path, [...args, "-no-color"], { cwd, env: tfEnv(env), input, stamp });
}

/** runTofu without blocking the event loop (see runAsync). */
export function runTofuAsync(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, input = ""): Promise<RunResult> {
  return runTfAsync({ name: "tofu", path: tofuBinary() }, args, cwd, env, input);
}

/** `npm run repair`'s code (scripts/repair.js), its refusals one line on stderr as the npm script prints them. */
const REPAIR =
  `const { repair, parseRepairArgs, RepairError } = require(${JSON.stringify(path.join(__dirname, "..", "..", "scripts", "repair.js"))});\n` +
  "try {\n" +
  "  process.exitCode = repair({ cli: process.argv[1], stackDir: process.cwd(), env: process.env, options: parseRepairArgs(process.argv.slice(2)) });\n" +
  "} catch (error) {\n" +
  "  if (!(error instanceof RepairError)) throw error;\n" +
  "  console.error(`kube-on-os: repair: ${error.message}`);\n" +
  "  process.exitCode = 1;\n" +
  "}\n";

/**
 * `npm run repair -- ARGS` after its synth: scripts/repair.js's repair() with `cli` in the
 * synthesized stack `dir`, in a process of its own (a double may answer in this one). Its lines go
 * to stderr, each apply's output to stdout.
 */
export function repairRun(cli: TfCli, dir: string, env: NodeJS.ProcessEnv, args: string[]): Promise<RunResult> {
  return runAsync(process.execPath, ["-e", REPAIR, cli.path, ...args], { cwd: dir, env: tfEnv({ ...env, TF_CLI_ARGS: "-no-color" }) });
}

/** `init` without a backend: offline, from the mirror, needing no state server. */
export function initOffline(dir: string, cli: TfCli = { name: "tofu", path: tofuBinary() }): RunResult {
  const result = runTf(cli, ["init", "-backend=false", "-input=false"], dir);
  if (result.status !== 0) throw new Error(`${cli.name} init failed in ${dir}:\n${result.stderr}${result.stdout}`);
  return result;
}

/**
 * The machine's own network settings (the package registries' certificate authorities, proxies,
 * Go's proxy), for a test that runs commands in a made-up environment the way a user's shell or a
 * runner on this machine would run them.
 */
export function machineNetworkEnv(): NodeJS.ProcessEnv {
  const names =
    /^(NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|PIP_CERT|REQUESTS_CA_BUNDLE|CURL_CA_BUNDLE|GIT_SSL_CAINFO|GOPROXY|GOSUMDB|GONOSUMDB|GOPRIVATE|GOFLAGS|(https?|no)_proxy|(HTTPS?|NO)_PROXY)$/;
  return Object.fromEntries(Object.entries(process.env).filter(([key]) => names.test(key)));
}
