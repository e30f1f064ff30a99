/**
 * The doubles' ssh-agent (doubles/ssh-agent.ts): ready only once it accepts a connection, which a
 * socket file alone does not say.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { accepts } from "./doubles/connection";
import { startSshAgent, waitForUnixSocket } from "./doubles/ssh-agent";

describe("the doubles' ssh-agent", () => {
  let dir: string;
  const processes: ChildProcess[] = [];

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-ssh-agent-"));
  });

  afterEach(() => {
    for (const child of processes.splice(0)) child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("waits past the moment the socket exists and refuses connections, until it listens", async () => {
    // ssh-agent's order: bind (the file appears), then listen. Here a second passes in between.
    const socket = path.join(dir, "late.sock");
    const server = spawn(
      "python3",
      [
        "-c",
        "import socket, sys, time\n" +
          "s = socket.socket(socket.AF_UNIX)\ns.bind(sys.argv[1])\ntime.sleep(1)\ns.listen()\n" +
          "while True:\n    s.accept()[0].close()\n",
        socket,
      ],
      { stdio: "ignore" },
    );
    processes.push(server);
    while (!fs.existsSync(socket)) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(await accepts({ path: socket })).toBe(false);
    await waitForUnixSocket(socket, 10_000);
    expect(await accepts({ path: socket })).toBe(true);
  });

  it("fails in one line when nothing listens before the deadline", async () => {
    const socket = path.join(dir, "none.sock");
    await expect(waitForUnixSocket(socket, 200)).rejects.toThrow(`nothing accepts a connection on ${socket} after 200 ms`);
  });

  it("starts an agent that holds the deploy key", async () => {
    const key = path.join(dir, "deploy");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "kube-on-os-agent-test", "-f", key]);
    const socket = path.join(dir, "agent.sock");
    processes.push(await startSshAgent(socket, [key]));
    const listed = execFileSync("ssh-add", ["-l"], { env: { ...process.env, SSH_AUTH_SOCK: socket }, encoding: "utf8" });
    expect(listed).toContain("kube-on-os-agent-test");
  });

  it("says so at once when the agent exits instead of listening", async () => {
    const socket = path.join(dir, "missing", "agent.sock");
    await expect(startSshAgent(socket, [], 30_000)).rejects.toThrow(/^.*agent\.sock: ssh-agent exited \(\d+\)$/);
  });
});
