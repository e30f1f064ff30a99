/**
 * The OpenStack API double itself, exercised by the real provider: the Nova, Glance and Cinder
 * resources the machines use (instances on ports, a keypair, a server group, a volume attached
 * with compute_volume_attach_v2, a floating IP on a routed subnet), availability zones and a server
 * booting from a volume of a named type, Keystone's token scope and application credentials,
 * Neutron's 409 for a taken fixed IP, and the double's own rules (unknown ids, unknown requests).
 */
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import type { Resource } from "./doubles/openstack/store";
import { fixture as fixtureOf, FixtureTofu, issueToken, ok } from "./support/openstack-double";

let double: OpenStackDouble;

beforeEach(async () => {
  double = await startOpenStackDouble();
});

afterEach(async () => {
  await double.close();
});

function fixture(name: string): Promise<FixtureTofu> {
  return fixtureOf(double, name);
}

describe("OpenStack API double", () => {
  it("serves instances, keypairs, server groups, volumes and attachments to the real provider: apply, no-change re-plan, destroy", async () => {
    const tofu = await fixture("compute");
    const apply = await ok(tofu(["apply", "-auto-approve", "-input=false"]));
    expect(apply.stdout).toContain("Apply complete! Resources: 15 added, 0 changed, 0 destroyed.");

    const servers = double.nova.servers.all();
    expect(servers.map((s) => s.status)).toEqual(["ACTIVE", "ACTIVE"]);
    const ports = double.neutron.ports.all().filter((p) => p.device_owner === "compute:nova");
    expect(ports.map((p) => (p.fixed_ips as { ip_address: string }[])[0].ip_address).sort()).toEqual(["10.9.0.10", "10.9.0.11"]);
    const pairs = ports[0].allowed_address_pairs as { ip_address: string; mac_address: string }[];
    expect(pairs.map((p) => p.ip_address).sort()).toEqual(["10.152.183.0/24", "10.244.0.0/16"]);
    expect(pairs.every((p) => p.mac_address === ports[0].mac_address)).toBe(true);
    const [volume] = double.cinder.volumes.all();
    expect(volume).toMatchObject({ status: "in-use", size: 10 });
    expect(double.nova.serverGroups.all()[0].members).toHaveLength(2);
    const [fip] = double.neutron.floatingips.all();
    expect(fip).toMatchObject({ status: "ACTIVE", fixed_ip_address: expect.stringMatching(/^10\.9\.0\.1[01]$/) });

    const replan = await tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);

    expect((await ok(tofu(["destroy", "-auto-approve", "-input=false"]))).stdout).toContain("Destroy complete! Resources: 15 destroyed.");
    expect(double.resourceCount()).toBe(0);
    expect(double.unhandled).toEqual([]);
  });

  it("lists its availability zones to the provider and boots a server in one from a volume Nova creates from an image: apply, no-change re-plan, destroy", async () => {
    await double.close();
    double = await startOpenStackDouble({
      availabilityZones: ["az1", "az2", "az3"],
      volumeAvailabilityZones: ["az1", "az2", "az3"],
      volumeTypes: ["ssd"],
      crossAzAttach: false,
    });
    const tofu = await fixture("boot-volume");
    await ok(tofu(["apply", "-auto-approve", "-input=false"]));
    const outputs = JSON.parse((await ok(tofu(["output", "-json"]))).stdout) as Record<string, { value: unknown }>;
    expect(outputs.zones.value).toEqual(["az1", "az2", "az3"]);
    expect(outputs.zone.value).toBe("az2");

    const [server] = double.nova.servers.all();
    expect(server).toMatchObject({ status: "ACTIVE", availability_zone: "az2", image: "" });
    const [volume] = double.cinder.volumes.all();
    expect(volume).toMatchObject({ status: "in-use", size: 20, volume_type: "ssd", availability_zone: "az2", bootable: "true" });
    expect(volume.attachments).toEqual([expect.objectContaining({ server_id: server.id, device: "/dev/vda" })]);
    expect(server.volumes_attached).toEqual([{ id: volume.id, device: "/dev/vda", delete_on_termination: true }]);

    const replan = await tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);

    await ok(tofu(["destroy", "-auto-approve", "-input=false"]));
    expect(double.resourceCount()).toBe(0);
    expect(double.unhandled).toEqual([]);
  });

  it("serves the token's scope and application credentials to the real provider: apply, no-change re-plan, destroy", async () => {
    const tofu = await fixture("identity");
    await ok(tofu(["apply", "-auto-approve", "-input=false"]));
    const outputs = JSON.parse((await ok(tofu(["output", "-json"]))).stdout) as Record<string, { value: unknown }>;
    expect(outputs.roles.value).toEqual(["member", "reader", "load-balancer_member"]);
    expect(outputs.services.value).toEqual(expect.arrayContaining(["compute", "network", "load-balancer"]));

    const credentials = double.keystone.applicationCredentials.all().filter((c) => c.seeded !== true);
    const byName = (a: Resource, b: Resource) => String(a.name).localeCompare(String(b.name));
    expect(credentials.sort(byName).map((c) => [c.name, c.unrestricted, c.expires_at])).toEqual([
      ["fixture-cluster", false, "2099-01-01T00:00:00.000000"],
      ["fixture-images", false, null],
    ]);
    expect(double.keystone.accessRules.all()).toEqual([expect.objectContaining({ service: "image", path: "/v2/images", method: "GET" })]);

    const replan = await tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);

    await ok(tofu(["destroy", "-auto-approve", "-input=false"]));
    expect(double.resourceCount()).toBe(0);
    expect(double.unhandled).toEqual([]);
  });

  it("answers a second claim on a fixed IP with Neutron's 409, which the provider reports", async () => {
    const tofu = await fixture("conflict");
    const apply = await tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.status).toBe(1);
    const message = apply.stderr.replace(/\s+/g, " ");
    expect(message).toContain("Error creating openstack_networking_port_v2");
    expect(message).toContain("but got 409 instead");
    expect(message).toMatch(/Expected HTTP response code \[201[^\]]*\].* 409/);
    expect(message).toContain("IpAddressAlreadyAllocated");
    expect(double.neutron.ports.all().filter((p) => p.device_owner !== "network:dhcp")).toHaveLength(1);
    expect(double.unhandled).toEqual([]);
  });

  it("plans 100 instances with their ports", async () => {
    const tofu = await fixture("compute");
    const plan = await ok(tofu(["plan", "-input=false"], { TF_VAR_node_count: "100" }));
    // 100 ports and 100 instances, plus the 11 shared resources of the fixture.
    expect(plan.stdout).toContain("Plan: 211 to add, 0 to change, 0 to destroy.");
  });

  describe("its own rules", () => {
    const token = () => issueToken(double);

    it("rejects requests without a token it issued", async () => {
      const response = await fetch(`${double.url}/network/v2.0/networks`, { headers: { "x-auth-token": "forged" } });
      expect(response.status).toBe(401);
    });

    it("answers an unknown id with a 404 in the service's own format", async () => {
      const headers = { "x-auth-token": await token() };
      const neutron = await fetch(`${double.url}/network/v2.0/networks/00000000-0000-0000-0000-000000000000`, { headers });
      expect(neutron.status).toBe(404);
      expect(await neutron.json()).toEqual({
        NeutronError: { type: "NetworkNotFound", message: "Network 00000000-0000-0000-0000-000000000000 could not be found.", detail: "" },
      });
      const nova = await fetch(`${double.url}/compute/v2.1/servers/00000000-0000-0000-0000-000000000000`, { headers });
      expect(nova.status).toBe(404);
      expect(await nova.json()).toMatchObject({ itemNotFound: { code: 404 } });
    });

    it("fails loudly on a request it does not implement, and records it", async () => {
      const errors: string[] = [];
      const spy = jest.spyOn(console, "error").mockImplementation((line: string) => void errors.push(line));
      const response = await fetch(`${double.url}/network/v2.0/qos/policies`, { headers: { "x-auth-token": await token() } });
      spy.mockRestore();
      expect(response.status).toBe(501);
      expect(errors).toEqual(["openstack-double: not implemented: GET /network/v2.0/qos/policies"]);
      expect(double.unhandled).toEqual([{ method: "GET", url: "/network/v2.0/qos/policies", status: 501 }]);
    });
  });
});
