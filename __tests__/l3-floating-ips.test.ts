/**
 * L2 and L3 for floating IPs the project holds (bastion_floating_ip, master_floating_ip,
 * api_floating_ip; issue 39): planned, applied, re-planned and destroyed by real OpenTofu and
 * Terraform with the real OpenStack provider against the OpenStack API double, whose project
 * holds them before any deployment. Each goes to its port and comes back free at the destroy; one
 * that cannot serve fails the plan in one line that names it, before anything is created.
 */
import type { OpenStackDouble } from "./doubles/openstack/server";
import type { StateServer } from "./doubles/http-state/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import type { CloudTarget } from "./support/target";
import { failedPlan, planJson } from "./support/plan";
import { describeEachCli, TfCli } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

/** On the external network (192.0.2.0/24), free: the three a user reserved for DNS. */
const GIVEN = { bastion: "192.0.2.201", master: "192.0.2.202", api: "192.0.2.203" };
/** On another external network, which the router's gateway is not on. */
const ELSEWHERE = "198.51.100.20";
/** Another project's, which this project's credential cannot see. */
const FOREIGN = "192.0.2.204";
/** Held by another machine of the project, behind its own router. */
const TAKEN = "192.0.2.205";
const OTHER_PROJECT = "7c1e2d3f4a5b46c7d8e9f0a1b2c3d4e5";

useCloud(
  {
    double: {
      settled: true,
      existingRouters: [{ name: "campus-router" }],
      existingNetworks: [{ name: "campus", cidr: "10.20.0.0/16", router: "campus-router" }],
      otherExternalNetworks: [{ name: "vlan2000", cidr: "198.51.100.0/24" }],
      existingFloatingIps: [
        { address: GIVEN.bastion },
        { address: GIVEN.master },
        { address: GIVEN.api },
        { address: ELSEWHERE, network: "vlan2000" },
        { address: FOREIGN, ownerProjectId: OTHER_PROJECT },
        { address: TAKEN, port: { name: "campus-web", network: "campus", address: "10.20.0.50" } },
      ],
    },
    state: GITLAB_STATE,
  },
  (cloud) => ({ double, target, state } = cloud),
);

function workspace(cli: TfCli, synthEnv: NodeJS.ProcessEnv = {}): Promise<Workspace> {
  return makeWorkspace(double, state, synthEnv, WITHOUT_PROVISIONERS, cli);
}

const fip = (address: string) => double.neutron.floatingips.all().find((f) => f.floating_ip_address === address)!;
const portNamed = (name: string) => double.neutron.ports.all().find((p) => p.name === name)!;
const GIVEN_ENV = {
  TF_VAR_bastion_floating_ip: GIVEN.bastion,
  TF_VAR_master_floating_ip: GIVEN.master,
  TF_VAR_api_floating_ip: GIVEN.api,
};

describeEachCli("L3: floating IPs the project holds: apply, re-plan with no changes, destroy", (cli) => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace(cli, GIVEN_ENV);
  });

  it("applies, allocating no floating IP, and associates each given one with its port", async () => {
    // Every lookup is read at plan time, so that a bad address stops the plan.
    const plan = await planJson(ws);
    expect(plan.planned_values.root_module.resources.filter((r: any) => r.mode === "data").map((r: any) => r.address)).toEqual([]);
    const allocated = double.neutron.floatingips.all().length;
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    expect(double.neutron.floatingips.all().length).toBe(allocated);
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect(outputs.quota_needs.value.network.floatingip).toBe(0);
    expect([outputs.bastion_floating_ip.value, outputs.master_floating_ip.value, outputs.api_address.value]).toEqual([
      GIVEN.bastion,
      GIVEN.master,
      GIVEN.api,
    ]);
    const [loadBalancer] = double.octavia.loadBalancers.all();
    expect([fip(GIVEN.bastion).port_id, fip(GIVEN.master).port_id, fip(GIVEN.api).port_id]).toEqual([
      portNamed("bastion.kube-on-os-public").id,
      portNamed("k8s-master.kube-on-os-public").id,
      loadBalancer.vip_port_id,
    ]);
  });

  it("re-plans with no changes: each is its own port's already", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("refuses them to another deployment while this one holds them, naming the port or load balancer that does", async () => {
    const other = await workspace(cli, { ...GIVEN_ENV, TF_VAR_deploy_domain_name: "other.example" });
    const before = await target.resources();
    const plan = await other.tofu(["plan", "-input=false"]);
    expect(plan.status).toBe(1);
    expect(await target.resources()).toEqual(before);
    const stderr = plan.stderr.replace(/[│╷╵]/g, " ").replace(/\s+/g, " ");
    const [loadBalancer] = double.octavia.loadBalancers.all();
    for (const [variable, address, holder] of [
      ["bastion_floating_ip", GIVEN.bastion, `port ${portNamed("bastion.kube-on-os-public").id} ("bastion.kube-on-os-public")`],
      ["master_floating_ip", GIVEN.master, `port ${portNamed("k8s-master.kube-on-os-public").id} ("k8s-master.kube-on-os-public")`],
      ["api_floating_ip", GIVEN.api, `load balancer ${loadBalancer.id} ("kube-on-os-kube-api")`],
    ]) {
      expect(stderr).toContain(
        `Invalid ${variable}: ${variable}=${address} is in use by ${holder}, not by this deployment's: give a free floating IP, or free it first (openstack floating ip unset --port).`,
      );
    }
  });

  it("destroys everything it created, and leaves the given floating IPs to the project, free", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
    for (const address of Object.values(GIVEN)) expect([address, fip(address).port_id]).toEqual([address, null]);
  });
});

