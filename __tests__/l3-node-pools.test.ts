/**
 * L2 and L3 for node pools and the API load balancer (issue 19): the stack with two pools over
 * three availability zones, boot volumes and an Octavia load balancer in front of the control
 * plane, which has machines of its own, and tags on everything (issue 39), planned, applied,
 * re-planned and changed by real OpenTofu (and Terraform for the plan) with the real OpenStack
 * provider against the OpenStack API double.
 */
import YAML from "yaml";
import { NOBLE_IMAGE, type OpenStackDouble, WIKI_IMAGE } from "./doubles/openstack/server";
import type { StateServer } from "./doubles/http-state/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import type { CloudTarget } from "./support/target";
import { planJson } from "./support/plan";
import { describeEachCli, repairRun as runRepair, RunResult, TfCli, tfClis } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

const ZONES = ["az1", "az2", "az3"];

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

useCloud(
  { double: { availabilityZones: ZONES, volumeAvailabilityZones: ZONES, volumeTypes: ["ssd"], settled: true }, state: GITLAB_STATE },
  (cloud) => ({ double, target, state } = cloud),
);

beforeAll(() => {
  // Room for the pools below; the upstream defaults allow 4 nodes. The double is this file's alone.
  Object.assign(double.nova.quotas, { instances: -1, cores: -1, ram: -1, server_group_members: -1 });
});

function workspace(synthEnv: NodeJS.ProcessEnv = {}, runEnv: NodeJS.ProcessEnv = WITHOUT_PROVISIONERS, cli: TfCli = tfClis()[0]) {
  return makeWorkspace(double, state, synthEnv, runEnv, cli);
}

/**
 * Two pools besides the default pool's 3 nodes, which spread over the three zones: web over two
 * of them, gpu with boot volumes, labels and taints.
 */
const POOLS = {
  web: { count: 3, flavor: "m1.medium", availability_zones: ["az1", "az2"] },
  gpu: {
    count: 2,
    boot_volume_size: 50,
    boot_volume_type: "ssd",
    labels: { "example.com/gpu": "true" },
    taints: ["gpu=true:NoSchedule"],
  },
};
/**
 * The default pool of 4 nodes, whose three voters (the control plane) have a smaller flavor,
 * another image and 30 GiB boot volumes of their own; k8s-worker-2 keeps the pool's.
 */
const CONTROL_PLANE = {
  TF_VAR_num_kube_nodes: "4",
  TF_VAR_control_plane_flavor: "m1.medium",
  TF_VAR_control_plane_image: WIKI_IMAGE.name,
  TF_VAR_control_plane_boot_volume_size: "30",
};
/** Tags for every resource that takes them, and metadata for the servers. */
const TAGGED = { TF_VAR_tags: '["team-a"]', TF_VAR_server_metadata: '{ owner = "team-a", "cost center" = "4711" }' };
const TWO_POOLS = {
  TF_VAR_node_pools: JSON.stringify(POOLS),
  TF_VAR_kube_node_availability_zones: JSON.stringify(ZONES),
  ...CONTROL_PLANE,
  ...TAGGED,
};
const VOTERS = ["k8s-master", "k8s-worker-0", "k8s-worker-1"];

function planned(plan: any, type: string): any[] {
  return plan.planned_values.root_module.resources.filter((r: any) => r.type === type);
}

/** `npm run repair` in the workspace's stack with its CLI (support/tofu.ts). */
function repairRun(ws: Workspace, args: string[]): Promise<RunResult> {
  return runRepair(ws.cli, ws.dir, ws.env, args);
}

