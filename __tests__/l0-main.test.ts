/**
 * The app as a newcomer runs it: `npm run synth` (scripts/cdktf.js → cdktf synth → main.ts),
 * `npx cdktf synth`, and main.ts directly.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const STACK_FILE = path.join("stacks", "kube-on-os", "cdk.tf.json");

function tempDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-main-"));
}

/** The environment without any TF_VAR_ the developer running the tests may have set. */
function cleanEnv(extra: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith("TF_VAR_")));
  return { ...env, CHECKPOINT_DISABLE: "1", ...extra };
}

function run(command: string, args: string[], extra: NodeJS.ProcessEnv, cwd = ROOT) {
  const result = spawnSync(command, args, { cwd, encoding: "utf8", env: cleanEnv(extra) });
  return { status: result.status, output: `${result.stdout}${result.stderr}`, stderr: result.stderr };
}

function npmRunSynth(outdir: string, extra: NodeJS.ProcessEnv = {}) {
  return run("node", [path.join(ROOT, "scripts", "cdktf.js"), "synth", "--output", outdir], extra);
}

/** main.ts run as cdktf.json's app command runs it, from another directory. */
function directSynth(cwd: string, extra: NodeJS.ProcessEnv = {}) {
  return run("node", ["--require", path.join(ROOT, "scripts", "register-ts.js"), path.join(ROOT, "main.ts")], extra, cwd);
}

function readStack(outdir: string): any {
  return JSON.parse(fs.readFileSync(path.join(outdir, STACK_FILE), "utf8"));
}

