/**
 * The OpenStack API double's Octavia, exercised by the real provider: a load balancer on a
 * private subnet with its VIP port in Neutron and a floating IP on it, listeners, pools, members
 * and health monitors, through the provisioning_status lifecycle the provider waits on.
 */
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { authenticate, fixture, ok, projectScope } from "./support/openstack-double";

let double: OpenStackDouble;

beforeEach(async () => {
  double = await startOpenStackDouble({ loadBalancerAvailabilityZones: ["az1"] });
});

afterEach(async () => {
  await double.close();
});

describe("OpenStack API double: Octavia", () => {
  it("serves load balancers, listeners, pools, members and monitors to the real provider: apply, no-change re-plan, destroy", async () => {
    const tofu = await fixture(double, "octavia");

    await ok(tofu(["apply", "-auto-approve", "-input=false"]));
    const [lb] = double.octavia.loadBalancers.all();
    expect(lb).toMatchObject({ provisioning_status: "ACTIVE", operating_status: "ONLINE", availability_zone: "az1" });
    const vip = double.neutron.ports.get(String(lb.vip_port_id));
    expect(vip).toMatchObject({ device_owner: "Octavia", device_id: `lb-${lb.id}`, admin_state_up: false });
    const [fip] = double.neutron.floatingips.all();
    expect(fip).toMatchObject({ port_id: vip.id, fixed_ip_address: lb.vip_address, status: "ACTIVE" });
    expect(double.octavia.listeners.all().map((l) => l.protocol_port)).toEqual(expect.arrayContaining([6443, 16443]));
    expect(double.octavia.members.all()).toHaveLength(3);
    expect(
      double.octavia.healthMonitors
        .all()
        .map((h) => h.type)
        .sort(),
    ).toEqual(["HTTPS", "TCP"]);
    const everything = [double.octavia.listeners, double.octavia.pools, double.octavia.members, double.octavia.healthMonitors];
    expect(everything.flatMap((c) => c.all()).every((item) => item.provisioning_status === "ACTIVE")).toBe(true);

    const replan = await tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);

    await ok(tofu(["destroy", "-auto-approve", "-input=false"]));
    expect(double.resourceCount()).toBe(0);
    expect(double.unhandled).toEqual([]);
  });

  it("leaves Octavia out with octavia: false: no load-balancer service in the catalog, no load-balancer route", async () => {
    const without = await startOpenStackDouble({ octavia: false });
    try {
      const auth = await authenticate(without, projectScope(without));
      expect(auth.status).toBe(201);
      const { token } = (await auth.json()) as { token: { catalog: { type: string }[] } };
      expect(token.catalog.map((service) => service.type)).toEqual([
        "identity",
        "network",
        "compute",
        "image",
        "block-storage",
        "volumev3",
      ]);
      // A client that found no endpoint never sends this; one that did is a gap, loudly.
      const errors: string[] = [];
      const spy = jest.spyOn(console, "error").mockImplementation((line: string) => void errors.push(line));
      const lbs = await fetch(`${without.url}/load-balancer/v2.0/lbaas/loadbalancers`, {
        headers: { "x-auth-token": String(auth.headers.get("x-subject-token")) },
      });
      spy.mockRestore();
      expect(lbs.status).toBe(501);
      expect(without.unhandled).toEqual([{ method: "GET", url: "/load-balancer/v2.0/lbaas/loadbalancers", status: 501 }]);
      expect(errors).toHaveLength(1);
    } finally {
      await without.close();
    }
  });
});
