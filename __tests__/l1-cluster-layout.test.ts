/**
 * L1: the cluster layout as Terraform evaluates it. Every construct, the pillar and the outputs
 * read these locals, so this is where worker names, addresses, the control plane and the minion
 * ids are checked against the design (docs/architecture.md, "Addresses"), at several sizes.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { App, TerraformLocal, TerraformStack, TerraformVariable, Token } from "cdktf";
import { NODE_POOLS_TYPE } from "../config/node-pools";
import { ClusterLayout } from "../constructs/cluster-layout";
import { runTofu, runTofuAsync } from "./support/tofu";

let dir: string;

beforeAll(() => {
  const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-layout-")) });
  const stack = new TerraformStack(app, "layout");
  const variable = (name: string, type: string) => new TerraformVariable(stack, name, { type });
  new ClusterLayout(stack, {
    domain: variable("domain", "string").stringValue,
    publicCidr: variable("public_cidr", "string").stringValue,
    privateCidr: variable("private_cidr", "string").stringValue,
    nodeCount: variable("nodes", "number").numberValue,
  });
  app.synth();
  dir = path.join(app.outdir, "stacks", "layout");
  // No provider: cdktf's default local backend is all there is to initialise.
  const init = runTofu(["init", "-input=false"], dir);
  if (init.status !== 0) throw new Error(init.stderr);
});

/** The layout's locals for `nodes` nodes in lab.example, 10.0.0.0/16 and 10.1.0.0/16. */
async function layout(nodes: number, privateCidr = "10.1.0.0/16"): Promise<Record<string, string[]>> {
  const names = ["kube_worker_hosts", "kube_worker_fqdns", "kube_worker_private_ips", "kube_node_ids", "kube_node_addresses"];
  const expression = `jsonencode({ ${[...names, "kube_control_plane", "salt_minion_ids"].map((n) => `${n} = local.${n}`).join(", ")} })`;
  const vars = ["domain=lab.example", "public_cidr=10.0.0.0/16", `private_cidr=${privateCidr}`, `nodes=${nodes}`].flatMap((v) => [
    "-var",
    v,
  ]);
  const result = await runTofuAsync(["console", ...vars], dir, {}, `${expression}\n`);
  if (result.status !== 0) throw new Error(result.stderr);
  return JSON.parse(JSON.parse(result.stdout.trim()));
}

describe("ClusterLayout", () => {
  it("lays out one master, the workers at 10.1.0.100 + n, three voters, and the minion ids", async () => {
    expect(await layout(5)).toEqual({
      kube_worker_hosts: ["k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"],
      kube_worker_fqdns: ["k8s-worker-0.lab.example", "k8s-worker-1.lab.example", "k8s-worker-2.lab.example", "k8s-worker-3.lab.example"],
      kube_worker_private_ips: ["10.1.0.100", "10.1.0.101", "10.1.0.102", "10.1.0.103"],
      kube_node_ids: [
        "k8s-master.lab.example",
        "k8s-worker-0.lab.example",
        "k8s-worker-1.lab.example",
        "k8s-worker-2.lab.example",
        "k8s-worker-3.lab.example",
      ],
      kube_node_addresses: ["10.1.0.10", "10.1.0.100", "10.1.0.101", "10.1.0.102", "10.1.0.103"],
      kube_control_plane: ["k8s-master.lab.example", "k8s-worker-0.lab.example", "k8s-worker-1.lab.example"],
      salt_minion_ids: [
        "salt.lab.example",
        "bastion.lab.example",
        "k8s-master.lab.example",
        "k8s-worker-0.lab.example",
        "k8s-worker-1.lab.example",
        "k8s-worker-2.lab.example",
        "k8s-worker-3.lab.example",
      ],
    });
  });

  it("has no workers and a control plane of the master alone at one node", async () => {
    expect(await layout(1)).toMatchObject({
      kube_worker_fqdns: [],
      kube_node_ids: ["k8s-master.lab.example"],
      kube_node_addresses: ["10.1.0.10"],
      kube_control_plane: ["k8s-master.lab.example"],
      salt_minion_ids: ["salt.lab.example", "bastion.lab.example", "k8s-master.lab.example"],
    });
  });

  it("moves every address with a plan-time private CIDR", async () => {
    expect((await layout(2, "192.168.0.0/20")).kube_node_addresses).toEqual(["192.168.0.10", "192.168.0.100"]);
  });

  it("rejects a node count below one before anything is synthesized", () => {
    const stack = new TerraformStack(new App({ outdir: os.tmpdir() }), "bad");
    expect(() => new ClusterLayout(stack, { domain: "d", publicCidr: "10.0.0.0/16", privateCidr: "10.1.0.0/16", nodeCount: 0 })).toThrow(
      "ClusterLayout: nodeCount must be a whole number of at least 1 (got 0)",
    );
  });
});

