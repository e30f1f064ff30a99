/**
 * L2 and L3 for node pools (issue 19): the stack with a second pool, spread over availability
 * zones, planned, applied, re-planned and changed by real OpenTofu (and Terraform for the plan)
 * with the real OpenStack provider against the OpenStack API double.
 */
import YAML from "yaml";
import { NOVA_DEFAULT_QUOTAS } from "./doubles/openstack/nova";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { planJson } from "./support/plan";
import { describeEachCli, TfCli, tfClis } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

let double: OpenStackDouble;
let state: StateServer;

beforeAll(async () => {
  double = await startOpenStackDouble();
  state = await startStateServer({ username: "gitlab-ci-token", password: "state-password-5f1c" });
  // Room for the pools below; the upstream defaults allow 4 nodes.
  Object.assign(double.nova.quotas, { instances: -1, cores: -1, ram: -1, server_group_members: -1 });
});

afterAll(async () => {
  Object.assign(double.nova.quotas, NOVA_DEFAULT_QUOTAS);
  await double.close();
  await state.close();
});

afterEach(() => {
  // A request the double does not implement is a gap in the double, never something to ignore.
  expect(double.unhandled).toEqual([]);
});

function workspace(synthEnv: NodeJS.ProcessEnv = {}, runEnv: NodeJS.ProcessEnv = WITHOUT_PROVISIONERS, cli: TfCli = tfClis()[0]) {
  return makeWorkspace(double, state, synthEnv, runEnv, cli);
}

/** Two pools besides the default pool's 3 nodes: web over two zones, gpu with labels and taints. */
const POOLS = {
  web: { count: 3, flavor: "m1.medium", availability_zones: ["az1", "az2"] },
  gpu: { count: 2, labels: { "example.com/gpu": "true" }, taints: ["gpu=true:NoSchedule"] },
};
const TWO_POOLS = { TF_VAR_node_pools: JSON.stringify(POOLS) };

function planned(plan: any, type: string): any[] {
  return plan.planned_values.root_module.resources.filter((r: any) => r.type === type);
}

function pillarOf(ws: Workspace): Promise<any> {
  // Base64: the console prints strings in HCL syntax, where `${` reads `$${`.
  return ws.tofu(["console"], {}, "base64encode(local.salt_pillar)\n").then((console) => {
    expect(console.stderr).toBe("");
    return YAML.parse(Buffer.from(JSON.parse(console.stdout.trim()), "base64").toString("utf8"));
  });
}

describeEachCli("L2: node pools planned against the OpenStack API double", (cli) => {
  let plan: any;

  beforeAll(async () => {
    plan = await planJson(await workspace(TWO_POOLS, {}, cli));
  });

  it("names each pool's workers k8s-<pool>-<n>, with the pool's flavor or the default one", () => {
    const workers = planned(plan, "openstack_compute_instance_v2").filter((r: any) => r.address.includes("WorkerPools"));
    const byName = Object.fromEntries(workers.map((r: any) => [r.values.name, r.values.flavor_name]));
    expect(byName).toEqual({
      "k8s-gpu-0.kube-on-os": "m1.large",
      "k8s-gpu-1.kube-on-os": "m1.large",
      "k8s-web-0.kube-on-os": "m1.medium",
      "k8s-web-1.kube-on-os": "m1.medium",
      "k8s-web-2.kube-on-os": "m1.medium",
    });
    // Keyed by host name: a pool's change touches no other worker.
    expect(workers.map((r: any) => r.index).sort()).toEqual(["k8s-gpu-0", "k8s-gpu-1", "k8s-web-0", "k8s-web-1", "k8s-web-2"]);
  });

  it("spreads a pool's workers over its zones round-robin, and leaves a pool without zones to the cloud", () => {
    const zones = Object.fromEntries(
      planned(plan, "openstack_compute_instance_v2")
        .filter((r: any) => r.address.includes("WorkerPools"))
        .map((r: any) => [r.index, r.values.availability_zone ?? null]),
    );
    expect(zones).toMatchObject({ "k8s-web-0": "az1", "k8s-web-1": "az2", "k8s-web-2": "az1" });
    // Unknown until Nova picks: the provider reads the zone back.
    expect(
      plan.resource_changes.find((c: any) => c.index === "k8s-gpu-0" && c.type === "openstack_compute_instance_v2").change.after_unknown,
    ).toMatchObject({ availability_zone: true });
  });

  it("gives each pool a server group, and its workers private ports whose addresses Neutron picks", () => {
    const groups = planned(plan, "openstack_compute_servergroup_v2").map((r: any) => r.values.name);
    expect(groups.sort()).toEqual(["kube-on-os-k8s-gpu", "kube-on-os-k8s-nodes", "kube-on-os-k8s-web"]);
    const ports = planned(plan, "openstack_networking_port_v2").filter((r: any) => r.address.includes("WorkerPools"));
    expect(ports).toHaveLength(5);
    // No address asked for: Neutron picks one from the subnet's allocation pool.
    for (const port of ports) expect(port.values.fixed_ip).toEqual([{ ip_address: null }]);
  });

  it("counts the pools' workers against the quotas", () => {
    const needs = plan.planned_values.outputs.quota_needs.value;
    expect(needs.compute.instances).toBe(2 + 3 + 5);
    expect(needs.compute.server_groups).toBe(3);
    expect(needs.compute.server_group_members).toBe(8);
    expect(needs.network.port).toBe(8 + 2 + 5);
  });
});

