/**
 * The deployer's ssh-agent for the doubles that log in over SSH (the L5 hosts and the rehearsal),
 * as a user's laptop runs one: `ssh-agent -D -a SOCKET`, then `ssh-add` of the deploy key.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import { waitUntilAccepted } from "./connection";

/**
 * Waits until something accepts a connection on the Unix socket `socket`. A socket file is not
 * enough: ssh-agent binds it before it listens, and a connection in between is refused (a loaded
 * CI run's `ssh-add` failed so: "Error connecting to agent: Connection refused").
 */
export function waitForUnixSocket(socket: string, timeoutMs: number, gone: () => string | undefined = () => undefined): Promise<void> {
  return waitUntilAccepted({ path: socket }, timeoutMs, `nothing accepts a connection on ${socket}`, () => {
    const why = gone();
    return why && `${socket}: ${why}`;
  });
}

/** An ssh-agent listening on `socket` and holding each private key of `keys`; the caller ends it. */
export async function startSshAgent(socket: string, keys: string[], timeoutMs = 30_000): Promise<ChildProcess> {
  const agent = spawn("ssh-agent", ["-D", "-a", socket], { stdio: "ignore" });
  try {
    await waitForUnixSocket(socket, timeoutMs, () =>
      agent.exitCode === null && agent.signalCode === null ? undefined : `ssh-agent exited (${agent.exitCode ?? agent.signalCode})`,
    );
    for (const key of keys) execFileSync("ssh-add", ["-q", key], { env: { ...process.env, SSH_AUTH_SOCK: socket }, stdio: "pipe" });
  } catch (error) {
    agent.kill();
    throw error;
  }
  return agent;
}
