/**
 * L2 and L3 for an existing router (router_id) and an existing public network
 * (public_network_id), issue 19: planned, applied, re-planned and destroyed by real OpenTofu and
 * Terraform with the real OpenStack provider against the OpenStack API double, whose project has
 * the router and the network before any deployment. A deployment made before either variable
 * existed keeps its network: the four resources that gained a count move to their index 0.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { OpenStackDouble } from "./doubles/openstack/server";
import type { StateServer } from "./doubles/http-state/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import type { CloudTarget } from "./support/target";
import { failedPlan, planJson } from "./support/plan";
import { synthToDir } from "./support/synth";
import { describeEachCli, runTfAsync, TfCli } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

/** The project's own router, with its gateway on the external network and no interface yet. */
const LAB_ROUTER = "lab-router";
/** A router without an external gateway: floating IPs cannot reach a subnet behind it. */
const BARE_ROUTER = "bare-router";
/** The campus network, routed by its own router, its DHCP pool in the upper half as ours would be. */
const CAMPUS = { name: "campus", cidr: "10.20.0.0/16", allocationPools: [{ start: "10.20.128.2", end: "10.20.255.254" }] };
/** A routed network whose pool is Neutron's default, the whole subnet: host numbers 10 and 11 are in it. */
const CROWDED = { name: "crowded", cidr: "10.30.0.0/24" };
/** Another project's routed network, shared with this one. */
const SHARED = { name: "shared", cidr: "10.50.0.0/16", allocationPools: [{ start: "10.50.128.2", end: "10.50.255.254" }] };
const OTHER_PROJECT = "7c1e2d3f4a5b46c7d8e9f0a1b2c3d4e5";
/** A network without a router, so without a gateway for us to use. */
const ISOLATED = { name: "isolated", cidr: "10.40.0.0/24", gatewayIp: null };

useCloud(
  {
    double: {
      settled: true,
      existingRouters: [
        { name: LAB_ROUTER },
        { name: "campus-router" },
        { name: "crowded-router" },
        { name: "shared-router" },
        { name: BARE_ROUTER, externalGateway: false },
      ],
      existingNetworks: [
        { ...CAMPUS, router: "campus-router" },
        { ...CROWDED, router: "crowded-router" },
        ISOLATED,
        { ...SHARED, router: "shared-router", ownerProjectId: OTHER_PROJECT },
      ],
    },
    state: GITLAB_STATE,
  },
  (cloud) => ({ double, target, state } = cloud),
);

const routerId = (name: string) => double.neutron.routers.all().find((r) => r.name === name)!.id;
const networkId = (name: string) => double.neutron.networks.all().find((n) => n.name === name)!.id;

function workspace(cli: TfCli, synthEnv: NodeJS.ProcessEnv = {}): Promise<Workspace> {
  return makeWorkspace(double, state, synthEnv, WITHOUT_PROVISIONERS, cli);
}

/** What the seeded networking looks like, to compare before and after a deployment. */
function seededNetworking() {
  const seeded = (items: Record<string, unknown>[]) => items.filter((r) => r.seeded === true).map((r) => JSON.stringify(r));
  return {
    networks: seeded(double.neutron.networks.all()),
    subnets: seeded(double.neutron.subnets.all()),
    routers: seeded(double.neutron.routers.all()),
    ports: seeded(double.neutron.ports.all()),
  };
}

function publicFixedIps(name: string): string[] {
  const port = double.neutron.ports.all().find((p) => p.name === name)!;
  return (port.fixed_ips as { subnet_id: string; ip_address: string }[]).map((ip) => `${ip.subnet_id} ${ip.ip_address}`);
}

/**
 * Every data source is read at plan time: one the plan defers to the apply (because it reads a
 * resource still to be created) would check its quota or network after something exists.
 */
async function expectNothingDeferred(ws: Workspace) {
  const plan = await planJson(ws);
  expect(plan.planned_values.root_module.resources.filter((r: any) => r.mode === "data").map((r: any) => r.address)).toEqual([]);
}