describe("main.ts", () => {
  it("writes the stack with the wiki's defaults, and `npx cdktf synth` gives the same JSON", () => {
    const viaNpm = tempDir();
    const viaNpx = tempDir();
    expect(npmRunSynth(viaNpm).status).toBe(0);
    expect(run("npx", ["cdktf", "synth", "--output", viaNpx], {}).status).toBe(0);
    expect(readStack(viaNpx)).toEqual(readStack(viaNpm));
    expect(readStack(viaNpm).variable.num_kube_nodes.default).toBe(3);
  });

  it("records TF_VAR_ values given to `npm run synth`, though cdktf hides TF_VAR_ from the app", () => {
    const outdir = tempDir();
    const result = npmRunSynth(outdir, { TF_VAR_num_kube_nodes: "4", TF_VAR_deploy_domain_name: "lab.example" });
    expect(result.status).toBe(0);
    const stack = readStack(outdir);
    expect(stack.variable.num_kube_nodes.default).toBe(4);
    expect(stack.variable.deploy_domain_name.default).toBe("lab.example");
  });

  it("fails `npm run synth` on a bad TF_VAR_ with the one-line reason, writing nothing", () => {
    const outdir = path.join(tempDir(), "out");
    const result = npmRunSynth(outdir, { TF_VAR_num_kube_nodes: "abc" });
    expect(result.status).not.toBe(0);
    expect(result.output).toContain(
      'kube-on-os: Invalid TF_VAR_num_kube_nodes="abc": must be a number (Terraform reads no spaces, NaN or hex).',
    );
    expect(fs.existsSync(outdir)).toBe(false);
  });

  it("leaves no earlier synth's JSON behind when a synth fails, and keeps the state", () => {
    const outdir = path.join(tempDir(), "out");
    expect(npmRunSynth(outdir).status).toBe(0);
    const state = path.join(outdir, path.dirname(STACK_FILE), "terraform.tfstate");
    fs.writeFileSync(state, "{}");
    expect(npmRunSynth(outdir, { TF_VAR_num_kube_nodes: "1026" }).status).not.toBe(0);
    expect(fs.existsSync(path.join(outdir, STACK_FILE))).toBe(false);
    expect(fs.existsSync(path.join(outdir, "manifest.json"))).toBe(false);
    expect(fs.readFileSync(state, "utf8")).toBe("{}");
  });

  it("tells a user on Node.js 20 in one line that it is past its end of life, and synthesizes all the same", () => {
    // What scripts/cdktf.js reads of the Node.js it runs on, as Node.js 20 reports it, set by a
    // preload in its process alone (cdktf and the app run on the test's Node.js).
    const preload = path.join(tempDir(), "node-20.js");
    fs.writeFileSync(preload, 'Object.defineProperty(process, "version", { value: "v20.20.2" });\n');
    const outdir = tempDir();
    const result = run("node", ["--require", preload, path.join(ROOT, "scripts", "cdktf.js"), "synth", "--output", outdir], {});
    expect({ status: result.status, lines: result.stderr.split("\n").filter((line) => line.startsWith("kube-on-os:")) }).toEqual({
      status: 0,
      lines: ["kube-on-os: Node.js 20.20.2 is past its end of life; kube-on-os is tested on Node.js 22, 24 and 26: move to one of them"],
    });
    expect(readStack(outdir).variable.num_kube_nodes.default).toBe(3);
  });

  it("synthesizes where neither OpenTofu nor Terraform is installed, as in the pipeline's synth job", () => {
    // This machine's PATH without the directories that hold a tofu or a terraform.
    const withoutClis = (process.env.PATH ?? "")
      .split(path.delimiter)
      .filter((dir) => !["tofu", "terraform"].some((cli) => fs.existsSync(path.join(dir, cli))))
      .join(path.delimiter);
    const viaNpm = tempDir();
    const npm = npmRunSynth(viaNpm, { PATH: withoutClis, CI: "1" });
    expect({ status: npm.status, output: npm.output.replace(/\s+/g, " ").slice(-600) }).toEqual({ status: 0, output: expect.any(String) });
    const direct = directSynth(tempDir(), { PATH: withoutClis });
    expect({ status: direct.status, stderr: direct.stderr }).toEqual({ status: 0, stderr: "" });
    expect(readStack(viaNpm).resource.terraform_data).toBeDefined();
  });

  it("prints exactly one line and no stack trace when run directly with a bad value", () => {
    const cwd = tempDir();
    const result = directSynth(cwd, { TF_VAR_users: '[{ username = "waldorf" }]' });
    expect(result.status).toBe(1);
    expect(result.stderr.trim().split("\n")).toEqual([
      "kube-on-os: Invalid TF_VAR_users=(not shown): element 0 must have the attributes username and ssh_public_key (lacks ssh_public_key).",
    ]);
    expect(fs.readdirSync(cwd)).toEqual([]);
  });

  it("names the TypeScript file and line in the app's stack traces (scripts/register-ts.js)", () => {
    // Inside the project, as constructs/ is, so that tsconfig's rootDir applies; not in the work tree.
    const cache = path.join(ROOT, "node_modules", ".cache");
    fs.mkdirSync(cache, { recursive: true });
    const dir = fs.mkdtempSync(path.join(cache, "kube-on-os-trace-"));
    try {
      const file = path.join(dir, "boom.ts");
      fs.writeFileSync(file, "const n: number = 1;\n\nfunction boom(): never {\n  throw new Error(`boom ${n}`);\n}\nboom();\n");
      const result = run("node", ["--require", path.join(ROOT, "scripts", "register-ts.js"), file], {});
      expect(result.status).toBe(1);
      expect(result.stderr).toContain(`at boom (${file}:4:9)`);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it("synthesizes the same JSON from the compiled JavaScript (npm run build), as npm run bench uses it", () => {
    expect(run(path.join(ROOT, "node_modules", ".bin", "tsc"), [], {}).status).toBe(0);
    const compiled = tempDir();
    const interpreted = tempDir();
    expect(run("node", [path.join(ROOT, "build", "main.js")], {}, compiled).status).toBe(0);
    expect(directSynth(interpreted).status).toBe(0);
    // The default local backend keeps state beside where synth ran, so only that path differs.
    const withoutCwd = (cwd: string) => JSON.parse(JSON.stringify(readStack(path.join(cwd, "cdktf.out"))).replaceAll(cwd, "<cwd>"));
    expect(withoutCwd(compiled)).toEqual(withoutCwd(interpreted));
  });

  it("keeps TF_VAR_root_password out of every synthesized file", () => {
    const cwd = tempDir();
    const secret = "Root-Password-Never-In-Json-1";
    expect(directSynth(cwd, { TF_VAR_root_password: secret, TF_VAR_set_root_password: "true" }).status).toBe(0);
    const files = fs.readdirSync(path.join(cwd, "cdktf.out"), { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      expect(fs.readFileSync(path.join(file.parentPath, file.name), "utf8")).not.toContain(secret);
    }
  });
});
