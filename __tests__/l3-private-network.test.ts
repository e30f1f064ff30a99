/**
 * L2 and L3 for an existing private network (private_network_id; issue 39): real OpenTofu and
 * Terraform with the real OpenStack provider against the OpenStack API double, whose project has
 * its networks before any deployment. One that fits the layout takes every machine's private
 * port and is left as it was; one that does not fails the plan in one line that says why, before
 * anything is created.
 */
import type { StateServer } from "./doubles/http-state/server";
import type { OpenStackDouble } from "./doubles/openstack/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import { failedPlan } from "./support/plan";
import type { CloudTarget } from "./support/target";
import { describeEachCli, TfCli } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

const OTHER_PROJECT = "7c1e2d3f4a5b46c7d8e9f0a1b2c3d4e5";
/** The upper half of a /16's host numbers, as the stack's own private subnet hands them out. */
const upperHalf = (prefix: string) => [{ start: `${prefix}.128.0`, end: `${prefix}.255.254` }];

useCloud(
  {
    double: {
      settled: true,
      existingRouters: [{ name: "lab-router" }],
      existingNetworks: [
        // Fits: the bastion's address its gateway, DHCP on, the pools above the fixed addresses.
        { name: "lab-private", cidr: "10.1.0.0/16", gatewayIp: "10.1.0.1", allocationPools: upperHalf("10.1") },
        // A router's interface holds the gateway's address.
        { name: "routed", cidr: "10.51.0.0/16", gatewayIp: "10.51.0.1", allocationPools: upperHalf("10.51"), router: "lab-router" },
        // Neutron's default pools: every address but the gateway's.
        { name: "default-pools", cidr: "10.52.0.0/16", gatewayIp: "10.52.0.1" },
        { name: "other-gateway", cidr: "10.53.0.0/16", gatewayIp: "10.53.0.254", allocationPools: upperHalf("10.53") },
        { name: "no-dhcp", cidr: "10.54.0.0/16", gatewayIp: "10.54.0.1", allocationPools: upperHalf("10.54"), enableDhcp: false },
        {
          name: "small-pool",
          cidr: "10.55.0.0/16",
          gatewayIp: "10.55.0.1",
          allocationPools: [{ start: "10.55.200.0", end: "10.55.200.9" }],
        },
        {
          name: "foreign",
          cidr: "10.56.0.0/16",
          gatewayIp: "10.56.0.1",
          allocationPools: upperHalf("10.56"),
          ownerProjectId: OTHER_PROJECT,
        },
      ],
    },
    state: GITLAB_STATE,
  },
  (cloud) => ({ double, target, state } = cloud),
);

function workspace(cli: TfCli): Promise<Workspace> {
  return makeWorkspace(double, state, {}, WITHOUT_PROVISIONERS, cli);
}

const networkId = (name: string) => String(double.neutron.networks.all().find((n) => n.name === name)!.id);
const given = (name: string, cidr: string) => ({ TF_VAR_private_network_id: networkId(name), TF_VAR_private_network_cidr: cidr });

