/**
 * Hosts for the provisioning chain to log in to: one OpenSSH server in a network namespace of
 * our own, where whole address ranges (the double's floating IPs, the private network) are
 * local. Connections to a floating IP reach it through a veth pair; the bastion hop to a
 * private address stays inside the namespace. No packet leaves the machine, and the machine's
 * own routes are left alone: the public ranges must not overlap any of them.
 *
 * Sessions run as a throw-away deploy user with passwordless sudo that keeps the environment,
 * so the provisioner scripts find the fake salt/cloud-init programs and the test's directories
 * through `env` (sshd's SetEnv). Needs root (namespaces, useradd, sudoers), as CI runs, and
 * scripts/toolchain/ssh-hosts.sh (sshd, sudo).
 */
import { ChildProcess, execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import ipaddr from "ipaddr.js";
import { waitUntilAccepted } from "../connection";
import { startSshAgent } from "../ssh-agent";

export interface SshHostsOptions {
  /** Address ranges reached from the test's side (floating IPs): local in the namespace and routed to it. */
  readonly publicCidrs: string[];
  /** Address ranges local in the namespace only, reached through the bastion hop (the private network). */
  readonly privateCidrs: string[];
  /** Environment for every session (PATH included). */
  readonly env: Record<string, string>;
  /** @default process.env.KOO_SSHD (scripts/toolchain/env.sh), else /usr/sbin/sshd */
  readonly sshd?: string;
}

export interface SshHosts {
  /** The deploy user, unique to this process. */
  readonly user: string;
  /** The server's host key, as a public key line, for ssh_host_keys. */
  readonly hostKey: string;
  /** SSH_AUTH_SOCK of an agent holding the deploy user's key. */
  readonly agentEnv: { SSH_AUTH_SOCK: string };
  /** The deploy user's home. */
  readonly home: string;
  /** sshd's own log (connections, forwarding). */
  log(): string;
  close(): Promise<void>;
}

const USER_PREFIX = "koo-e2e-";
const NAMESPACE_PREFIX = "koo-ns-";

function run(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): string {
  return execFileSync(command, args, { encoding: "utf8", env, stdio: ["ignore", "pipe", "pipe"] });
}

function overlaps(a: string, b: string): boolean {
  const [aNet, aBits] = ipaddr.IPv4.parseCIDR(a);
  const [bNet, bBits] = ipaddr.IPv4.parseCIDR(b);
  return aNet.match(bNet, Math.min(aBits, bBits));
}

/** Refuses a public range that any route of this machine already covers: it would be diverted. */
function checkRoutes(cidrs: string[]): void {
  const routes = JSON.parse(run("ip", ["-j", "-4", "route", "show", "table", "all"])) as { dst: string; dev?: string }[];
  for (const cidr of cidrs) {
    for (const route of routes) {
      if (route.dst === "default" || !/^[0-9.]+(\/\d+)?$/.test(route.dst)) continue;
      const dst = route.dst.includes("/") ? route.dst : `${route.dst}/32`;
      if (overlaps(cidr, dst)) throw new Error(`ssh hosts: ${cidr} overlaps this machine's route to ${route.dst} (dev ${route.dev})`);
    }
  }
}

/** The users, sudoers files and namespaces (with their veth pairs and routes) of crashed earlier runs. */
function removeStale(): void {
  const pidOf = (name: string, prefix: string) => (name.startsWith(prefix) ? Number(name.slice(prefix.length)) : NaN);
  const gone = (pid: number) => Number.isInteger(pid) && !fs.existsSync(`/proc/${pid}`);
  for (const line of fs.readFileSync("/etc/passwd", "utf8").split("\n")) {
    const name = line.split(":")[0];
    if (!gone(pidOf(name, USER_PREFIX))) continue;
    fs.rmSync(`/etc/sudoers.d/${name}`, { force: true });
    // Sessions of a crashed run outlive its sshd; userdel refuses a user that still has processes.
    spawnSync("bash", [
      "-c",
      'pkill -KILL -u "$1"; for _ in $(seq 50); do pgrep -u "$1" >/dev/null || exit 0; sleep 0.1; done',
      "bash",
      name,
    ]);
    run("userdel", [name]);
  }
  for (const line of run("ip", ["netns", "list"]).split("\n")) {
    const name = line.split(" ")[0];
    if (gone(pidOf(name, NAMESPACE_PREFIX))) run("ip", ["netns", "del", name]);
  }
}

export async function startSshHosts(options: SshHostsOptions): Promise<SshHosts> {
  if (process.getuid?.() !== 0) throw new Error("ssh hosts: the provisioning test needs root (network namespaces, useradd, sudoers)");
  const sshdBinary = options.sshd ?? process.env.KOO_SSHD ?? "/usr/sbin/sshd";
  if (!fs.existsSync(sshdBinary)) throw new Error(`ssh hosts: no sshd at ${sshdBinary}; run scripts/toolchain.sh`);
  checkRoutes(options.publicCidrs);
  removeStale();

  const user = `${USER_PREFIX}${process.pid}`;
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-ssh-"));
  fs.chmodSync(root, 0o755);
  const home = path.join(root, "home");
  const namespace = `${NAMESPACE_PREFIX}${process.pid}`;
  // Interface names have at most 15 characters; a pid has at most 7 digits.
  const [hostSide, nsSide] = [`kooh${process.pid}`, `koon${process.pid}`];
  // A /30 of link-local addresses per process, so that two runs on one machine do not collide.
  const link = `169.254.${(process.pid >> 6) % 256}.${(process.pid % 64) * 4}`;
  const [hostAddress, nsAddress] = [1, 2].map((n) => link.replace(/\d+$/, (last) => String(Number(last) + n)));
  const sudoers = `/etc/sudoers.d/${user}`;
  const processes: ChildProcess[] = [];
  const cleanups: (() => void)[] = [];

  const close = async () => {
    for (const child of processes.reverse()) {
      child.kill("SIGTERM");
      if (child.exitCode === null) await new Promise((resolve) => child.once("exit", resolve));
    }
    for (const cleanup of cleanups.reverse()) {
      try {
        cleanup();
      } catch {
        // Best effort: a half-built setup still tears down the rest.
      }
    }
    fs.rmSync(root, { recursive: true, force: true });
  };

  try {
    run("useradd", ["--home-dir", home, "--create-home", "--shell", "/bin/bash", user]);
    cleanups.push(() => run("userdel", [user]));
    // No password, yet not locked: sshd (without PAM) refuses a locked account even for keys.
    run("usermod", ["-p", "*", user]);
    fs.writeFileSync(sudoers, `Defaults:${user} !env_reset, !secure_path, !requiretty\n${user} ALL=(root) NOPASSWD: ALL\n`, {
      mode: 0o440,
    });
    cleanups.push(() => fs.rmSync(sudoers, { force: true }));
    run("visudo", ["-cf", sudoers]);

    for (const key of ["client", "host"])
      run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", `kube-on-os-${key}`, "-f", path.join(root, key)]);
    fs.mkdirSync(path.join(home, ".ssh"), { mode: 0o700 });
    fs.copyFileSync(path.join(root, "client.pub"), path.join(home, ".ssh", "authorized_keys"));
    run("chown", ["-R", `${user}:`, home]);

    const agentSocket = path.join(root, "agent.sock");
    processes.push(await startSshAgent(agentSocket, [path.join(root, "client")]));

    run("ip", ["netns", "add", namespace]);
    cleanups.push(() => run("ip", ["netns", "del", namespace]));
    const inNs = (...args: string[]) => run("ip", ["netns", "exec", namespace, ...args]);
    run("ip", ["link", "add", hostSide, "type", "veth", "peer", "name", nsSide, "netns", namespace]);
    // Deleting one end deletes both, and with them the routes through them.
    cleanups.push(() => run("ip", ["link", "del", hostSide]));
    run("ip", ["addr", "add", `${hostAddress}/30`, "dev", hostSide]);
    run("ip", ["link", "set", hostSide, "up"]);
    inNs("ip", "link", "set", "lo", "up");
    inNs("ip", "addr", "add", `${nsAddress}/30`, "dev", nsSide);
    inNs("ip", "link", "set", nsSide, "up");
    for (const cidr of options.publicCidrs) run("ip", ["route", "add", cidr, "via", nsAddress]);
    for (const cidr of [...options.publicCidrs, ...options.privateCidrs]) inNs("ip", "route", "add", "local", cidr, "dev", "lo");

    const setEnv = Object.entries(options.env)
      .map(([key, value]) => `${key}=${value}`)
      .join(" ");
    const config = path.join(root, "sshd_config");
    fs.writeFileSync(
      config,
      [
        "Port 22",
        // Inside the namespace: every address there is one of the test's hosts.
        "ListenAddress 0.0.0.0",
        `HostKey ${path.join(root, "host")}`,
        `PidFile ${path.join(root, "sshd.pid")}`,
        `AuthorizedKeysFile ${path.join(home, ".ssh", "authorized_keys")}`,
        "PasswordAuthentication no",
        "KbdInteractiveAuthentication no",
        "UsePAM no",
        "PermitRootLogin no",
        `AllowUsers ${user}`,
        "AllowTcpForwarding yes",
        "StrictModes no",
        "LogLevel VERBOSE",
        `SetEnv ${setEnv}`,
        "",
      ].join("\n"),
    );
    fs.mkdirSync("/run/sshd", { recursive: true, mode: 0o755 });
    const sshdLog = path.join(root, "sshd.log");
    const sshd = spawn("ip", ["netns", "exec", namespace, sshdBinary, "-D", "-E", sshdLog, "-f", config], { stdio: "ignore" });
    processes.push(sshd);
    const [probe] = options.publicCidrs[0].split("/");
    const sshdAddress = probe.replace(/\.0$/, ".250");
    await waitUntilAccepted({ host: sshdAddress, port: 22 }, 10_000, `ssh hosts: nothing listens on ${sshdAddress}:22`);

    return {
      user,
      hostKey: fs.readFileSync(path.join(root, "host.pub"), "utf8").trim(),
      agentEnv: { SSH_AUTH_SOCK: agentSocket },
      home,
      log: () => (fs.existsSync(sshdLog) ? fs.readFileSync(sshdLog, "utf8") : ""),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
