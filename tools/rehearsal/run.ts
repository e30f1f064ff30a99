/**
 * Commands the rehearsal runs (issue 38), apart from the engine so that a test can run them
 * without loading the stack.
 */
import { ChildProcess, spawn } from "node:child_process";

/**
 * The pinned tofu of the project's toolchain (KOO_TOFU, which scripts/toolchain/env.sh exports):
 * run through npm (`npm test`, `npm run rehearse`), which installs the toolchain first.
 */
export function tofuBinary(): string {
  const tofu = process.env.KOO_TOFU;
  if (!tofu)
    throw new Error("KOO_TOFU is not set: run through npm (npm test, npm run rehearse), which installs the toolchain and exports it");
  return tofu;
}

/** The commands running now, for stopAll(). */
const running = new Set<ChildProcess>();

/** Stops every command runAsync runs (SIGTERM) and waits for them to end: a rehearsal interrupted. */
export async function stopAll(): Promise<void> {
  const ending = [...running].map((child) => new Promise((resolve) => child.once("close", resolve)));
  for (const child of running) child.kill("SIGTERM");
  await Promise.all(ending);
}

/** A command's outcome. */
export interface RunResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * A command run without blocking the event loop: required whenever it talks to a server in this
 * process (the OpenStack double, the state server). With `input`, stdin is a pipe that receives
 * it; without, there is no stdin (Debian's bash reads ~/.bashrc when stdin is a socket, as Node's
 * pipes are). With `stamp`, `stamped` is stdout again with the second each line arrived at.
 */
export function runAsync(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; stamp?: boolean },
): Promise<RunResult & { stamped?: string }> {
  return new Promise((resolve, reject) => {
    const stdin = options.input === undefined ? "ignore" : "pipe";
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, stdio: [stdin, "pipe", "pipe"] });
    running.add(child);
    if (options.input !== undefined) {
      // A command that ends without reading all of its input (tofu reads stdin only to prompt)
      // closes the pipe under the write: its exit status is the outcome, not the EPIPE.
      child.stdin?.on("error", (error: NodeJS.ErrnoException) => error.code === "EPIPE" || reject(error));
      child.stdin?.end(options.input);
    }
    const started = Date.now();
    let stdout = "";
    let stderr = "";
    let stamped = "";
    child.stdout?.on("data", (chunk) => {
      stdout += chunk;
      if (options.stamp) stamped += String(chunk).replace(/^(?=.)/gm, `[${((Date.now() - started) / 1000).toFixed(1)} s] `);
    });
    child.stderr?.on("data", (chunk) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (status) => {
      running.delete(child);
      resolve({ status, stdout, stderr, ...(options.stamp ? { stamped } : {}) });
    });
  });
}
