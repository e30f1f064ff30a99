/**
 * The dependency-graph tools as people run them, on real `tofu graph` output: `npm run graph`
 * (scripts/graph.js, docs/graph.svg) and scripts/provisioner-steps.js.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { synthStack, TerraformJson } from "./support/synth";

const ROOT = path.resolve(__dirname, "..");
const PROVISIONER_TYPES = ["terraform_data", "null_resource"];

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
}

function runScript(script: string, args: string[], env: NodeJS.ProcessEnv = {}) {
  const result = spawnSync("node", [path.join(ROOT, "scripts", script), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, ...env },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

interface Steps {
  sequentialSteps: number;
  provisionerResources: number;
  longestChain: string[];
}

function steps(args: string[], env: NodeJS.ProcessEnv = {}): Steps {
  const result = runScript("provisioner-steps.js", [...args, "--json"], env);
  if (result.status !== 0) throw new Error(`provisioner-steps failed:\n${result.stderr}`);
  return JSON.parse(result.stdout);
}

/** Every resource and data source address of a synthesized stack. */
function addresses(json: TerraformJson): string[] {
  const of = (blocks: Record<string, Record<string, unknown>> = {}, prefix = "") =>
    Object.entries(blocks).flatMap(([type, resources]) => Object.keys(resources).map((name) => `${prefix}${type}.${name}`));
  return [...of(json.resource), ...of(json.data, "data.")];
}

describe("provisioner-steps", () => {
  const fixture = path.join(__dirname, "fixtures", "provisioner-chain");

  it("reports the longest chain of provisioners in a known configuration", () => {
    const result = runScript("provisioner-steps.js", ["--dir", fixture]);
    expect(result.status).toBe(0);
    expect(result.stdout).toBe(
      [
        "sequential provisioner steps: 4",
        "provisioner resources: 5",
        "longest chain: terraform_data.a -> terraform_data.b -> terraform_data.c -> module.last.terraform_data.step",
        "",
      ].join("\n"),
    );
  });

  it("counts a resource with count as one step, however many instances it has", () => {
    expect(steps(["--dir", fixture], { TF_VAR_nodes: "50" })).toEqual(steps(["--dir", fixture], { TF_VAR_nodes: "1" }));
  });

  it("leaves the configuration directory as it was", () => {
    expect(fs.readdirSync(fixture).sort()).toEqual(["last-step", "main.tf.json"]);
  });

  it("reads DOT that tofu graph printed, from standard input", () => {
    const dot = [
      "digraph {",
      '\tsubgraph "root" {',
      '\t\t"[root] null_resource.late (expand)" -> "[root] openstack_compute_instance_v2.vm (expand)"',
      '\t\t"[root] openstack_compute_instance_v2.vm (expand)" -> "[root] terraform_data.early (expand)"',
      '\t\t"[root] terraform_data.early (expand)" -> "[root] var.x (expand, reference)"',
      "\t}",
      "}",
    ].join("\n");
    const result = spawnSync("node", [path.join(ROOT, "scripts", "provisioner-steps.js"), "--dot", "-", "--json"], {
      input: dot,
      encoding: "utf8",
    });
    expect(JSON.parse(result.stdout)).toEqual({
      sequentialSteps: 2,
      provisionerResources: 2,
      longestChain: ["terraform_data.early", "null_resource.late"],
    });
  });

  it("rejects DOT it does not understand rather than dropping edges", () => {
    const result = spawnSync("node", [path.join(ROOT, "scripts", "provisioner-steps.js"), "--dot", "-"], {
      input: 'digraph {\n\t"a" -> "b" -> "c"\n}\n',
      encoding: "utf8",
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toBe('provisioner-steps: unexpected line 2 in tofu\'s DOT: "a" -> "b" -> "c"\n');
  });

  it("synthesizes the stack with TF_VAR_* and finds every provisioner resource in it", async () => {
    const json = await synthStack({ TF_VAR_num_kube_nodes: "50" });
    const provisioners = PROVISIONER_TYPES.flatMap((type) => Object.keys(json.resource[type] ?? {}));
    const result = steps([], { TF_VAR_num_kube_nodes: "50" });
    expect(result.provisionerResources).toBe(provisioners.length);
    expect(result.longestChain).toHaveLength(result.sequentialSteps);
    expect(result.sequentialSteps).toBeLessThanOrEqual(provisioners.length);
  });

  it("stops with the stack's own one-line message on a bad TF_VAR_", () => {
    const result = runScript("provisioner-steps.js", [], { TF_VAR_num_kube_nodes: "0" });
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^provisioner-steps: synth failed: kube-on-os: Invalid TF_VAR_num_kube_nodes="0": .*\n$/);
  });
});

describe("npm run graph", () => {
  let svg: string;
  let json: TerraformJson;

  beforeAll(async () => {
    const output = path.join(tempDir("graph"), "graph.svg");
    // A value the stack would reject: the drawing must not depend on the caller's environment.
    const result = runScript("graph.js", ["--output", output], { TF_VAR_num_kube_nodes: "0" });
    if (result.status !== 0) throw new Error(`graph.js failed:\n${result.stderr}`);
    svg = fs.readFileSync(output, "utf8");
    json = await synthStack();
  });

  it("draws each resource and data source of the stack as one box", () => {
    const titles = [...svg.matchAll(/<g id="node\d+" class="node">\n<title>([^<]+)<\/title>/g)].map((match) => match[1]);
    expect(titles.sort()).toEqual(addresses(json).sort());
    expect(titles).toContainEqual(expect.stringMatching(/^openstack_compute_instance_v2\./));
  });

  it("draws an arrow from each machine to the ports it needs", () => {
    const instances = Object.keys(json.resource.openstack_compute_instance_v2);
    for (const instance of instances) {
      expect(svg).toMatch(
        new RegExp(`<title>openstack_compute_instance_v2\\.${instance}&#45;&gt;openstack_networking_port_v2\\.\\w+</title>`),
      );
    }
  });

  it("leaves out Graphviz's comments, which name its version", () => {
    expect(svg).toMatch(/^<\?xml /);
    expect(svg).not.toContain("<!--");
  });
});
