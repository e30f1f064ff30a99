/**
 * L2 and L3 for each role's own access (<role>_ingress_rules, <role>_security_groups; issue 39):
 * real OpenTofu and Terraform with the real OpenStack provider against the OpenStack API double,
 * whose project holds its own groups before any deployment. A running cluster takes them in place,
 * each port its role's, and gives them back the same way; a group the plan cannot find fails it in
 * words that name the variable and the entry, before anything is created.
 */
import type { StateServer } from "./doubles/http-state/server";
import type { OpenStackDouble } from "./doubles/openstack/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import { failedPlan, planJson } from "./support/plan";
import type { CloudTarget } from "./support/target";
import { describeEachCli, TfCli } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

const OTHER_PROJECT = "7c1e2d3f4a5b46c7d8e9f0a1b2c3d4e5";

useCloud(
  {
    double: {
      settled: true,
      existingSecurityGroups: [
        { name: "office-ssh", ingress: { protocol: "tcp", port_range_min: 22, port_range_max: 22, remote_ip_prefix: "198.51.100.0/24" } },
        { name: "monitoring", ingress: { protocol: "tcp", port_range_min: 9100, port_range_max: 9100, remote_ip_prefix: "10.30.0.0/16" } },
        { name: "twin" },
        { name: "twin" },
        { name: "foreign", ownerProjectId: OTHER_PROJECT },
      ],
    },
    state: GITLAB_STATE,
  },
  (cloud) => ({ double, target, state } = cloud),
);

function workspace(cli: TfCli): Promise<Workspace> {
  return makeWorkspace(double, state, {}, WITHOUT_PROVISIONERS, cli);
}

const groupNamed = (name: string) => double.neutron.securityGroups.all().find((g) => g.name === name)!;

/**
 * Four default-pool nodes (the master, two more control-plane nodes, a worker) and a pool's
 * worker, small enough for the double's project's 20 cores.
 */
const NODES = { TF_VAR_num_kube_nodes: "4", TF_VAR_kube_node_flavor: "m1.medium", TF_VAR_node_pools: "{ edge = { count = 1 } }" };

/** Each role's rules, and the project's groups: the monitoring one by ID. */
const accessEnv = () => ({
  ...NODES,
  TF_VAR_bastion_ingress_rules: '["udp/51820 from 0.0.0.0/0"]',
  TF_VAR_control_plane_ingress_rules: '["tcp/8443 from 203.0.113.0/24", "icmp from 10.0.0.0/8"]',
  TF_VAR_worker_ingress_rules: '["tcp/30000-32767 from 10.20.0.0/16", "tcp/30443 from 192.0.2.0/24"]',
  TF_VAR_bastion_security_groups: '["office-ssh"]',
  TF_VAR_control_plane_security_groups: `["${String(groupNamed("monitoring").id)}"]`,
  TF_VAR_worker_security_groups: '["monitoring"]',
});

/** Every port of the deployment's machines, by name, with its groups' names. */
function portGroups(): Record<string, string[]> {
  const name = (id: string) => String(double.neutron.securityGroups.get(id).name);
  return Object.fromEntries(
    double.neutron.ports
      .all()
      .filter((port) => String(port.device_owner).startsWith("compute:"))
      .map((port) => [port.name, (port.security_groups as string[]).map(name).sort()]),
  );
}

/** The ingress rules of the group `name`, as "<protocol> <ports> from <prefix>". */
function ingressOf(name: string): string[] {
  const group = groupNamed(name);
  return double.neutron.securityGroupRules
    .all()
    .filter((rule) => rule.security_group_id === group.id && rule.direction === "ingress")
    .map(
      (rule) =>
        `${String(rule.protocol)} ${String(rule.port_range_min)}-${String(rule.port_range_max)} from ${String(rule.remote_ip_prefix)}`,
    )
    .sort();
}

describeEachCli(
  "L2: a security group the plan cannot use fails it, naming the variable and the entry, before anything is created",
  (cli) => {
    let ws: Workspace;

    beforeAll(async () => {
      ws = await workspace(cli);
    });

    it("names worker_security_groups and the name when the project has no such group", async () => {
      const stderr = await failedPlan(ws, target, { TF_VAR_worker_security_groups: '["nope"]' });
      // The provider's words (data_source_openstack_networking_secgroup_v2.go); the lookup's address names the variable.
      expect(stderr).toContain("Error: No Security Group found with name: nope");
      expect(stderr).toContain('data.openstack_networking_secgroup_v2.worker_security_groups["nope"]');
    });

    it("does not find another project's group, by name or by ID", async () => {
      const id = String(groupNamed("foreign").id);
      for (const given of ["foreign", id]) {
        const stderr = await failedPlan(ws, target, { TF_VAR_bastion_security_groups: `["${given}"]` });
        expect(stderr).toContain("Error: No Security Group found with name:");
        expect(stderr).toContain(`data.openstack_networking_secgroup_v2.bastion_security_groups["${given}"]`);
      }
    });

    it("refuses a name two of the project's groups share", async () => {
      const stderr = await failedPlan(ws, target, { TF_VAR_control_plane_security_groups: '["twin"]' });
      expect(stderr).toContain("Error: More than one Security Group found with name: twin");
      expect(stderr).toContain('data.openstack_networking_secgroup_v2.control_plane_security_groups["twin"]');
    });
  },
);

