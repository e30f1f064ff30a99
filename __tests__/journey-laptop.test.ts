/**
 * The laptop path as a new user walks it: README.md's "Deploying" commands, run exactly as written
 * (the shell blocks marked `laptop:deploy` and `laptop:destroy`), in a fresh copy of the project,
 * at a terminal that answers cdktf's approval questions, against the OpenStack API double. Local
 * state, as a laptop has by default; the providers from the toolchain's offline mirror, as a user
 * with a mirror would.
 *
 * The walk is taken once on each maintained Node.js LTS line (the toolchain's builds, first on
 * PATH, so that npm and every command it starts run on it), with OpenTofu and Terraform taking
 * turns: 22 on OpenTofu, 24 on Terraform, 26 on OpenTofu. Every line walks the whole path, each CLI
 * at least once, for one walk more than the two CLIs alone needed (docs/development.md).
 *
 * What differs from a user's laptop is only the environment: HOME holds the openrc file and the
 * SSH key the README names; TF_VAR_run_provisioners=false, the documented switch, because the
 * double's machines have no SSH to log in to (the L5 suite runs the chain for real); and the
 * kubeconfig step runs without `| sh`, which would log in to the master (an address outside this
 * machine).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { CloudTarget, doubleTarget } from "./support/target";
import { NodeBuild, nodeBuilds } from "./support/node";
import { machineNetworkEnv, runAsync, RunResult, TfCli, tfClis } from "./support/tofu";

const ROOT = path.join(__dirname, "..");
/** Installing, synthesizing and two applies against the double: minutes, not seconds. */
const LAPTOP_TIMEOUT_MS = 15 * 60 * 1000;

/** The README's shell block that follows `<!-- laptop:<name> -->`. */
export function readmeBlock(name: string): string {
  const readme = fs.readFileSync(path.join(ROOT, "README.md"), "utf8");
  const match = new RegExp(`<!-- laptop:${name} -->\\s*\`\`\`sh\\n([\\s\\S]*?)\`\`\``).exec(readme);
  if (!match) throw new Error(`README.md has no \`\`\`sh block after <!-- laptop:${name} -->`);
  return match[1];
}

/** A copy of the project as git would check it out (tracked files only: no node_modules, no build). */
function copyProject(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-laptop-"));
  const files = execFileSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" })
    .split("\0")
    .filter((file) => file && fs.existsSync(path.join(ROOT, file)));
  for (const file of files) {
    fs.mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    fs.copyFileSync(path.join(ROOT, file), path.join(dir, file));
  }
  return dir;
}

/** A home directory with what the README's commands read: ~/openrc.sh and ~/.ssh/id_ed25519. */
function userHome(double: OpenStackDouble): string {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-home-"));
  const openrc = Object.entries(double.passwordEnv()).map(([key, value]) => `export ${key}='${value}'`);
  fs.writeFileSync(path.join(home, "openrc.sh"), `${openrc.join("\n")}\n`);
  fs.mkdirSync(path.join(home, ".ssh"), { mode: 0o700 });
  execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "laptop-test", "-f", path.join(home, ".ssh", "id_ed25519")]);
  return home;
}

/** PATH with the chosen Node.js first, and the chosen CLI as the user's only `tofu` or `terraform`. */
function pathWith(build: NodeBuild, cli: TfCli): string {
  const others = [process.env.KOO_TOFU, process.env.KOO_TERRAFORM].filter((b): b is string => Boolean(b) && b !== cli.path);
  const hidden = new Set(others.map((b) => path.dirname(b)));
  const dirs = (process.env.PATH ?? "").split(path.delimiter).filter((dir) => !hidden.has(dir));
  return [path.dirname(build.node), path.dirname(cli.path), ...dirs].join(path.delimiter);
}

const TITLE = "the README's laptop commands against the OpenStack API double";

/**
 * describe() once per Node.js LTS line, oldest first, each with the next CLI in turn. A CLI's first
 * walk is titled by the CLI alone, as the walks were before there were lines to walk (the
 * test-name lists hold those titles); a later walk names its line too. Without Terraform its turn
 * goes to OpenTofu, and Terraform's walk is reported skipped, never passed.
 */
