/**
 * One machine of the rehearsal: an overlay of its own on the Debian root
 * (scripts/toolchain/debian-root.sh), entered in a network namespace the cloud made for it and
 * in mount, UTS and PID namespaces of its own. Its PID 1 is a small reaper (image/init); every
 * program on it runs through `nsenter` into those namespaces and its root, so what it writes and
 * names stays on it. Killing PID 1 ends every process of the host at once, as a power-off does.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

export interface HostOptions {
  /** The server's name (its FQDN). */
  readonly name: string;
  /** The network namespace (`ip netns`) the cloud wired for it. */
  readonly netns: string;
  /** The Debian root every host is an overlay on. */
  readonly base: string;
  /** A directory of the host's own: its overlay's upper layer and logs. */
  readonly dir: string;
  /** Files laid into the overlay before boot (path in the host → content and mode). */
  readonly files: Record<string, { content: string | Buffer; mode?: number }>;
}

export interface ExecResult {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** The environment a login shell on Debian would have; nothing of this machine's leaks in. */
export const HOST_ENV = {
  PATH: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
  HOME: "/root",
  LANG: "C.UTF-8",
  TERM: "dumb",
};

export class Host {
  readonly upper: string;
  private readonly work: string;
  readonly merged: string;
  private init?: ChildProcess;
  /** PID 1 of the host, as this machine sees it. */
  pid = 0;

  constructor(readonly options: HostOptions) {
    [this.upper, this.work, this.merged] = ["upper", "work", "merged"].map((name) => path.join(options.dir, name));
  }

  get name(): string {
    return this.options.name;
  }

  /** Builds the overlay and starts PID 1; returns once `nsenter` can enter the host. */
  async start(): Promise<void> {
    for (const dir of [this.upper, this.work, this.merged]) fs.mkdirSync(dir, { recursive: true });
    for (const [file, { content, mode }] of Object.entries(this.options.files)) {
      const target = path.join(this.upper, file);
      fs.mkdirSync(path.dirname(target), { recursive: true });
      fs.writeFileSync(target, content, { mode: mode ?? 0o644 });
      fs.chmodSync(target, mode ?? 0o644);
    }
    const script = [
      `m=${this.merged}`,
      `mount -t overlay overlay -o lowerdir=${this.options.base},upperdir=${this.upper},workdir=${this.work} "$m"`,
      'mount -t proc proc "$m/proc"',
      // Mounted inside the network namespace, sysfs shows the host's own interfaces.
      'mount -t sysfs sysfs "$m/sys"',
      'mount -t tmpfs -o mode=0755,nosuid,nodev tmpfs "$m/run"',
      // A /dev of its own: the basic character devices, a private devpts, and its volumes.
      'mount -t tmpfs -o mode=0755,nosuid tmpfs "$m/dev"',
      'for d in "null 1 3" "zero 1 5" "full 1 7" "random 1 8" "urandom 1 9" "tty 5 0"; do set -- $d; mknod -m 0666 "$m/dev/$1" c $2 $3; done',
      'mkdir -p "$m/dev/pts" "$m/dev/shm" "$m/dev/disk/by-id"',
      'mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$m/dev/pts"',
      'ln -s pts/ptmx "$m/dev/ptmx"',
      'ln -s /proc/self/fd "$m/dev/fd"',
      'mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs "$m/dev/shm"',
      `hostname ${JSON.stringify(this.options.name.split(".")[0])}`,
      // chroot does not change the working directory: PID 1 starts in its new root's top.
      'cd "$m"',
      'exec chroot "$m" /usr/bin/python3 /usr/local/lib/koo-rehearsal/init',
    ].join("\n");
    const log = fs.openSync(path.join(this.options.dir, "init.log"), "a");
    // A session of its own: a terminal's Ctrl-C reaches the rehearsal, which powers the host off,
    // and not the host's processes behind its back.
    this.init = spawn(
      "ip",
      ["netns", "exec", this.options.netns, "unshare", "--mount", "--uts", "--pid", "--fork", "bash", "-euc", script],
      {
        stdio: ["ignore", log, log],
        detached: true,
      },
    );
    fs.closeSync(log);
    const deadline = Date.now() + 20_000;
    for (;;) {
      this.pid = this.initPid();
      if (this.pid && fs.existsSync(`/proc/${this.pid}/root/usr/local/lib/koo-rehearsal/init`)) {
        const probe = await this.exec("test -d /proc/1 && hostname");
        if (probe.status === 0) return;
      }
      if (this.init.exitCode !== null || this.init.signalCode !== null)
        throw new Error(`host ${this.name}: did not start: ${fs.readFileSync(path.join(this.options.dir, "init.log"), "utf8")}`);
      if (Date.now() > deadline) throw new Error(`host ${this.name}: PID 1 did not come up in 20 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** unshare's child: the host's PID 1. */
  private initPid(): number {
    const unshare = this.init?.pid;
    if (!unshare) return 0;
    try {
      const children = fs.readFileSync(`/proc/${unshare}/task/${unshare}/children`, "utf8").trim();
      return Number(children.split(" ")[0]) || 0;
    } catch {
      return 0;
    }
  }

  private enter(command: string): string[] {
    return [
      "nsenter",
      `--target=${this.pid}`,
      "--mount",
      "--uts",
      "--pid",
      "--net",
      "--root",
      // The target's working directory, its root's top (a path here would be resolved outside it).
      "--wd",
      "env",
      "-i",
      ...Object.entries(HOST_ENV).map(([k, v]) => `${k}=${v}`),
      "/bin/bash",
      "-c",
      `cd / && ${command}`,
    ];
  }

  /** Runs `command` (bash) as root on the host. */
  exec(command: string, options: { input?: string; timeoutMs?: number } = {}): Promise<ExecResult> {
    const [program, ...args] = this.enter(command);
    return new Promise((resolve) => {
      const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      child.stderr.on("data", (chunk) => (stderr += chunk));
      const timer = options.timeoutMs ? setTimeout(() => child.kill("SIGKILL"), options.timeoutMs) : undefined;
      child.on("close", (status) => {
        if (timer) clearTimeout(timer);
        resolve({ status, stdout, stderr });
      });
      // A command that exits before reading its input closes the pipe: EPIPE on a write that no
      // longer matters (its exit status says what happened), not an error of the rehearsal.
      child.stdin.on("error", () => undefined);
      child.stdin.end(options.input ?? "");
    });
  }

  /** Runs `command` on the host, detached from this process; its output goes to `log` on the host. */
  detach(command: string, log: string): void {
    const [program, ...args] = this.enter(`setsid bash -c ${shellQuote(command)} >>${log} 2>&1 </dev/null &`);
    execFileSync(program, args, { stdio: "ignore" });
  }

  /** Powers the host off: PID 1 dies, and with it every process; the overlay goes with the mount namespace. */
  async stop(): Promise<void> {
    const init = this.init;
    // Ended: exited, or killed by a signal (then exitCode stays null).
    if (!init || init.exitCode !== null || init.signalCode !== null) return;
    if (this.pid) {
      try {
        process.kill(this.pid, "SIGKILL");
      } catch {
        // already gone
      }
    }
    await new Promise((resolve) => {
      if (init.exitCode !== null) resolve(undefined);
      else init.once("exit", resolve);
    });
  }
}

export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}