describeEachCli("L3: a running cluster takes the floating IPs it is given, and gives them back", (cli) => {
  let ws: Workspace;
  let machines: Record<string, unknown>;
  const servers = () => Object.fromEntries(double.nova.servers.all().map((server) => [server.name, server.id]));

  beforeAll(async () => {
    ws = await workspace(cli);
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    if (apply.status !== 0) throw new Error(`the first apply failed:\n${apply.stderr}`);
    machines = servers();
  });

  afterAll(async () => {
    await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
  });

  it("moves each role to its given address, releasing the allocated ones, and replaces no machine", async () => {
    const allocated = double.neutron.floatingips.all().filter((f) => f.seeded !== true);
    expect(allocated.length).toBe(3);
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], GIVEN_ENV);
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toMatch(/^Apply complete! Resources: 3 added, 0 changed, 6 destroyed\.$/m);
    expect(servers()).toEqual(machines);
    expect(double.neutron.floatingips.all().filter((f) => f.seeded !== true)).toEqual([]);
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect([outputs.bastion_floating_ip.value, outputs.master_floating_ip.value, outputs.api_address.value]).toEqual([
      GIVEN.bastion,
      GIVEN.master,
      GIVEN.api,
    ]);
  });

  it("takes new floating IPs again when they are no longer given, and leaves the given ones free", async () => {
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    expect(servers()).toEqual(machines);
    expect(double.neutron.floatingips.all().filter((f) => f.seeded !== true).length).toBe(3);
    for (const address of Object.values(GIVEN)) expect([address, fip(address).port_id]).toEqual([address, null]);
  });
});

describeEachCli("L2: a given floating IP that cannot serve fails the plan in one line, before anything is created", (cli) => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace(cli);
  });

  const failed = (env: NodeJS.ProcessEnv) => failedPlan(ws, target, env);

  it("names bastion_floating_ip when the project holds no such address, nor sees another project's", async () => {
    for (const address of ["192.0.2.250", FOREIGN]) {
      const stderr = await failed({ TF_VAR_bastion_floating_ip: address });
      // The provider's message; the lookup's address names the variable.
      expect(stderr).toMatch(
        /Error: No openstack_networking_floatingip_v2 found with data\.openstack_networking_floatingip_v2\.bastion_floating_ip\[0\],/,
      );
    }
  });

  it("names master_floating_ip and external_network_name when it is on another external network", async () => {
    const network = (name: string) => double.neutron.networks.all().find((n) => n.name === name)!.id;
    const stderr = await failed({ TF_VAR_master_floating_ip: ELSEWHERE });
    expect(stderr).toContain(
      `Invalid master_floating_ip: master_floating_ip=${ELSEWHERE} is a floating IP of network ${network("vlan2000")}, not of external_network_name=vlan1066 (${network("vlan1066")}), which the router's gateway is on: give one of that network.`,
    );
  });

  it("names the variable and the port that holds it when another machine's port has it", async () => {
    const web = portNamed("campus-web").id;
    for (const variable of ["bastion_floating_ip", "api_floating_ip"]) {
      const stderr = await failed({ [`TF_VAR_${variable}`]: TAKEN });
      expect(stderr).toContain(
        `Invalid ${variable}: ${variable}=${TAKEN} is in use by port ${web} ("campus-web"), not by this deployment's: give a free floating IP, or free it first (openstack floating ip unset --port).`,
      );
    }
  });

  it("refuses one address for two roles, and an API address without an API load balancer", async () => {
    expect(await failed({ TF_VAR_bastion_floating_ip: GIVEN.bastion, TF_VAR_master_floating_ip: GIVEN.bastion })).toContain(
      "master_floating_ip must be another address than bastion_floating_ip's: one floating IP reaches one port",
    );
    expect(await failed({ TF_VAR_api_floating_ip: GIVEN.api, TF_VAR_api_load_balancer: "off" })).toContain(
      'api_floating_ip must be empty when api_load_balancer is "off": there is no API load balancer to give it to',
    );
  });
});