function describeEachWalk(body: (build: NodeBuild, cli: TfCli) => void): void {
  const clis = tfClis();
  const walked = new Set<string>();
  for (const [i, build] of nodeBuilds().entries()) {
    const cli = clis[i % clis.length];
    const title = walked.has(cli.name) ? `${TITLE} (${cli.name}, Node.js ${build.line})` : `${TITLE} (${cli.name})`;
    walked.add(cli.name);
    describe(title, () => body(build, cli));
  }
  if (!process.env.KOO_TERRAFORM) {
    describe.skip(`${TITLE} (terraform: none >= the minimum on PATH)`, () => it("runs on Terraform", () => undefined));
  }
}

/** Strips the terminal's colours and cursor moves, for assertions on the text. */
function plain(output: string): string {
  // eslint-disable-next-line no-control-regex
  return output.replace(/\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Z0-9]|\r/g, "");
}

describeEachWalk((build, cli) => {
  let double: OpenStackDouble;
  let target: CloudTarget;
  let project: string;
  let env: NodeJS.ProcessEnv;

  /**
   * Runs `script` in bash at a terminal (answer_prompts.py), approving cdktf's questions. Like one
   * terminal session, each step starts with the environment the previous one ended with (the
   * credentials it sourced, the ssh-agent it started, the TF_VAR_ it exported). A step that ends
   * with another `node` first on PATH than the walk's Node.js build fails the test.
   */
  async function atTerminal(script: string): Promise<RunResult & { text: string }> {
    const file = path.join(project, ".laptop-step.sh");
    const envFile = path.join(project, ".laptop-env");
    const nodeFile = path.join(project, ".laptop-node");
    fs.writeFileSync(
      file,
      `set -e\n${script}\nenv -0 > ${JSON.stringify(envFile)}\n` +
        `printf '%s %s' "$(command -v node)" "$(node --version)" > ${JSON.stringify(nodeFile)}\n`,
    );
    fs.rmSync(envFile, { force: true });
    fs.rmSync(nodeFile, { force: true });
    const python = path.join(process.env.KOO_VENV ?? "", "bin", "python");
    const result = await runAsync(
      python,
      [path.join(__dirname, "support", "answer_prompts.py"), "--approve", "Approve", "--timeout", "600", "--", "bash", file],
      { cwd: project, env },
    );
    if (fs.existsSync(envFile)) {
      env = Object.fromEntries(
        fs
          .readFileSync(envFile, "utf8")
          .split("\0")
          .filter((entry) => entry.includes("="))
          .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
      );
    }
    const ranOn = fs.existsSync(nodeFile) ? fs.readFileSync(nodeFile, "utf8") : undefined;
    if (ranOn !== undefined && ranOn !== `${build.node} v${build.version}`) {
      throw new Error(`the step ended with \`node\` at ${ranOn}, not the Node.js ${build.version} build (${build.node})`);
    }
    return { ...result, text: plain(result.stdout) };
  }

  beforeAll(async () => {
    double = await startOpenStackDouble();
    target = doubleTarget(double);
    project = copyProject();
    const home = userHome(double);
    env = {
      ...machineNetworkEnv(),
      HOME: home,
      PATH: pathWith(build, cli),
      TERM: "xterm",
      LANG: "C.UTF-8",
      // The user's npm cache, so that `npm ci` in the copy is as quick as on their laptop.
      npm_config_cache: path.join(os.homedir(), ".npm"),
      npm_config_audit: "false",
      npm_config_fund: "false",
      // Where cdktf's node-pty has no prebuilt binary (Node.js 24 and 26), npm ci compiles it with
      // node-gyp, which fetches the Node.js headers from nodejs.org; here they are the build's own.
      // Before that, prebuild-install would look for a binary on GitHub: this machine reaches
      // neither, so it is told to leave the build to node-gyp at once.
      npm_config_nodedir: build.home,
      "prebuild-install_buildFromSource": "true",
      TF_CLI_CONFIG_FILE: process.env.TF_CLI_CONFIG_FILE,
      TF_VAR_run_provisioners: "false",
    };
  }, LAPTOP_TIMEOUT_MS);

  afterAll(async () => {
    // The ssh-agent the README started.
    if (env.SSH_AGENT_PID) process.kill(Number(env.SSH_AGENT_PID));
    await double.close();
    fs.rmSync(project, { recursive: true, force: true });
  });

  afterEach(() => {
    expect(double.unhandled).toEqual([]);
  });

  let deployed: RunResult & { text: string };

  it(`runs npm, and what npm runs, on Node.js ${build.line}`, async () => {
    // The node a script of npm's runs, and the one npm runs on (its user agent names it).
    const probe = await atTerminal(`npm exec -c 'echo "node: $(node -p process.execPath)"; echo "npm: $npm_config_user_agent"'\n`);
    expect(probe.status).toBe(0);
    // npm's spinner may stand before either line.
    const execPath = /node: (\S+)$/m.exec(probe.text)?.[1];
    const agent = /npm: (npm\/.*)$/m.exec(probe.text)?.[1];
    expect({ execPath, agent }).toEqual({ execPath: build.node, agent: expect.stringContaining(` node/v${build.version} `) });
  });

  it(
    "deploys: npm ci, credentials, ssh-agent, diff, deploy",
    async () => {
      deployed = await atTerminal(readmeBlock("deploy"));
      expect({ status: deployed.status, tail: deployed.text.slice(-3000) }).toMatchObject({ status: 0 });
      const name = cli.name === "tofu" ? "OpenTofu" : "Terraform";
      expect(deployed.text).toMatch(new RegExp(`kube-on-os: using ${name} \\d+\\.\\d+\\.\\d+ \\(${cli.path}, ${cli.name} on PATH;`));
      expect(deployed.text).toContain("--skip-provider-lock");
      // A maintained line: scripts/cdktf.js has nothing to say about it.
      expect(deployed.text).not.toContain("past its end of life");
      // Before each plan, what the project uses of its quotas (docs/quotas.md).
      expect(deployed.text).toMatch(
        /^kube-on-os: quotas: the plan compares what this deployment needs with what the project has free\r?$/m,
      );
      // The stack's directory is initialised with the local backend.
      const backend = JSON.parse(
        fs.readFileSync(path.join(project, "cdktf.out", "stacks", "kube-on-os", ".terraform", "terraform.tfstate"), "utf8"),
      );
      expect(backend.backend.type).toBe("local");
      expect(deployed.text).toMatch(/Apply complete! Resources: \d+ added, 0 changed, 0 destroyed\./);
      expect(stderrFree(deployed.stderr)).toBe("");
      // The state is local, beside the project; the double holds the cluster; Nova has the key.
      expect(fs.existsSync(path.join(project, "terraform.kube-on-os.tfstate"))).toBe(true);
      const publicKey = fs.readFileSync(path.join(env.HOME as string, ".ssh", "id_ed25519.pub"), "utf8").trim();
      // The README's dotted domain: machines are named by it; the keypair, which Nova refuses
      // dots in below microversion 2.92, is not.
      expect((await target.keypairs()).map((k) => ({ ...k, publicKey: k.publicKey.trim() }))).toEqual([
        { name: "lab_example_org-deploy", publicKey },
      ]);
      expect((await target.servers()).map((s) => s.name)).toContain("salt.lab.example.org");
    },
    LAPTOP_TIMEOUT_MS,
  );

  it(
    "re-plans with no changes",
    async () => {
      expect(deployed.status).toBe(0);
      const diff = await atTerminal("npm run diff\n");
      expect({ status: diff.status, tail: diff.text.slice(-3000) }).toMatchObject({ status: 0 });
      expect(diff.text).toContain("No changes. Your infrastructure matches the configuration.");
      expect(diff.text).toContain(
        "kube-on-os: quotas: the plan compares what this deployment needs beyond what it already holds with what the project has free",
      );
      // Then the Salt preview, which has nothing to show without provisioners, and its report.
      expect(diff.text).toMatch(/^Salt preview: run_provisioners is false: the apply runs no Salt, so there is nothing to preview\r?$/m);
      expect(diff.text).toMatch(/^Salt preview: the report is cdktf\.out\/stacks\/kube-on-os\/salt-preview\.json\r?$/m);
    },
    LAPTOP_TIMEOUT_MS,
  );

  it(
    "rolls the Kubernetes nodes onto new machines, one apply each: the voters one by one, the master last",
    async () => {
      expect(deployed.status).toBe(0);
      const servers = async () => new Map((await target.servers()).map((server) => [server.name, server.id]));
      const before = await servers();
      const rolled = await atTerminal("npm run roll -- --auto-approve\n");
      expect({ status: rolled.status, tail: rolled.text.slice(-3000) }).toMatchObject({ status: 0 });
      const nodes = ["k8s-worker-0", "k8s-worker-1", "k8s-master"];
      expect(rolled.text).toContain(`kube-on-os: roll: 3 Kubernetes nodes, one at a time: ${nodes.join(", ")}`);
      // One apply per node, each replacing that node's machine and nothing else, in this order.
      const steps = [...rolled.text.matchAll(/^kube-on-os: roll (\d)\/3: ([a-z0-9-]+) \(a dqlite voter\): drained/gm)];
      expect(steps.map(([, step, host]) => `${step} ${host}`)).toEqual(nodes.map((host, i) => `${i + 1} ${host}`));
      expect(rolled.text.match(/Apply complete! Resources: .*/g)).toEqual(
        Array(3).fill("Apply complete! Resources: 1 added, 0 changed, 1 destroyed."),
      );
      expect(rolled.text).toContain("kube-on-os: roll: 3 nodes on new machines");
      const after = await servers();
      for (const host of nodes) expect(after.get(`${host}.lab.example.org`)).not.toBe(before.get(`${host}.lab.example.org`));
      for (const host of ["bastion", "salt"]) expect(after.get(`${host}.lab.example.org`)).toBe(before.get(`${host}.lab.example.org`));
      // A node that is not the deployment's is refused before any apply.
      const refused = await atTerminal("npm run roll -- --nodes k8s-worker-7 || echo status=$?\n");
      expect(refused.text).toContain(
        "kube-on-os: roll: k8s-worker-7 is not a Kubernetes node of this deployment (its nodes: k8s-master, k8s-worker-0, k8s-worker-1)",
      );
      expect(refused.text).toContain("status=1");
      expect(await servers()).toEqual(after);
    },
    LAPTOP_TIMEOUT_MS,
  );

  it(
    "prints the kubeconfig command, pointed at the API load balancer's floating IP (the double's cloud has Octavia)",
    async () => {
      const output = await atTerminal("npm run --silent output -- -raw kubeconfig_command\n");
      expect(output.status).toBe(0);
      const [loadBalancer] = await target.loadBalancers();
      expect(loadBalancer.floatingIp).not.toBeNull();
      expect(output.text).toContain(
        `ubuntu@10.1.0.10 sudo microk8s config | sed 's#server: https://[^:]*:#server: https://${loadBalancer.floatingIp}:#' > kubeconfig`,
      );
    },
    LAPTOP_TIMEOUT_MS,
  );

  it(
    "destroys everything it created, leaving the double as seeded",
    async () => {
      const destroyed = await atTerminal(readmeBlock("destroy"));
      expect({ status: destroyed.status, tail: destroyed.text.slice(-3000) }).toMatchObject({ status: 0 });
      expect(destroyed.text).toMatch(/Destroy complete! Resources: \d+ destroyed\./);
      expect(await target.resources()).toEqual([]);
    },
    LAPTOP_TIMEOUT_MS,
  );
});

/** stderr of the terminal helper, less its own closing line. */
function stderrFree(stderr: string): string {
  return stderr.replace(/^\s*answer_prompts: \d+ prompt\(s\) approved\s*$/m, "").trim();
}