describe("ClusterLayout with node pools", () => {
  let poolsDir: string;

  beforeAll(() => {
    const app = new App({ outdir: fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-layout-pools-")) });
    const stack = new TerraformStack(app, "pools");
    const variable = (name: string, type: string) => new TerraformVariable(stack, name, { type });
    const layout = new ClusterLayout(stack, {
      domain: variable("domain", "string").stringValue,
      publicCidr: variable("public_cidr", "string").stringValue,
      privateCidr: variable("private_cidr", "string").stringValue,
      nodeCount: variable("nodes", "number").numberValue,
      zones: variable("zones", "list(string)").listValue,
      pools: variable("pools", NODE_POOLS_TYPE).value,
    });
    // Neutron gives the pool workers' addresses; here each is its host name.
    layout.providePoolAddresses(Token.asList("${[for node in local.kube_pool_nodes : node.host]}"));
    new TerraformLocal(stack, "master_zone", layout.kubeMasterZone);
    app.synth();
    poolsDir = path.join(app.outdir, "stacks", "pools");
    const init = runTofu(["init", "-input=false"], poolsDir);
    if (init.status !== 0) throw new Error(init.stderr);
  });

  async function evaluate(pools: string, zones: string, nodes = 3): Promise<Record<string, unknown>> {
    const names = ["kube_pool_nodes", "kube_node_ids", "kube_node_addresses", "kube_control_plane", "salt_minion_ids", "master_zone"];
    const expression = `jsonencode({ ${names.map((n) => `${n} = local.${n}`).join(", ")} })`;
    const vars = [
      "domain=lab.example",
      "public_cidr=10.0.0.0/16",
      "private_cidr=10.1.0.0/16",
      `nodes=${nodes}`,
      `zones=${zones}`,
      `pools=${pools}`,
    ];
    const args = vars.flatMap((v) => ["-var", v]);
    const result = await runTofuAsync(["console", ...args], poolsDir, {}, `${expression}\n`);
    if (result.status !== 0) throw new Error(result.stderr);
    return JSON.parse(JSON.parse(result.stdout.trim()));
  }

  it("names each pool's workers k8s-<pool>-<n>, pool by pool in their names' order, spread over the pool's zones", async () => {
    const layout = await evaluate('{ web = { count = 3, availability_zones = ["az1", "az2"] }, gpu = { count = 1 } }', "[]");
    expect(layout.kube_pool_nodes).toEqual([
      { pool: "gpu", index: 0, host: "k8s-gpu-0", fqdn: "k8s-gpu-0.lab.example", zone: null },
      { pool: "web", index: 0, host: "k8s-web-0", fqdn: "k8s-web-0.lab.example", zone: "az1" },
      { pool: "web", index: 1, host: "k8s-web-1", fqdn: "k8s-web-1.lab.example", zone: "az2" },
      { pool: "web", index: 2, host: "k8s-web-2", fqdn: "k8s-web-2.lab.example", zone: "az1" },
    ]);
    expect(layout.kube_node_ids).toEqual([
      "k8s-master.lab.example",
      "k8s-worker-0.lab.example",
      "k8s-worker-1.lab.example",
      "k8s-gpu-0.lab.example",
      "k8s-web-0.lab.example",
      "k8s-web-1.lab.example",
      "k8s-web-2.lab.example",
    ]);
    expect(layout.kube_node_addresses).toEqual([
      "10.1.0.10",
      "10.1.0.100",
      "10.1.0.101",
      "k8s-gpu-0",
      "k8s-web-0",
      "k8s-web-1",
      "k8s-web-2",
    ]);
    expect((layout.salt_minion_ids as string[]).slice(-4)).toEqual([
      "k8s-gpu-0.lab.example",
      "k8s-web-0.lab.example",
      "k8s-web-1.lab.example",
      "k8s-web-2.lab.example",
    ]);
    expect(layout.master_zone).toBeNull();
  });

  it("keeps the control plane in the default pool, however small it is and however large the pools", async () => {
    const layout = await evaluate("{ web = { count = 50 } }", '["az1", "az2", "az3"]', 1);
    expect(layout.kube_control_plane).toEqual(["k8s-master.lab.example"]);
    expect(layout.master_zone).toBe("az1");
  });
});