function pillarOf(ws: Workspace): Promise<any> {
  // Base64: the console prints strings in HCL syntax, where `${` reads `$${`.
  return ws.tofu(["console", "-lock=false"], {}, "base64encode(local.salt_pillar)\n").then((console) => {
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

  it("builds the control plane from its own flavor, image and boot volume, and the default pool's other workers from the pool's", () => {
    const machines = Object.fromEntries(
      planned(plan, "openstack_compute_instance_v2")
        .filter((r: any) => r.address.includes("KubeNodes"))
        .map((r: any) => [
          r.values.name,
          {
            flavor: r.values.flavor_name,
            image: r.values.image_id,
            volumes: r.values.block_device.map((b: any) => [b.uuid, b.volume_size]),
          },
        ]),
    );
    const voter = { flavor: "m1.medium", image: WIKI_IMAGE.id, volumes: [[WIKI_IMAGE.id, 30]] };
    expect(machines).toEqual({
      ...Object.fromEntries(VOTERS.map((host) => [`${host}.kube-on-os`, voter])),
      "k8s-worker-2.kube-on-os": { flavor: "m1.large", image: NOBLE_IMAGE.id, volumes: [] },
    });
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

  it("counts the pools' workers, their boot volumes and the load balancer against the quotas", () => {
    const needs = plan.planned_values.outputs.quota_needs.value;
    expect(needs.compute.instances).toBe(2 + 4 + 5);
    // The bastion's m1.small and the Salt master's m1.medium, the voters' m1.medium, worker-2's
    // m1.large, web's m1.medium and gpu's m1.large (the double's flavors: 1, 2, 2 and 4 cores).
    expect(needs.compute.cores).toBe(1 + 2 + 3 * 2 + 4 + 3 * 2 + 2 * 4);
    expect(needs.compute.server_groups).toBe(3);
    expect(needs.compute.server_group_members).toBe(9);
    // The Salt volume, the voters' boot volumes, gpu's.
    expect(needs.blockStorage).toEqual({ volumes: 1 + 3 + 2, gigabytes: 10 + 3 * 30 + 2 * 50 });
    // The fixed ports, the default pool's workers, the pools' workers, the load balancer's VIP.
    expect(needs.network.port).toBe(8 + 3 + 5 + 1);
    expect(needs.network.floatingip).toBe(3);
  });

  it("spreads the default pool from its master over the zones, so the three voters take three", () => {
    const zoneOf = (name: string) =>
      planned(plan, "openstack_compute_instance_v2").find((r: any) => r.values.name === name).values.availability_zone;
    expect(["k8s-master", "k8s-worker-0", "k8s-worker-1"].map((host) => zoneOf(`${host}.kube-on-os`))).toEqual(ZONES);
  });

  it("fails the plan in one line naming a zone the cloud lacks, before anything is created", async () => {
    const ws = await workspace({}, {}, cli);
    const result = await ws.tofu(["plan", "-input=false"], {
      TF_VAR_node_pools: '{ web = { count = 1, availability_zones = ["az1", "az9"] } }',
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr.replace(/\s+/g, " ")).toContain(
      "Unknown availability zone: az9 (in kube_node_availability_zones or node_pools) is not one of this cloud's available zones, az1, az2, az3 (openstack availability zone list).",
    );
  });

  it("fails the plan in one line naming a volume type the cloud lacks, before anything is created", async () => {
    const ws = await workspace({}, {}, cli);
    const result = await ws.tofu(["plan", "-input=false"], {
      TF_VAR_kube_node_boot_volume_size: "20",
      TF_VAR_kube_node_boot_volume_type: "nvme",
      TF_VAR_control_plane_boot_volume_type: "fast",
      TF_VAR_node_pools:
        '{ web = { count = 1, boot_volume_size = 20, boot_volume_type = "ssd" }, db = { count = 1, boot_volume_size = 20, boot_volume_type = "hdd" } }',
    });
    expect(result.status).not.toBe(0);
    expect(result.stderr.replace(/\s+/g, " ")).toContain(
      "Unknown volume type: fast, hdd, nvme (in kube_node_boot_volume_type, control_plane_boot_volume_type or node_pools) is not one of this cloud's volume types, __DEFAULT__, ssd (openstack volume type list).",
    );
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
    const names = (await target.servers()).map((s) => s.name);
    expect(names.filter((n) => n.startsWith("k8s-")).sort()).toEqual([
      "k8s-gpu-0.kube-on-os",
      "k8s-gpu-1.kube-on-os",
      "k8s-master.kube-on-os",
      "k8s-web-0.kube-on-os",
      "k8s-web-1.kube-on-os",
      "k8s-web-2.kube-on-os",
      "k8s-worker-0.kube-on-os",
      "k8s-worker-1.kube-on-os",
      "k8s-worker-2.kube-on-os",
    ]);
  });

  it("re-plans with no changes (exit code 0 of -detailed-exitcode)", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("boots the voters from 30 GiB volumes of their image, the gpu workers from 50 GiB ssd ones, the others from the hypervisor's disk", async () => {
    const servers = new Map((await target.servers()).map((s) => [s.id, s.name]));
    const bootVolumes = double.cinder.volumes
      .all()
      .filter((v) => (v.attachments as { device: string }[]).some((a) => a.device === "/dev/vda"))
      .map((v) => ({
        server: servers.get((v.attachments as { server_id: string }[])[0].server_id),
        size: v.size,
        type: v.volume_type,
        image: (v.volume_image_metadata as { image_id?: string } | undefined)?.image_id,
        status: v.status,
      }));
    expect(bootVolumes.sort((a, b) => String(a.server).localeCompare(String(b.server)))).toEqual([
      { server: "k8s-gpu-0.kube-on-os", size: 50, type: "ssd", image: NOBLE_IMAGE.id, status: "in-use" },
      { server: "k8s-gpu-1.kube-on-os", size: 50, type: "ssd", image: NOBLE_IMAGE.id, status: "in-use" },
      ...VOTERS.map((host) => ({ server: `${host}.kube-on-os`, size: 30, type: "__DEFAULT__", image: WIKI_IMAGE.id, status: "in-use" })),
    ]);
    const flavors = Object.fromEntries((await target.servers()).map((s) => [s.name, s.flavor]));
    expect(VOTERS.map((host) => flavors[`${host}.kube-on-os`])).toEqual(["m1.medium", "m1.medium", "m1.medium"]);
    expect(flavors["k8s-worker-2.kube-on-os"]).toBe("m1.large");
  });

  it("changes no node for new flavors, and warns, naming each node built otherwise and the roll", async () => {
    const plan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"], {
      TF_VAR_control_plane_flavor: "m1.large",
      TF_VAR_kube_node_flavor: "m1.small",
    });
    expect(plan.stderr).toBe("");
    // Only the quota check's output changes: it counts the new flavors, which a roll needs.
    const said = plan.stdout.replace(/\s+/g, " ");
    expect(said).toContain(
      "You can apply this plan to save these new output values to the OpenTofu state, without changing any real infrastructure.",
    );
    expect(said).toMatch(/~ cores += 27 -> 24 /);
    expect(said).toContain(
      "keep what they were built with until they are replaced: " +
        "k8s-master (flavor m1.medium, now m1.large); k8s-worker-0 (flavor m1.medium, now m1.large); " +
        "k8s-worker-1 (flavor m1.medium, now m1.large); k8s-worker-2 (flavor m1.large, now m1.small); " +
        "k8s-gpu-0 (flavor m1.large, now m1.small); k8s-gpu-1 (flavor m1.large, now m1.small). " +
        "npm run roll -- --nodes k8s-master,k8s-worker-0,k8s-worker-1,k8s-worker-2,k8s-gpu-0,k8s-gpu-1 replaces them one at a time",
    );
  });

  it("builds a replaced voter from the new flavor, and the plan then names only the others", async () => {
    const machines = JSON.parse((await ws.tofu(["output", "-json", "kube_node_machines"])).stdout) as { host: string; address: string }[];
    const worker0 = machines.find((node) => node.host === "k8s-worker-0")!.address;
    const before = new Map((await target.servers()).map((s) => [s.name, s.id]));
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false", `-replace=${worker0}`], {
      TF_VAR_control_plane_flavor: "m1.large",
    });
    expect(apply.stderr).toBe("");
    const after = await target.servers();
    const replaced = after.find((s) => s.name === "k8s-worker-0.kube-on-os")!;
    expect(replaced.id).not.toBe(before.get(replaced.name));
    expect(replaced.flavor).toBe("m1.large");
    for (const server of after.filter((s) => s !== replaced)) expect(server.id).toBe(before.get(server.name));
    const plan = await ws.tofu(["plan", "-input=false"], { TF_VAR_control_plane_flavor: "m1.large" });
    expect(plan.stdout).toContain("No changes.");
    expect(plan.stdout.replace(/\s+/g, " ")).toContain("npm run roll -- --nodes k8s-master,k8s-worker-1 replaces them");
  });

  it("repairs the nodes whose servers failed (npm run repair): more than --max, none; within it, each on a new machine, the workers first", async () => {
    const servers = async () => new Map((await target.servers()).map((s) => [s.name.split(".")[0], s.id]));
    const before = await servers();
    // What a hypervisor's failure leaves: a server in ERROR, one SHUTOFF, one deleted by someone else.
    double.nova.servers.update(before.get("k8s-web-1")!, { status: "ERROR" });
    double.nova.servers.update(before.get("k8s-gpu-0")!, { status: "SHUTOFF" });
    double.nova.deleteOutOfBand(before.get("k8s-worker-2")!);
    const refused = await repairRun(ws, []);
    expect({ status: refused.status, last: refused.stderr.trim().split("\n").at(-1) }).toEqual({
      status: 1,
      last:
        "kube-on-os: repair: 3 nodes are unhealthy, more than --max 1: k8s-worker-2 (its server is gone), k8s-gpu-0 (its server is SHUTOFF), " +
        "k8s-web-1 (its server is in ERROR); a failure this wide is the cloud's or its network's, not a machine's, so nothing is replaced " +
        "(npm run roll -- --nodes replaces them by hand)",
    });
    const dry = await repairRun(ws, ["--max", "3", "--dry-run"]);
    // No Salt on these machines: the servers' states alone judge the nodes.
    expect(dry.stderr).toContain(
      "kube-on-os: repair: Kubernetes' view: run_provisioners is false: no Salt runs on the machines to ask; " +
        "the nodes whose servers run are judged by their servers alone",
    );
    expect(dry.stderr).toContain(
      "kube-on-os: repair: would replace k8s-worker-2, k8s-gpu-0, k8s-web-1 (npm run roll -- --nodes k8s-worker-2,k8s-gpu-0,k8s-web-1); --dry-run replaces nothing",
    );
    expect(await servers()).toEqual(new Map([...before].filter(([host]) => host !== "k8s-worker-2")));
    // A user's own look at the drift: a refresh-only plan reads the gone server out of the state,
    // and the pillar's per-node lists, which follow the layout's node order, still plan.
    const refreshOnly = await ws.tofu(["plan", "-refresh-only", "-input=false"]);
    expect({ status: refreshOnly.status, stderr: refreshOnly.stderr }).toEqual({ status: 0, stderr: "" });
    expect(refreshOnly.stdout).toMatch(/openstack_compute_instance_v2\.\S+ has been deleted/);

    // Each apply also starts a SHUTOFF server (the stack's are power_state active, and Nova's
    // os-start answers): k8s-gpu-0 runs again before its turn, and is replaced all the same.
    const repaired = await repairRun(ws, ["--max", "3", "--auto-approve"]);
    expect({ status: repaired.status, stderr: repaired.stderr.split("\n").filter((line) => / roll( \d+\/\d+)?: /.test(line)) }).toEqual({
      status: 0,
      stderr: [
        "kube-on-os: roll: 3 Kubernetes nodes, one at a time: k8s-worker-2, k8s-gpu-0, k8s-web-1",
        expect.stringMatching(/^kube-on-os: roll 1\/3: k8s-worker-2: /),
        "kube-on-os: roll 1/3: k8s-worker-2 is back on a new machine",
        expect.stringMatching(/^kube-on-os: roll 2\/3: k8s-gpu-0: /),
        "kube-on-os: roll 2/3: k8s-gpu-0 is back on a new machine",
        expect.stringMatching(/^kube-on-os: roll 3\/3: k8s-web-1: /),
        "kube-on-os: roll 3/3: k8s-web-1 is back on a new machine",
        "kube-on-os: roll: 3 nodes on new machines",
      ],
    });
    const after = await servers();
    for (const host of ["k8s-worker-2", "k8s-gpu-0", "k8s-web-1"]) expect([host, after.get(host)]).not.toEqual([host, before.get(host)]);
    for (const [host, id] of before)
      if (!["k8s-worker-2", "k8s-gpu-0", "k8s-web-1"].includes(host)) expect([host, after.get(host)]).toEqual([host, id]);
    const again = await repairRun(ws, []);
    expect({ status: again.status, last: again.stderr.trim().split("\n").at(-1) }).toEqual({
      status: 0,
      last: "kube-on-os: repair: all 9 Kubernetes nodes are healthy; nothing to replace",
    });
  });

  it("puts the API behind a load balancer over the three voters, with its own floating IP as the kubeconfig's server", async () => {
    const [loadBalancer] = double.octavia.loadBalancers.all();
    expect(loadBalancer).toMatchObject({ name: "kube-on-os-kube-api", provisioning_status: "ACTIVE" });
    const [listed] = await target.loadBalancers();
    const [listener] = double.octavia.listeners.all();
    expect(listener).toMatchObject({ protocol: "TCP", protocol_port: 16443, allowed_cidrs: ["0.0.0.0/0"], admin_state_up: true });
    expect(
      double.octavia.members
        .all()
        .map((m) => `${m.name as string} ${m.address as string}:${m.protocol_port as number}`)
        .sort(),
    ).toEqual([
      "k8s-master.kube-on-os 10.1.0.10:16443",
      "k8s-worker-0.kube-on-os 10.1.0.100:16443",
      "k8s-worker-1.kube-on-os 10.1.0.101:16443",
    ]);
    expect(double.octavia.healthMonitors.all()).toEqual([expect.objectContaining({ type: "TCP" })]);
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect(outputs.api_address.value).toBe(listed.floatingIp);
    expect(outputs.api_address.value).not.toBe(outputs.master_floating_ip.value);
    expect(outputs.kubeconfig_command.value).toContain(`server: https://${outputs.api_address.value}:#`);
    const pillar = await pillarOf(ws);
    expect(pillar.microk8s.api_addresses).toEqual([outputs.master_floating_ip.value, outputs.api_address.value, listed.vipAddress]);
  });

  it("writes every node into the pillar with the address Neutron gave it, its pool's labels and taints, the voters from the default pool", async () => {
    const pillar = await pillarOf(ws);
    const address = (name: string) => {
      const port = double.neutron.ports.all().find((p) => p.name === `${name}-private`);
      return (port!.fixed_ips as { ip_address: string }[])[0].ip_address;
    };
    // Each node's Nova server, for its providerID.
    const servers = await target.servers();
    const server = (name: string) => servers.find((s) => s.name === name)!.id;
    const defaultPool = (id: string, address: string) => ({
      id,
      address,
      labels: { "kube-on-os/pool": "default" },
      taints: [],
      instance_id: server(id),
    });
    expect(pillar.microk8s.nodes).toEqual([
      defaultPool("k8s-master.kube-on-os", "10.1.0.10"),
      defaultPool("k8s-worker-0.kube-on-os", "10.1.0.100"),
      defaultPool("k8s-worker-1.kube-on-os", "10.1.0.101"),
      defaultPool("k8s-worker-2.kube-on-os", "10.1.0.102"),
      ...[0, 1].map((n) => ({
        id: `k8s-gpu-${n}.kube-on-os`,
        address: address(`k8s-gpu-${n}.kube-on-os`),
        labels: { "example.com/gpu": "true", "kube-on-os/pool": "gpu" },
        taints: ["gpu=true:NoSchedule"],
        instance_id: server(`k8s-gpu-${n}.kube-on-os`),
      })),
      ...[0, 1, 2].map((n) => ({
        id: `k8s-web-${n}.kube-on-os`,
        address: address(`k8s-web-${n}.kube-on-os`),
        labels: { "kube-on-os/pool": "web" },
        taints: [],
        instance_id: server(`k8s-web-${n}.kube-on-os`),
      })),
    ]);
    // Neutron's picks come from the DHCP half of the private network.
    for (const node of pillar.microk8s.nodes.slice(4)) expect(Number(node.address.split(".")[2])).toBeGreaterThanOrEqual(128);
    expect(pillar.microk8s.control_plane).toEqual(["k8s-master.kube-on-os", "k8s-worker-0.kube-on-os", "k8s-worker-1.kube-on-os"]);
  });

  it("adds a pool and grows another without touching any other machine", async () => {
    const before = new Map((await target.servers()).map((s) => [s.name, s.id]));
    const pools = { ...POOLS, web: { ...POOLS.web, count: 4 }, db: { count: 1 } };
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_node_pools: JSON.stringify(pools) });
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toMatch(/Resources: \d+ added, 0 changed, 0 destroyed/);
    const after = new Map((await target.servers()).map((s) => [s.name, s.id]));
    for (const [name, id] of before) expect(after.get(name)).toBe(id);
    expect([...after.keys()].filter((n) => !before.has(n)).sort()).toEqual(["k8s-db-0.kube-on-os", "k8s-web-3.kube-on-os"]);
  });

  it("removes a pool's machines with the pool, and only them", async () => {
    const before = new Map((await target.servers()).map((s) => [s.name, s.id]));
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_node_pools: JSON.stringify({ web: POOLS.web }) });
    expect(apply.stderr).toBe("");
    const after = new Map((await target.servers()).map((s) => [s.name, s.id]));
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

  it("tags every server, network, port, group and load balancer part, and gives the servers their metadata", async () => {
    const tagged = (resource: Record<string, unknown>) => [...((resource.tags as string[]) ?? [])].sort();
    const clusterTagged = ["kube-on-os:kube-on-os", "team-a"];
    for (const server of double.nova.servers.all()) {
      expect([server.name, tagged(server), server.metadata]).toEqual([
        server.name,
        clusterTagged,
        { owner: "team-a", "cost center": "4711" },
      ]);
    }
    const neutron = double.neutron;
    const ours = (resources: Record<string, unknown>[]) => resources.filter((r) => String(r.name).startsWith("kube-on-os-"));
    for (const resource of [
      ...ours(neutron.networks.all()),
      ...ours(neutron.subnets.all()),
      ...neutron.routers.all(),
      ...neutron.floatingips.all(),
    ]) {
      expect([resource.name ?? resource.floating_ip_address, tagged(resource)]).toEqual([
        resource.name ?? resource.floating_ip_address,
        clusterTagged,
      ]);
    }
    const ports = neutron.ports.all().filter((port) => String(port.name).endsWith("-private") || String(port.name).endsWith("-public"));
    expect(ports.length).toBeGreaterThan(10);
    for (const port of ports) expect([port.name, tagged(port)]).toEqual([port.name, clusterTagged]);
    for (const group of neutron.securityGroups.all().filter((g) => g.name !== "default"))
      expect([group.name, tagged(group)]).toEqual([group.name, clusterTagged]);
    for (const part of [
      ...double.octavia.loadBalancers.all(),
      ...double.octavia.listeners.all(),
      ...double.octavia.pools.all(),
      ...double.octavia.members.all(),
    ]) {
      expect([part.name, tagged(part)]).toEqual([part.name, clusterTagged]);
    }
  });

  it("changes the tags and the servers' metadata in place, replacing nothing", async () => {
    const before = new Map((await target.servers()).map((s) => [s.name, s.id]));
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], {
      TF_VAR_node_pools: JSON.stringify({ web: POOLS.web }),
      TF_VAR_tags: '["team-b"]',
      TF_VAR_server_metadata: '{ owner = "team-b" }',
    });
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toMatch(/Resources: 0 added, [1-9]\d* changed, 0 destroyed/);
    for (const server of double.nova.servers.all()) {
      expect(before.get(String(server.name))).toBe(server.id);
      expect([server.name, [...(server.tags as string[])].sort(), server.metadata]).toEqual([
        server.name,
        ["kube-on-os:kube-on-os", "team-b"],
        { owner: "team-b" },
      ]);
    }
    const networks = double.neutron.networks.all().filter((n) => String(n.name).startsWith("kube-on-os-"));
    expect(networks.map((n) => [...(n.tags as string[])].sort())).toEqual([
      ["kube-on-os:kube-on-os", "team-b"],
      ["kube-on-os:kube-on-os", "team-b"],
    ]);
  });

  it("destroys everything it created, leaving the double as seeded", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"], { TF_VAR_node_pools: JSON.stringify({ web: POOLS.web }) });
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
  });
});
