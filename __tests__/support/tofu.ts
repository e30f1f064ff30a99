import { spawn, spawnSync } from "node:child_process";

export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * The pinned tofu from the project's toolchain. npm test installs it and exports KOO_TOFU; run
 * jest through `npm test` (or source scripts/toolchain/env.sh) rather than bare.
 */
export function tofuBinary(): string {
  const tofu = process.env.KOO_TOFU;
  if (!tofu) {
    throw new Error("KOO_TOFU is not set: run the tests with `npm test`, which installs the toolchain and exports it");
  }
  return tofu;
}

export function runTofu(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): RunResult {
  const result = spawnSync(tofuBinary(), [...args, "-no-color"], {
    cwd,
    encoding: "utf8",
    env: { ...process.env, TF_IN_AUTOMATION: "1", ...env },
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/**
 * runTofu without blocking the event loop: required whenever a server tofu talks to (the
 * OpenStack double, the state server) runs in the test's own process.
 */
export function runTofuAsync(args: string[], cwd: string, env: NodeJS.ProcessEnv = {}, input = ""): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(tofuBinary(), [...args, "-no-color"], { cwd, env: { ...process.env, TF_IN_AUTOMATION: "1", ...env } });
    child.stdin.end(input);
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => (stdout += chunk));
    child.stderr.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, stdout, stderr }));
  });
}

/** `tofu init` without a backend: offline, from the mirror, needing no state server. */
export function initOffline(dir: string): RunResult {
  const result = runTofu(["init", "-backend=false", "-input=false"], dir);
  if (result.status !== 0) throw new Error(`tofu init failed in ${dir}:\n${result.stderr}${result.stdout}`);
  return result;
}