describeEachCli("L3: a running cluster takes each role's rules and groups in place, and gives them back", (cli) => {
  let ws: Workspace;
  let machines: Record<string, unknown>;
  const servers = () => Object.fromEntries(double.nova.servers.all().map((server) => [server.name, server.id]));

  beforeAll(async () => {
    // Neutron's default quota of 10 groups would not hold the stack's 8, the project's 4 and its
    // default group: raised, as the project's admin would (docs/quotas.md).
    double.neutron.quotas.security_group = 20;
    ws = await workspace(cli);
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], NODES);
    if (apply.status !== 0) throw new Error(`the first apply failed:\n${apply.stderr}`);
    machines = servers();
  });

  afterAll(async () => {
    await ws.tofu(["destroy", "-auto-approve", "-input=false"], NODES);
  });

  it("adds a group of rules per role and the project's groups, updating the ports in place and replacing no machine", async () => {
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], accessEnv());
    expect(apply.stderr).toBe("");
    // A group and its rules per role (3 + 5); the bastion's, the master's and every node's private ports (2 + 2 + 3 + 1).
    expect(apply.stdout).toMatch(/^Apply complete! Resources: 8 added, 8 changed, 0 destroyed\.$/m);
    expect(servers()).toEqual(machines);
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    // The stack's five groups and the three made here; each new group's two egress rules count too.
    expect(outputs.quota_needs.value.network.security_group).toBe(8);
  });

  it("gives each port its role's groups: the bastion's, the control plane's (the master and the next two nodes), the workers'", () => {
    const prefix = "kube-on-os";
    const [internal, nodes] = [`${prefix}-internal`, `${prefix}-kube-nodes`];
    const controlPlane = [`${prefix}-control-plane-ingress`, "monitoring"];
    const worker = [`${prefix}-worker-ingress`, "monitoring"];
    const bastion = [`${prefix}-bastion-ingress`, "office-ssh"];
    const sorted = (groups: string[]) => [...groups].sort();
    expect(portGroups()).toEqual({
      [`bastion.${prefix}-public`]: sorted([`${prefix}-bastion`, ...bastion]),
      [`bastion.${prefix}-private`]: sorted([internal, ...bastion]),
      [`salt.${prefix}-private`]: sorted([internal, `${prefix}-salt-master`]),
      [`k8s-master.${prefix}-public`]: sorted([`${prefix}-kube-api`, ...controlPlane]),
      [`k8s-master.${prefix}-private`]: sorted([internal, nodes, ...controlPlane]),
      [`k8s-worker-0.${prefix}-private`]: sorted([internal, nodes, ...controlPlane]),
      [`k8s-worker-1.${prefix}-private`]: sorted([internal, nodes, ...controlPlane]),
      [`k8s-worker-2.${prefix}-private`]: sorted([internal, nodes, ...worker]),
      [`k8s-edge-0.${prefix}-private`]: sorted([internal, nodes, ...worker]),
    });
    expect(ingressOf(`${prefix}-bastion-ingress`)).toEqual(["udp 51820-51820 from 0.0.0.0/0"]);
    // ICMP takes no ports: every type and code.
    expect(ingressOf(`${prefix}-control-plane-ingress`)).toEqual(["icmp null-null from 10.0.0.0/8", "tcp 8443-8443 from 203.0.113.0/24"]);
    expect(ingressOf(`${prefix}-worker-ingress`)).toEqual(["tcp 30000-32767 from 10.20.0.0/16", "tcp 30443-30443 from 192.0.2.0/24"]);
  });

  it("re-plans with no changes", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"], accessEnv());
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("plans a rule removed, and nothing for the others reordered", async () => {
    const plan = await planJson(ws, {
      ...accessEnv(),
      TF_VAR_control_plane_ingress_rules: '["icmp from 10.0.0.0/8", "tcp/8443 from 203.0.113.0/24"]',
      TF_VAR_worker_ingress_rules: '["tcp/30443 from 192.0.2.0/24"]',
    });
    const changes = plan.resource_changes
      .filter((c: any) => !c.change.actions.includes("no-op") && !c.change.actions.includes("read"))
      .map((c: any) => [c.change.actions.join(","), c.address]);
    expect(changes).toEqual([
      [
        "delete",
        expect.stringMatching(
          /^openstack_networking_secgroup_rule_v2\.Network_WorkerIngressRule_[0-9A-F]{8}\["tcp\/30000-32767 from 10\.20\.0\.0\/16"\]$/,
        ),
      ],
    ]);
  });

  it("removes them again in place, leaving the project's groups as they were", async () => {
    const office = groupNamed("office-ssh");
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], NODES);
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toMatch(/^Apply complete! Resources: 0 added, 8 changed, 8 destroyed\.$/m);
    expect(servers()).toEqual(machines);
    expect(groupNamed("office-ssh")).toEqual(office);
    expect(Object.values(portGroups()).flat()).not.toContain("monitoring");
  });
});