/** quota_needs counts exactly what the apply used of each Neutron quota (as in l3-cloud-limits). */
async function expectQuotaNeedsUsed(ws: Workspace, before: Record<string, number | undefined>, expected: Record<string, number>) {
  const needs = JSON.parse((await ws.tofu(["output", "-json", "quota_needs"])).stdout).network;
  const after = double.neutron.usage() as Record<string, number | undefined>;
  expect(Object.fromEntries(Object.keys(needs).map((q) => [q, (after[q] ?? 0) - (before[q] ?? 0)]))).toEqual(needs);
  expect(needs).toMatchObject(expected);
}

describeEachCli("L3: an existing router: apply, re-plan with no changes, destroy", (cli) => {
  let ws: Workspace;
  let before: ReturnType<typeof seededNetworking>;

  beforeAll(async () => {
    before = seededNetworking();
    ws = await workspace(cli, { TF_VAR_router_id: routerId(LAB_ROUTER) });
  });

  it("applies, creating no router, and attaches the new public subnet to the existing one", async () => {
    await expectNothingDeferred(ws);
    const usage = double.neutron.usage();
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    await expectQuotaNeedsUsed(ws, usage, { network: 2, subnet: 2, router: 0 });
    expect((await target.resources()).filter((line) => line.startsWith("router: "))).toEqual([]);
    const publicSubnet = double.neutron.subnets.all().find((s) => s.name === "kube-on-os-public")!;
    const interfaces = double.neutron.ports
      .all()
      .filter((p) => p.device_owner === "network:router_interface" && p.device_id === routerId(LAB_ROUTER));
    expect(interfaces.map((p) => (p.fixed_ips as { subnet_id: string }[])[0].subnet_id)).toEqual([publicSubnet.id]);
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect(outputs.router_id.value).toBe(routerId(LAB_ROUTER));
    expect(outputs.public_subnet_id.value).toBe(publicSubnet.id);
    // Both floating IPs and the load balancer's reach their ports through the existing router.
    expect(double.neutron.floatingips.all().map((f) => f.router_id)).toEqual([
      routerId(LAB_ROUTER),
      routerId(LAB_ROUTER),
      routerId(LAB_ROUTER),
    ]);
  });

  it("re-plans with no changes", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("destroys everything it created, and leaves the router as it was", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
    expect(seededNetworking()).toEqual(before);
  });
});

describeEachCli("L3: an existing public network: apply, re-plan with no changes, destroy", (cli) => {
  let ws: Workspace;
  let before: ReturnType<typeof seededNetworking>;

  beforeAll(async () => {
    before = seededNetworking();
    ws = await workspace(cli, { TF_VAR_public_network_id: networkId(CAMPUS.name), TF_VAR_public_network_cidr: CAMPUS.cidr });
  });

  it("applies, creating no public network, subnet, router or interface", async () => {
    await expectNothingDeferred(ws);
    const usage = double.neutron.usage();
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    await expectQuotaNeedsUsed(ws, usage, { network: 1, subnet: 1, router: 0 });
    const held = await target.resources();
    expect(held.filter((line) => /^(network|subnet|router): /.test(line))).toEqual([
      "network: kube-on-os-private",
      "subnet: kube-on-os-private",
    ]);
    expect(double.neutron.ports.all().filter((p) => p.seeded !== true && p.device_owner === "network:router_interface")).toEqual([]);
  });

  it("puts the bastion, the master and the load balancer's VIP on the existing subnet, at the fixed addresses", async () => {
    const campus = double.neutron.subnets.all().find((s) => s.name === CAMPUS.name)!;
    expect(publicFixedIps("bastion.kube-on-os-public")).toEqual([`${campus.id} 10.20.0.10`]);
    expect(publicFixedIps("k8s-master.kube-on-os-public")).toEqual([`${campus.id} 10.20.0.11`]);
    const [loadBalancer] = double.octavia.loadBalancers.all();
    expect(loadBalancer.vip_subnet_id).toBe(campus.id);
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect(outputs.public_network_id.value).toBe(networkId(CAMPUS.name));
    expect(outputs.public_subnet_id.value).toBe(campus.id);
    // Null: no router of ours, and the plan does not know the network's (an output that is null is not shown).
    expect(outputs.router_id).toBeUndefined();
    expect(double.neutron.floatingips.all().map((f) => f.router_id)).toEqual(Array(3).fill(routerId("campus-router")));
  });

  it("counts one network, one subnet and no router against the quotas", async () => {
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect(outputs.quota_needs.value.network).toMatchObject({ network: 1, subnet: 1, router: 0 });
    // bastion 2, Salt master 1, master 2, workers 2, the VIP, the private network's DHCP port
    expect(outputs.quota_needs.value.network.port).toBe(5 + 2 + 1 + 1);
  });

  it("re-plans with no changes", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("destroys everything it created, and leaves the network and its router as they were", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
    expect(seededNetworking()).toEqual(before);
  });
});