describeEachCli(
  "L2: an existing private network that does not fit the layout fails the plan in one line, before anything is created",
  (cli) => {
    let ws: Workspace;

    beforeAll(async () => {
      ws = await workspace(cli);
    });

    const failed = (env: NodeJS.ProcessEnv) => failedPlan(ws, target, env);

    it("names private_network_cidr when the network has no subnet of that CIDR", async () => {
      const id = networkId("lab-private");
      expect(await failed({ TF_VAR_private_network_id: id, TF_VAR_private_network_cidr: "10.2.0.0/16" })).toContain(
        `Invalid private network: private_network_id=${id} has no subnet whose CIDR is private_network_cidr=10.2.0.0/16 (openstack subnet list --network <id>): set private_network_cidr to its subnet's CIDR.`,
      );
    });

    it("refuses a gateway a router's interface holds, naming the port", async () => {
      const router = double.neutron.ports
        .all()
        .find((p) => p.network_id === networkId("routed") && p.device_owner === "network:router_interface")!;
      expect(await failed(given("routed", "10.51.0.0/16"))).toContain(
        `Invalid private network: private_network_id=${networkId("routed")}'s gateway address 10.51.0.1 is held by port ${String(router.id)} ("", device owner "network:router_interface"), and the bastion's private port must take it: free it (openstack router remove subnet, or openstack port delete).`,
      );
    });

    it("refuses allocation pools over the fixed addresses, and a gateway that is not the bastion's address", async () => {
      expect(await failed(given("default-pools", "10.52.0.0/16"))).toContain(
        `Invalid private network: the subnet 10.52.0.0/16 of private_network_id=${networkId("default-pools")} must keep its allocation pools (10.52.0.2-10.52.255.254) above the machines' fixed addresses, which reach 10.52.0.101: shrink the pools`,
      );
      expect(await failed(given("other-gateway", "10.53.0.0/16"))).toContain(
        `Invalid private network: the subnet 10.53.0.0/16 of private_network_id=${networkId("other-gateway")} has gateway "10.53.0.254", not the bastion's private address 10.53.0.1 (host number 1 of private_network_cidr)`,
      );
    });

    it("refuses a subnet without DHCP, one whose pools are too small, and another project's", async () => {
      expect(await failed(given("no-dhcp", "10.54.0.0/16"))).toContain(
        `Invalid private network: the subnet 10.54.0.0/16 of private_network_id=${networkId("no-dhcp")} has DHCP off`,
      );
      expect(await failed(given("small-pool", "10.55.0.0/16"))).toContain(
        `Invalid private network: the subnet 10.55.0.0/16 of private_network_id=${networkId("small-pool")} hands out 10 addresses by DHCP, fewer than 16 (one per node pool worker, and 16 to spare): widen its pools or use fewer pool workers.`,
      );
      expect(await failed(given("foreign", "10.56.0.0/16"))).toContain(
        `Invalid private network: the subnet 10.56.0.0/16 of private_network_id=${networkId("foreign")} belongs to project ${OTHER_PROJECT}, not to this deployment's`,
      );
    });
  },
);

describeEachCli("L3: a deployment on an existing private network: apply, re-plan with no changes, destroy", (cli) => {
  let ws: Workspace;
  const env = () => ({ TF_VAR_private_network_id: networkId("lab-private") });

  beforeAll(async () => {
    ws = await workspace(cli);
  });

  it("puts every machine's private port on it, the bastion's at its gateway, and creates no private network", async () => {
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], env());
    expect(apply.stderr).toBe("");
    const lab = networkId("lab-private");
    expect(double.neutron.networks.all().map((n) => n.name)).not.toContain("kube-on-os-private");
    const privatePorts = double.neutron.ports.all().filter((p) => String(p.name).endsWith("-private"));
    expect(privatePorts.map((p) => [p.name, p.network_id]).sort()).toEqual(
      ["bastion", "k8s-master", "k8s-worker-0", "k8s-worker-1", "salt"].map((host) => [`${host}.kube-on-os-private`, lab]).sort(),
    );
    const bastion = privatePorts.find((p) => p.name === "bastion.kube-on-os-private")!;
    expect((bastion.fixed_ips as { ip_address: string }[])[0].ip_address).toBe("10.1.0.1");
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    expect([outputs.private_network_id.value, outputs.quota_needs.value.network.network, outputs.quota_needs.value.network.subnet]).toEqual(
      [lab, 1, 1],
    );
  });

  it("re-plans with no changes: the gateway's holder is its own bastion's port now", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"], env());
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
  });

  it("destroys everything it created, and leaves the network and its subnet as they were", async () => {
    const lab = networkId("lab-private");
    const subnets = double.neutron.subnets.all().filter((s) => s.network_id === lab);
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"], env());
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
    expect(double.neutron.subnets.all().filter((s) => s.network_id === lab)).toEqual(subnets);
  });
});
