/**
 * L5: `npm run rehearse` (tools/rehearsal/cli.ts) as a user runs it, where it must stop before or
 * during a rehearsal: a configuration this machine cannot host is refused before anything boots,
 * and Ctrl-C at a terminal leaves nothing of the rehearsal behind. What a whole rehearsal reports
 * is checked on the rehearsal's own first apply (l5-rehearsal.test.ts), not by another one.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { rehearsalAvailable } from "./doubles/rehearsal/rehearsal";
import { HOST_MIB } from "../tools/rehearsal/memory";
import { runAsync } from "./support/tofu";

const ROOT = path.resolve(__dirname, "..");
const CLI = [path.join(ROOT, "tools", "rehearsal", "cli.ts")];
const REGISTER = ["--require", path.join(ROOT, "scripts", "register-ts.js")];

const alive = (pid: number) => fs.existsSync(`/proc/${pid}`);

/**
 * What rehearsals whose process has ended left on this machine: their namespaces (`koo<pid>…`),
 * their directories (`kube-on-os-rehearsal-*`, which name their owner in cloud/owner.pid), the
 * processes running from those directories, and loop devices backed by their volumes.
 */
function deadRehearsalsLeftovers(): string[] {
  const found: string[] = [];
  const namespaces = spawnSync("ip", ["netns", "list"], { encoding: "utf8" }).stdout.split("\n");
  for (const name of namespaces.map((line) => line.split(" ")[0])) {
    const owner = /^koo(\d+)(cloud|h\d+)$/.exec(name);
    if (owner && !alive(Number(owner[1]))) found.push(`namespace ${name}`);
  }
  const dead = new Set<string>();
  for (const entry of fs.readdirSync(os.tmpdir()).filter((name) => name.startsWith("kube-on-os-rehearsal-"))) {
    const dir = path.join(os.tmpdir(), entry);
    const ownerFile = path.join(dir, "cloud", "owner.pid");
    if (fs.existsSync(ownerFile) && !alive(Number(fs.readFileSync(ownerFile, "utf8")))) {
      found.push(`directory ${dir}`);
      dead.add(dir);
    }
  }
  for (const pid of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
    let cmdline = "";
    try {
      cmdline = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").replace(/\0/g, " ");
    } catch {
      continue;
    }
    const dir = /(\/\S*kube-on-os-rehearsal-[A-Za-z0-9]+)/.exec(cmdline)?.[1];
    if (dir && (dead.has(dir) || !fs.existsSync(dir))) found.push(`process ${pid} ${cmdline.slice(0, 120)}`);
  }
  const loops = JSON.parse(spawnSync("losetup", ["--json", "--list"], { encoding: "utf8" }).stdout || '{"loopdevices":[]}');
  for (const loop of loops.loopdevices as { name: string; "back-file": string | null }[]) {
    const backing = loop["back-file"] ?? "";
    if (/kube-on-os-rehearsal-/.test(backing) && (/\(deleted\)/.test(backing) || [...dead].some((dir) => backing.startsWith(dir)))) {
      found.push(`loop ${loop.name} ${backing}`);
    }
  }
  return found;
}

describe("the rehearsal's commands (tools/rehearsal/run.ts)", () => {
  it("ends with the command's own status when it exits without reading its input, as tofu does", async () => {
    // More than a pipe holds: the rest is written after the command has closed its end (EPIPE),
    // as the fresh-clone run of f42712d saw in a plan that gave tofu an empty stdin.
    const result = await runAsync("sh", ["-c", "exit 3"], { input: "x".repeat(1 << 20) });
    expect(result).toEqual({ status: 3, stdout: "", stderr: "" });
  });
});