describe("L3: two pools over zones: apply, re-plan with no changes, change the pools, destroy", () => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace(TWO_POOLS);
  });

  it("applies the stack with its pools", async () => {
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    const names = double.nova.servers.all().map((s) => s.name as string);
    expect(names.filter((n) => n.startsWith("k8s-")).sort()).toEqual([
      "k8s-gpu-0.kube-on-os",
      "k8s-gpu-1.kube-on-os",
      "k8s-master.kube-on-os",
      "k8s-web-0.kube-on-os",
      "k8s-web-1.kube-on-os",
      "k8s-web-2.kube-on-os",
      "k8s-worker-0.kube-on-os",
      "k8s-worker-1.kube-on-os",
    ]);
  });

  it("re-plans with no changes (exit code 0 of -detailed-exitcode)", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("writes every node into the pillar with the address Neutron gave it, its pool's labels and taints, the voters from the default pool", async () => {
    const pillar = await pillarOf(ws);
    const address = (name: string) => {
      const port = double.neutron.ports.all().find((p) => p.name === `${name}-private`);
      return (port!.fixed_ips as { ip_address: string }[])[0].ip_address;
    };
    expect(pillar.microk8s.nodes).toEqual([
      { id: "k8s-master.kube-on-os", address: "10.1.0.10", labels: { "kube-on-os/pool": "default" }, taints: [] },
      { id: "k8s-worker-0.kube-on-os", address: "10.1.0.100", labels: { "kube-on-os/pool": "default" }, taints: [] },
      { id: "k8s-worker-1.kube-on-os", address: "10.1.0.101", labels: { "kube-on-os/pool": "default" }, taints: [] },
      ...[0, 1].map((n) => ({
        id: `k8s-gpu-${n}.kube-on-os`,
        address: address(`k8s-gpu-${n}.kube-on-os`),
        labels: { "example.com/gpu": "true", "kube-on-os/pool": "gpu" },
        taints: ["gpu=true:NoSchedule"],
      })),
      ...[0, 1, 2].map((n) => ({
        id: `k8s-web-${n}.kube-on-os`,
        address: address(`k8s-web-${n}.kube-on-os`),
        labels: { "kube-on-os/pool": "web" },
        taints: [],
      })),
    ]);
    // Neutron's picks come from the DHCP half of the private network.
    for (const node of pillar.microk8s.nodes.slice(3)) expect(Number(node.address.split(".")[2])).toBeGreaterThanOrEqual(128);
    expect(pillar.microk8s.control_plane).toEqual(["k8s-master.kube-on-os", "k8s-worker-0.kube-on-os", "k8s-worker-1.kube-on-os"]);
  });

  it("adds a pool and grows another without touching any other machine", async () => {
    const before = new Map(double.nova.servers.all().map((s) => [s.name as string, s.id as string]));
    const pools = { ...POOLS, web: { ...POOLS.web, count: 4 }, db: { count: 1 } };
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_node_pools: JSON.stringify(pools) });
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toMatch(/Resources: \d+ added, 0 changed, 0 destroyed/);
    const after = new Map(double.nova.servers.all().map((s) => [s.name as string, s.id as string]));
    for (const [name, id] of before) expect(after.get(name)).toBe(id);
    expect([...after.keys()].filter((n) => !before.has(n)).sort()).toEqual(["k8s-db-0.kube-on-os", "k8s-web-3.kube-on-os"]);
  });

  it("removes a pool's machines with the pool, and only them", async () => {
    const before = new Map(double.nova.servers.all().map((s) => [s.name as string, s.id as string]));
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_node_pools: JSON.stringify({ web: POOLS.web }) });
    expect(apply.stderr).toBe("");
    const after = new Map(double.nova.servers.all().map((s) => [s.name as string, s.id as string]));
    expect([...before.keys()].filter((n) => !after.has(n)).sort()).toEqual([
      "k8s-db-0.kube-on-os",
      "k8s-gpu-0.kube-on-os",
      "k8s-gpu-1.kube-on-os",
      "k8s-web-3.kube-on-os",
    ]);
    for (const [name, id] of after) expect(before.get(name)).toBe(id);
    expect(
      double.nova.serverGroups
        .all()
        .map((g) => g.name as string)
        .sort(),
    ).toEqual(["kube-on-os-k8s-nodes", "kube-on-os-k8s-web"]);
  });

  it("destroys everything it created, leaving the double as seeded", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"], { TF_VAR_node_pools: JSON.stringify({ web: POOLS.web }) });
    expect(destroy.stderr).toBe("");
    expect(double.resourceCount()).toBe(0);
  });
});