describeEachCli("L2: an existing router or network that cannot serve fails the plan in one line, before anything is created", (cli) => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace(cli);
  });

  const failed = (env: NodeJS.ProcessEnv) => failedPlan(ws, target, env);

  it("names router_id when no router has that ID", async () => {
    const missing = "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d";
    const stderr = await failed({ TF_VAR_router_id: missing });
    // The provider's message; the data source's address names the variable.
    expect(stderr).toMatch(/Error: No Router found with data\.openstack_networking_router_v2\.router_id\[0\],/);
  });

  it("names router_id and external_network_name when the router's gateway is not on the external network", async () => {
    const stderr = await failed({ TF_VAR_router_id: routerId(BARE_ROUTER) });
    expect(stderr).toContain(
      `Invalid router: router_id=${routerId(BARE_ROUTER)} has its external gateway on network "", not on external_network_name=vlan1066 (${networkId("vlan1066")}), where the floating IPs come from; give it a gateway there (openstack router set --external-gateway) or use another router.`,
    );
  });

  it("names public_network_cidr and external_network_name when the new public network overlaps the external one", async () => {
    // Neutron refuses the router's interface on it (l3_db.py _check_for_dup_router_subnets), after most of the stack.
    const stderr = await failed({ TF_VAR_public_network_cidr: "192.0.0.0/16" });
    expect(stderr).toContain(
      "Invalid public network: public_network_cidr=192.0.0.0/16 overlaps 192.0.2.0/24, a subnet of external_network_name=vlan1066, and Neutron puts no two overlapping subnets on one router: choose a public_network_cidr outside it.",
    );
  });

  it("names public_network_id and public_network_cidr when the network has no subnet of that CIDR", async () => {
    const stderr = await failed({ TF_VAR_public_network_id: networkId(CAMPUS.name) });
    expect(stderr).toContain(
      `Invalid public network: public_network_id=${networkId(CAMPUS.name)} has no subnet whose CIDR is public_network_cidr=10.0.0.0/16 (openstack subnet list --network <id>): set public_network_cidr to its subnet's CIDR.`,
    );
  });

  it("names the fixed addresses when the subnet's allocation pool holds them", async () => {
    const stderr = await failed({ TF_VAR_public_network_id: networkId(CROWDED.name), TF_VAR_public_network_cidr: CROWDED.cidr });
    expect(stderr).toContain(
      `Invalid public network: the subnet ${CROWDED.cidr} of public_network_id=${networkId(CROWDED.name)} must leave the bastion's and the Kubernetes master's fixed addresses 10.30.0.10 and 10.30.0.11 (host numbers 10 and 11 of public_network_cidr) outside its gateway (10.30.0.1) and its allocation pools (10.30.0.2-10.30.0.254): shrink the pools`,
    );
  });

  it("says Neutron lets only the owner choose fixed addresses on another project's network", async () => {
    const stderr = await failed({ TF_VAR_public_network_id: networkId(SHARED.name), TF_VAR_public_network_cidr: SHARED.cidr });
    expect(stderr).toContain(
      `Invalid public network: the subnet ${SHARED.cidr} of public_network_id=${networkId(SHARED.name)} belongs to project ${OTHER_PROJECT}, not to this deployment's (${double.identity.project.id}): Neutron lets only a network's owner choose the bastion's and the master's fixed addresses on it.`,
    );
  });

  it("says a subnet without a gateway is not routed", async () => {
    const stderr = await failed({ TF_VAR_public_network_id: networkId(ISOLATED.name), TF_VAR_public_network_cidr: ISOLATED.cidr });
    expect(stderr).toContain(
      `Invalid public network: the subnet ${ISOLATED.cidr} of public_network_id=${networkId(ISOLATED.name)} has no gateway: it must be routed to the external network, whose router is its gateway.`,
    );
  });

  it("refuses router_id with public_network_id, naming both", async () => {
    const stderr = await failed({ TF_VAR_router_id: routerId(LAB_ROUTER), TF_VAR_public_network_id: networkId(CAMPUS.name) });
    expect(stderr).toContain("router_id must be empty when public_network_id is set");
  });
});