const available = rehearsalAvailable();
(available.ok ? describe : describe.skip)(`L5: npm run rehearse${available.ok ? "" : ` (skipped: ${available.reason})`}`, () => {
  it("refuses a configuration this machine cannot host, in one line with the estimate and what is available, booting nothing", async () => {
    const totalMiB = Number(/^MemTotal:\s+(\d+) kB$/m.exec(fs.readFileSync("/proc/meminfo", "utf8"))![1]) / 1024;
    const nodes = Math.ceil(totalMiB / HOST_MIB.node) + 1;
    const before = new Set(deadRehearsalsLeftovers());
    // The user's own cloud in the environment, which the rehearsal must never ask: its plan would
    // fail on it (nothing listens on port 1), and the refusal below comes only after the plan.
    const clouds = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-clouds-")), "clouds.yaml");
    fs.writeFileSync(
      clouds,
      "clouds:\n  mine:\n    auth:\n      auth_url: http://127.0.0.1:1/v3\n      application_credential_id: x\n      application_credential_secret: y\n    auth_type: v3applicationcredential\n",
    );
    const result = await runAsync(process.execPath, [...REGISTER, ...CLI], {
      cwd: ROOT,
      env: {
        ...process.env,
        TF_VAR_num_kube_nodes: String(nodes),
        OS_CLOUD: "mine",
        OS_CLIENT_CONFIG_FILE: clouds,
        OS_INTERFACE: "internal",
      },
    });
    fs.rmSync(path.dirname(clouds), { recursive: true, force: true });
    expect({ status: result.status, stdout: result.stdout }).toEqual({ status: 1, stdout: "" });
    expect(result.stderr.trimEnd().split("\n")).toEqual([
      expect.stringMatching(
        new RegExp(
          `^rehearse: this configuration needs about \\d+ MiB \\(1 bastion, 1 Salt master, ${nodes} Kubernetes nodes, and the engine\\), ` +
            `and this machine has \\d+ MiB available: rehearse fewer nodes \\(TF_VAR_num_kube_nodes, TF_VAR_node_pools\\) or free memory$`,
        ),
      ),
    ]);
    expect(deadRehearsalsLeftovers().filter((leftover) => !before.has(leftover))).toEqual([]);
  });

  it("refuses an argument it does not know, in one line", async () => {
    const result = await runAsync(process.execPath, [...REGISTER, ...CLI, "--form", "v1"], { cwd: ROOT, env: process.env });
    expect({ status: result.status, stderr: result.stderr }).toEqual({
      status: 1,
      stderr: 'rehearse: unknown argument "--form": usage: npm run rehearse [-- [--from REF] [--json FILE]]\n',
    });
  });

  it("refuses a --from that names no commit, in one line, booting nothing", async () => {
    const before = new Set(deadRehearsalsLeftovers());
    const result = await runAsync(process.execPath, [...REGISTER, ...CLI, "--from", "no-such-ref"], { cwd: ROOT, env: process.env });
    expect({ status: result.status, stdout: result.stdout, stderr: result.stderr }).toEqual({
      status: 1,
      stdout: "",
      stderr: "rehearse: --from no-such-ref: not a commit of this repository (give a tag, a branch or a commit id)\n",
    });
    expect(deadRehearsalsLeftovers().filter((leftover) => !before.has(leftover))).toEqual([]);
  });

  it("removes every host, namespace, volume and process it made when Ctrl-C stops it at a terminal", async () => {
    // What earlier rehearsals that crashed left (the next rehearsal's start removes their hosts) is not this one's.
    const before = new Set(deadRehearsalsLeftovers());
    const python = path.join(process.env.KOO_VENV ?? "", "bin", "python");
    const command = `exec ${[process.execPath, ...REGISTER, ...CLI].map((arg) => JSON.stringify(arg)).join(" ")}`;
    const result = await runAsync(
      python,
      [
        path.join(__dirname, "support", "answer_prompts.py"),
        "--approve",
        "^$ never",
        "--interrupt",
        "\\S+ boots",
        "--timeout",
        "600",
      ].concat(["--", "bash", "-c", command]),
      // A terminal outside CI: the progress lines.
      { cwd: ROOT, env: { ...process.env, CI: "", TF_VAR_num_kube_nodes: "1" } },
    );
    const text = result.stdout.replace(/\r/g, "");
    // At a terminal: a line per step, until the interrupt.
    expect(text).toMatch(/^rehearse: starting the offline cloud/m);
    expect(text).toMatch(/^rehearse: applying: 3 machines boot with cloud-init/m);
    expect(text).toMatch(/^rehearse: \S+ boots$/m);
    // The terminal echoes the key as ^C. Then nothing but the cleanup: no report.
    expect(text).toMatch(/^(\^C)?rehearse: SIGINT: removing the rehearsal's machines and networks$/m);
    expect(text.slice(text.indexOf("SIGINT"))).not.toMatch(/reading each host|^apply:/m);
    expect(result.status).toBe(130);
    expect(deadRehearsalsLeftovers().filter((leftover) => !before.has(leftover))).toEqual([]);
  }, 600_000);
});
