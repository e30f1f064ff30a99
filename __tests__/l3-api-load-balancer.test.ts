/**
 * L2 and L3 for api_load_balancer on clouds with and without Octavia: the stack planned (and, for
 * "on" without Octavia, applied) by real OpenTofu and Terraform with the real OpenStack provider
 * against two OpenStack API doubles, one whose catalog lists Octavia and one whose does not.
 */
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { planJson } from "./support/plan";
import { describeEachCli, RunResult, TfCli } from "./support/tofu";
import { WITHOUT_PROVISIONERS, workspace } from "./support/workspace";
import { doubleTarget } from "./support/target";

let withOctavia: OpenStackDouble;
let withoutOctavia: OpenStackDouble;
let state: StateServer;

beforeAll(async () => {
  withOctavia = await startOpenStackDouble({ settled: true });
  withoutOctavia = await startOpenStackDouble({ octavia: false, settled: true });
  state = await startStateServer();
});

afterAll(async () => {
  await withOctavia.close();
  await withoutOctavia.close();
  await state.close();
});

afterEach(() => {
  // A request the double does not implement is a gap in the double, or here a request to an
  // Octavia the catalog does not list: never something to ignore.
  expect(withOctavia.unhandled).toEqual([]);
  expect(withoutOctavia.unhandled).toEqual([]);
});

function oneLine(result: RunResult): string {
  return `${result.stderr}${result.stdout}`.replace(/[│╷╵]/g, " ").replace(/\s+/g, " ");
}

/** The addresses of the planned managed resources of the API load balancer. */
function loadBalancerResources(plan: any): string[] {
  return plan.resource_changes
    .filter((c: any) => c.mode === "managed" && (c.type.startsWith("openstack_lb_") || c.address.includes("ApiLoadBalancer")))
    .map((c: any) => c.address as string);
}

const octaviaRequests = (double: OpenStackDouble) => double.requests.filter((r) => r.url.startsWith("/load-balancer/"));

describeEachCli("L2/L3: api_load_balancer on clouds with and without Octavia", (cli: TfCli) => {
  it('fails "on" without Octavia in the plan, in the one line of the catalog\'s postcondition, and creates nothing', async () => {
    const ws = await workspace(withoutOctavia, state, {}, WITHOUT_PROVISIONERS, cli);
    const before = withoutOctavia.requests.length;
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_api_load_balancer: "on" });
    expect(apply.status).toBe(1);
    expect(oneLine(apply)).toContain(
      'api_load_balancer is "on", but this cloud\'s catalog lists no load-balancer (Octavia) service: set it to "auto" or "off".',
    );
    expect(oneLine(apply)).toMatch(/data\.openstack_identity_auth_scope_v3\.ApiLoadBalancer_Catalog_\w+/);
    // The plan stopped it: no create, update or delete reached the cloud (token requests aside).
    const writes = withoutOctavia.requests
      .slice(before)
      .filter((r) => r.method !== "GET" && r.method !== "HEAD" && r.url !== "/identity/v3/auth/tokens");
    expect(writes).toEqual([]);
    expect(await doubleTarget(withoutOctavia).resources()).toEqual([]);
    expect(octaviaRequests(withoutOctavia)).toEqual([]);
  });

  it("fails api_floating_ip without Octavia in the plan, in one line, and never calls Octavia", async () => {
    const ws = await workspace(withoutOctavia, state, {}, WITHOUT_PROVISIONERS, cli);
    const plan = await ws.tofu(["plan", "-input=false"], { TF_VAR_api_floating_ip: "192.0.2.203" });
    expect(plan.status).toBe(1);
    expect(oneLine(plan)).toContain(
      "Invalid api_floating_ip: it is set, but this cloud's catalog lists no load-balancer (Octavia) service, so there is no API load balancer to give it to: leave it empty.",
    );
    expect(octaviaRequests(withoutOctavia)).toEqual([]);
  });

  it('plans no load balancer for "auto" without Octavia, and never calls Octavia', async () => {
    const ws = await workspace(withoutOctavia, state, {}, {}, cli);
    const plan = await planJson(ws, { TF_VAR_api_load_balancer: "auto" });
    expect(loadBalancerResources(plan)).toEqual([]);
    // The master's floating IP is the API's address; the bastion has the other one.
    expect(plan.resource_changes.filter((c: any) => c.type === "openstack_networking_floatingip_v2")).toHaveLength(2);
    expect(plan.planned_values.outputs.quota_needs.value.network.floatingip).toBe(2);
    expect(octaviaRequests(withoutOctavia)).toEqual([]);
  });

  it('plans no load balancer for "off" on a cloud with Octavia, and the whole one for "auto"', async () => {
    const ws = await workspace(withOctavia, state, {}, {}, cli);
    const off = await planJson(ws, { TF_VAR_api_load_balancer: "off" });
    expect(loadBalancerResources(off)).toEqual([]);
    expect(off.planned_values.outputs.quota_needs.value.network.floatingip).toBe(2);
    const auto = await planJson(ws, { TF_VAR_api_load_balancer: "auto" });
    const types = (addresses: string[]) => [...new Set(addresses.map((a) => a.split(".")[0]))].sort();
    expect(types(loadBalancerResources(auto))).toEqual([
      "openstack_lb_listener_v2",
      "openstack_lb_loadbalancer_v2",
      "openstack_lb_member_v2",
      "openstack_lb_monitor_v2",
      "openstack_lb_pool_v2",
      "openstack_networking_floatingip_associate_v2",
      "openstack_networking_floatingip_v2",
      "openstack_networking_secgroup_rule_v2",
    ]);
    expect(auto.planned_values.outputs.quota_needs.value.network.floatingip).toBe(3);
  });
});