/**
 * The stack as it was before router_id and public_network_id: the same, without the count of the
 * four resources that gained one (and so without the `moved` blocks). `X[*].id` of a resource
 * without a count is `[X.id]`, so every reference still holds.
 */
function beforeExistingNetworks(dir: string): void {
  const file = path.join(dir, "cdk.tf.json");
  const json = JSON.parse(fs.readFileSync(file, "utf8"));
  // The floating IPs' moves (bastion_floating_ip, master_floating_ip) are the upgrade matrix's.
  const networking = (moved: { from: string }) => !moved.from.startsWith("openstack_networking_floatingip_v2.");
  for (const moved of (json.moved as { from: string }[]).filter(networking)) {
    const [type, name] = moved.from.split(".");
    delete json.resource[type][name].count;
  }
  json.moved = (json.moved as { from: string }[]).filter((moved) => !networking(moved));
  fs.writeFileSync(file, JSON.stringify(json, null, 2));
}

describeEachCli("L3: a deployment made before router_id and public_network_id keeps its network", (cli) => {
  let dir: string;
  let env: NodeJS.ProcessEnv;
  const tf = (args: string[]) => runTfAsync(cli, args, dir, env);

  beforeAll(async () => {
    dir = await synthToDir(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-l3-moved-")));
    env = { ...double.passwordEnv(), ...state.backendEnv(`kube-on-os-moved-${cli.name}-${process.pid}`), ...WITHOUT_PROVISIONERS };
  });

  it("applies the old stack, then plans only the moves to index 0, applies them, and plans no changes", async () => {
    const newJson = fs.readFileSync(path.join(dir, "cdk.tf.json"), "utf8");
    beforeExistingNetworks(dir);
    expect((await tf(["init", "-input=false"])).status).toBe(0);
    const install = await tf(["apply", "-auto-approve", "-input=false"]);
    expect(install.stderr).toBe("");
    const ids = new Map([...double.neutron.routers.all(), ...double.neutron.networks.all()].map((r) => [r.name, r.id]));

    fs.writeFileSync(path.join(dir, "cdk.tf.json"), newJson);
    // A plan of moves alone adds, changes and destroys nothing, but both CLIs count a move as a
    // change for -detailed-exitcode (2) until an apply records it in the state.
    const detailed = await tf(["plan", "-detailed-exitcode", "-input=false"]);
    expect(detailed.stdout).toContain("Plan: 0 to add, 0 to change, 0 to destroy.");
    expect(detailed.status).toBe(2);
    const plan = await tf(["plan", "-input=false", "-out=moves.plan"]);
    expect(plan.stderr).toBe("");
    const changes = JSON.parse((await tf(["show", "-json", "moves.plan"])).stdout).resource_changes;
    const changed = changes.filter((c: any) => !["no-op", "read"].includes(c.change.actions.join()));
    expect(changed).toEqual([]);
    const moved = changes.filter((c: any) => c.previous_address).map((c: any) => `${c.previous_address} -> ${c.address}`);
    // The private network and subnet too, which private_network_id gave a count (issue 39).
    expect(moved.sort()).toEqual(
      [
        "openstack_networking_network_v2.Network_PrivateNetwork_04AC6DEA",
        "openstack_networking_network_v2.Network_PublicNetwork_95DA8D1B",
        "openstack_networking_router_interface_v2.Network_PublicRouterInterface_C5176AB2",
        "openstack_networking_router_v2.Network_Router_B43C5A1B",
        "openstack_networking_subnet_v2.Network_PrivateSubnet_43E99EF4",
        "openstack_networking_subnet_v2.Network_PublicSubnet_F7F151DA",
      ].map((address) => `${address} -> ${address}[0]`),
    );
    const apply = await tf(["apply", "-auto-approve", "-input=false", "moves.plan"]);
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toContain("0 added, 0 changed, 0 destroyed");
    expect(new Map([...double.neutron.routers.all(), ...double.neutron.networks.all()].map((r) => [r.name, r.id]))).toEqual(ids);
    const replan = await tf(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("destroys it", async () => {
    const destroy = await tf(["destroy", "-auto-approve", "-input=false"]);
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
  });
});
