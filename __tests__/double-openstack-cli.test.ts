/**
 * `npm run double` and its options (__tests__/doubles/openstack/cli.ts): each option shapes the
 * double as the tests' OpenStackDoubleOptions do, a bad one stops it in one line, and the running
 * command serves the cloud its options describe.
 */
import { spawn } from "node:child_process";
import * as path from "node:path";
import { parseDoubleArgs, UsageError } from "./doubles/openstack/cli";
import { passwordIdentity, requestToken } from "./support/keystone";

const ROOT = path.join(__dirname, "..");

describe("npm run double", () => {
  it("turns every option into the double's settings", () => {
    const argv = [
      ...["--external-network", "public=203.0.113.0/24", "--zones", "az1,az2", "--volume-zones", "az1,az2"],
      ...["--volume-types", "ssd,hdd", "--no-cross-az-attach", "--existing-router", "edge"],
      ...["--existing-network", "lan=10.9.0.0/24@edge", "--existing-network", "dmz=10.8.0.0/24"],
      ...["--load-balancer-zones", "lb1", "--no-octavia", "--compute-hosts", "3", "--settled"],
      ...["--quota", "nova.instances=40", "--quota", "nova.cores=-1", "--quota", "neutron.security_group=20"],
    ];
    expect(parseDoubleArgs(argv)).toEqual({
      options: {
        externalNetwork: { name: "public", cidr: "203.0.113.0/24" },
        availabilityZones: ["az1", "az2"],
        volumeAvailabilityZones: ["az1", "az2"],
        volumeTypes: ["ssd", "hdd"],
        crossAzAttach: false,
        existingRouters: [{ name: "edge" }],
        existingNetworks: [
          { name: "lan", cidr: "10.9.0.0/24", router: "edge" },
          { name: "dmz", cidr: "10.8.0.0/24" },
        ],
        loadBalancerAvailabilityZones: ["lb1"],
        octavia: false,
        settled: true,
      },
      computeHosts: 3,
      quotas: { nova: { instances: 40, cores: -1 }, neutron: { security_group: 20 } },
    });
    expect(parseDoubleArgs([])).toEqual({ options: {}, quotas: {} });
  });

  it.each([
    [["--bogus"], "Unknown option '--bogus'"],
    [["--zones"], "'--zones <value>' argument missing"],
    [["--zones", "az1,az1"], "--zones: 'az1,az1' names one twice"],
    [["--volume-types", "ssd,"], "--volume-types: '' is not a name (letters, digits, . _ -)"],
    [["--external-network", "public"], "--external-network: 'public' is not NAME=CIDR"],
    [["--existing-network", "lan=10.9.0.0/33"], "--existing-network: '10.9.0.0/33' is not an IPv4 CIDR such as 10.0.0.0/24"],
    [
      ["--existing-network", "lan=10.9.0.0/24@edge"],
      "--existing-network: 'lan=10.9.0.0/24@edge' names the router 'edge', which no --existing-router gives",
    ],
    [["--compute-hosts", "0"], "--compute-hosts: '0' is not a whole number of 1 or more"],
    [["--quota", "nova.instances"], "--quota: 'nova.instances' is not SERVICE.NAME=N (N a whole number, -1 unlimited)"],
    [["--quota", "glance.images=3"], "--quota: 'glance' is not one of nova, neutron, cinder, octavia"],
    [["--quota", "nova.volumes=3"], "--quota: 'volumes' is not a nova quota (instances, cores, ram,"],
  ])("refuses %j in one line: %s", (argv, message) => {
    expect(() => parseDoubleArgs(argv)).toThrow(UsageError);
    expect(() => parseDoubleArgs(argv)).toThrow(message);
  });

  it("serves the cloud its options describe, and prints the existing network's and router's ids", async () => {
    const child = spawn(
      "node",
      [
        ...["--require", "./scripts/register-ts.js", "__tests__/doubles/openstack/cli.ts"],
        ...["--zones", "az1,az2", "--no-octavia", "--quota", "nova.instances=40", "--compute-hosts", "2"],
        ...["--existing-router", "edge", "--existing-network", "lan=10.9.0.0/24@edge"],
      ],
      { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] },
    );
    let printed = "";
    child.stdout.on("data", (chunk: Buffer) => (printed += chunk));
    const ended = new Promise<number | null>((resolve) => child.on("close", resolve));
    try {
      while (!printed.includes("# state files:")) {
        if (child.exitCode !== null) throw new Error(`npm run double ended: ${printed}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const env = Object.fromEntries([...printed.matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1], m[2]]));
      const auth = await requestToken(env.OS_AUTH_URL, passwordIdentity(env.OS_USERNAME, env.OS_PASSWORD, env.OS_USER_DOMAIN_NAME), {
        project: { id: env.OS_PROJECT_ID },
      });
      expect(auth.status).toBe(201);
      const token = auth.headers.get("x-subject-token") as string;
      const catalog = ((await auth.json()) as { token: { catalog: { type: string; endpoints: { url: string }[] }[] } }).token.catalog;
      expect(catalog.map((service) => service.type)).not.toContain("load-balancer");
      const compute = catalog.find((service) => service.type === "compute")!.endpoints[0].url;
      const get = async (url: string) => (await fetch(url, { headers: { "x-auth-token": token } })).json() as Promise<any>;
      const zones = await get(`${compute}/os-availability-zone`);
      expect(zones.availabilityZoneInfo.map((zone: { zoneName: string }) => zone.zoneName).sort()).toEqual(["az1", "az2"]);
      const quotas = await get(`${compute}/os-quota-sets/${env.OS_PROJECT_ID}`);
      expect(quotas.quota_set.instances).toBe(40);
      const network = catalog.find((service) => service.type === "network")!.endpoints[0].url;
      const lan = (await get(`${network}/v2.0/networks?name=lan`)).networks[0];
      const edge = (await get(`${network}/v2.0/routers?name=edge`)).routers[0];
      expect(printed).toContain(`# existing network lan: TF_VAR_public_network_id=${lan.id}\n`);
      expect(printed).toContain(`# existing router edge: TF_VAR_router_id=${edge.id}\n`);
    } finally {
      child.kill("SIGTERM");
    }
    expect(await ended).toBe(0);
  });
});
