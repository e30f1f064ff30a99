/**
 * L3 on both targets: journeys run by OpenTofu with the real provider on the OpenStack API double
 * and on the real OpenStack 2026.2 services (scripts/openstack/), each on a project of its own,
 * with a recorder between the provider and the cloud. The provider's exchanges with the two must
 * agree, but for the differences docs/decisions.md lists with their reasons: the real cloud is
 * the double's referee. The journeys are a few, chosen for coverage; the breadth (every
 * parameter, both CLIs, failures) stays on the double.
 */
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { KEYS } from "./support/arbitraries";
import { requestToken } from "./support/keystone";
import { KitProject, kitDone, kitProject, kitUp } from "./support/openstack-kit";
import { providerReads } from "./support/provider-reads";
import { comparable, Exchange, exchangeLines, fieldOwner, fieldsRead, startRecorder } from "./support/recorder";
import { CloudTarget, doubleTarget } from "./support/target";
import { RunResult } from "./support/tofu";
import { Workspace, workspace } from "./support/workspace";

/** The kit's two compute hosts' zones (scripts/openstack/koo_cloud/nova.py, ZONES); the double gets the same. */
const ZONES = ["az-1", "az-2"];
const TARGETS = ["double", "openstack"] as const;

let admin: Record<string, string>;
let state: StateServer;
const recorded: Record<string, Exchange[]> = { double: [], openstack: [] };
// The double of the test that runs, for the check after it.
let double: OpenStackDouble | undefined;

// The kit's cold start (migrations and seeds) when its snapshot is not cached yet.
const START = 900_000;
// Nova and Octavia change state asynchronously: an apply on the real cloud takes a minute or more.
const JOURNEY = 900_000;

beforeAll(async () => {
  admin = await kitUp();
  state = await startStateServer();
}, START);

afterAll(async () => {
  await state?.close();
  await kitDone();
}, START);

afterEach(async () => {
  // A request the double does not implement is a gap in the double, never something to ignore.
  const unhandled = double?.unhandled ?? [];
  await double?.close();
  double = undefined;
  expect(unhandled).toEqual([]);
});

/**
 * Runs `test` on a target of its own: a new double, or a new project of the real cloud (removed
 * after it), so that what one journey leaves cannot fail the next.
 */
async function onTarget(name: (typeof TARGETS)[number], test: (target: CloudTarget) => Promise<void>): Promise<void> {
  if (name === "double") {
    double = await startOpenStackDouble({ availabilityZones: ZONES });
    return test(doubleTarget(double));
  }
  const project: KitProject = await kitProject(admin);
  try {
    await test(project);
  } finally {
    await project.remove();
  }
}

function oneLine(result: RunResult): string {
  return `${result.stderr}${result.stdout}`.replace(/[│╷╵]/g, " ").replace(/\s+/g, " ");
}

/** The attributes of the resources in `tofu show -json`'s state of `type` whose address has `part`. */
function stateValues(show: any, type: string, part = ""): any[] {
  return (show.values.root_module.resources as any[]).filter((r) => r.type === type && r.address.includes(part)).map((r) => r.values);
}

function only(values: any[]): any {
  if (values.length !== 1) throw new Error(`${values.length} resources where one was expected`);
  return values[0];
}

/**
 * A workspace on `target` with a recorder in front (synthesized with `synthEnv`), handed to
 * `journey`; what the provider exchanged is added to the target's record.
 */
async function recording(target: CloudTarget, synthEnv: NodeJS.ProcessEnv, journey: (ws: Workspace) => Promise<void>): Promise<void> {
  const recorder = await startRecorder(target.authUrl);
  try {
    const env = { ...target.passwordEnv(), OS_AUTH_URL: recorder.authUrl };
    await journey(await workspace({ passwordEnv: () => env }, state, synthEnv));
  } finally {
    recorded[target.name].push(...recorder.exchanges);
    await recorder.close();
  }
}

/**
 * Applies, runs `checks` on the state, re-plans with no change, and destroys: on a real cloud,
 * what a failed journey made stays, so the destroy runs whatever happened before it.
 */
async function applyCheckDestroy(target: CloudTarget, ws: Workspace, checks: (show: any, held: string[]) => Promise<void>): Promise<void> {
  let failure: unknown;
  try {
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    expect(apply.status).toBe(0);
    await checks(JSON.parse((await ws.tofu(["show", "-json"])).stdout), await target.resources());
    const plan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(plan.stderr).toBe("");
    expect(plan.status).toBe(0);
  } catch (error) {
    failure = error;
  }
  const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
  if (failure && destroy.status !== 0) throw new Error(`${String(failure)}\n\nThen the destroy failed too:\n${destroy.stderr}`);
  if (failure) throw failure;
  expect(destroy.stderr).toBe("");
  expect(destroy.status).toBe(0);
  expect(await target.resources()).toEqual([]);
}

const count = (held: string[], kind: string) => held.filter((line) => line.startsWith(`${kind}: `)).length;

describe("L3 on both targets", () => {
  describe.each(TARGETS)("on the %s", (name) => {
    it(
      "applies the default stack, re-plans with no change, lets the cluster's credential in, and destroys to an empty project",
      async () =>
        onTarget(name, async (target) => {
          // The defaults, with a deploy key, which makes the deployment's keypair.
          await recording(target, { TF_VAR_deploy_ssh_public_key: KEYS.ed25519 }, (ws) =>
            applyCheckDestroy(target, ws, async (show, held) => {
              // The bastion, the Salt master and three nodes; the API's load balancer.
              expect(count(held, "server")).toBe(5);
              // Their ports (the bastion's and the master's two, one each for the others), and the 5
              // security groups' 8 rules besides the 2 egress rules Neutron gives every new group.
              expect(count(held, "port")).toBe(7);
              expect(count(held, "security group rule")).toBe(8 + 5 * 2);
              expect(count(held, "load balancer")).toBe(1);
              expect(count(held, "application credential")).toBe(1);
              // The cloud controller manager authenticates with the cluster's application credential.
              const credential = only(stateValues(show, "openstack_identity_application_credential_v3"));
              const token = await requestToken(target.authUrl, {
                methods: ["application_credential"],
                application_credential: { id: credential.id, secret: credential.secret },
              });
              expect(token.status).toBe(201);
              expect(((await token.json()) as any).token.project.id).toBe(target.projectId);
              // The API's floating IP is on the load balancer's VIP port.
              const loadBalancer = only(stateValues(show, "openstack_lb_loadbalancer_v2"));
              const association = only(stateValues(show, "openstack_networking_floatingip_associate_v2", "ApiLoadBalancer"));
              expect(association.port_id).toBe(loadBalancer.vip_port_id);
              // And as the cloud lists them: that load balancer, its VIP and floating IP, and the deploy key.
              expect(await target.loadBalancers()).toEqual([
                { name: loadBalancer.name, vipAddress: loadBalancer.vip_address, floatingIp: association.floating_ip },
              ]);
              const keypair = only(stateValues(show, "openstack_compute_keypair_v2"));
              expect(await target.keypairs()).toEqual([{ name: keypair.name, publicKey: KEYS.ed25519 }]);
            }),
          );
        }),
      JOURNEY,
    );

    it(
      "applies a node pool over two zones with boot volumes, the control plane on its own flavor and tags on all, each worker in its zone, and destroys it all",
      async () =>
        onTarget(name, async (target) => {
          const pools = { pool: { count: 2, flavor: "m1.small", availability_zones: ZONES, boot_volume_size: 10 } };
          const synthEnv = {
            TF_VAR_node_pools: JSON.stringify(pools),
            TF_VAR_kube_node_availability_zones: JSON.stringify(ZONES),
            TF_VAR_api_load_balancer: "off",
            TF_VAR_control_plane_flavor: "m1.medium",
            TF_VAR_tags: '["team-a"]',
            TF_VAR_server_metadata: '{ owner = "team-a" }',
          };
          await recording(target, synthEnv, (ws) =>
            applyCheckDestroy(target, ws, async (show, held) => {
              expect(count(held, "server")).toBe(7);
              // The flavor Nova reports for each server (the provider reads it back).
              const flavors = (prefix: string) => stateValues(show, "openstack_compute_instance_v2", prefix).map((s) => s.flavor_name);
              expect(flavors("KubeNodes")).toEqual(["m1.medium", "m1.medium", "m1.medium"]);
              expect(flavors("WorkerPools")).toEqual(["m1.small", "m1.small"]);
              // The tags and metadata each service reports back, through the provider's reads.
              const clusterTagged = ["kube-on-os:kube-on-os", "team-a"];
              const managed = (type: string) =>
                (show.values.root_module.resources as any[]).filter((r) => r.type === type && r.mode === "managed").map((r) => r.values);
              for (const server of managed("openstack_compute_instance_v2")) {
                expect([server.name, [...server.all_tags].sort(), server.metadata]).toEqual([
                  server.name,
                  clusterTagged,
                  { owner: "team-a" },
                ]);
              }
              for (const network of managed("openstack_networking_network_v2")) expect([...network.all_tags].sort()).toEqual(clusterTagged);
              for (const port of managed("openstack_networking_port_v2")) expect([...port.all_tags].sort()).toEqual(clusterTagged);
              // The Salt master's volume and the pool's two boot volumes.
              expect(count(held, "volume")).toBe(3);
              const workers = stateValues(show, "openstack_compute_instance_v2", "WorkerPools");
              expect(workers.map((w) => w.availability_zone).sort()).toEqual(ZONES);
              for (const worker of workers)
                expect(worker.block_device).toMatchObject([{ source_type: "image", destination_type: "volume" }]);
            }),
          );
        }),
      JOURNEY,
    );

    it(
      "deploys behind an existing router (router_id) on the project's private network, with its floating IPs and a security group, and leaves them",
      async () =>
        onTarget(name, async (target) => {
          const routerId = await target.seedRouter("existing-router");
          const [bastion, master] = [await target.seedFloatingIp(), await target.seedFloatingIp()];
          const office = await target.seedSecurityGroup("office-ssh", {
            protocol: "tcp",
            port_range_min: 22,
            port_range_max: 22,
            remote_ip_prefix: "198.51.100.0/24",
          });
          const privateNetwork = await target.seedPrivateNetwork("lab-private", "10.1.0.0/16");
          const synthEnv = {
            TF_VAR_router_id: routerId,
            TF_VAR_private_network_id: privateNetwork,
            TF_VAR_api_load_balancer: "off",
            TF_VAR_bastion_floating_ip: bastion,
            TF_VAR_master_floating_ip: master,
            // Each kind of rule, and a group of the project's by name (issue 39).
            TF_VAR_bastion_ingress_rules: '["udp/51820 from 0.0.0.0/0"]',
            TF_VAR_control_plane_ingress_rules: '["tcp/8443-8444 from 203.0.113.0/24", "icmp from 10.0.0.0/8"]',
            TF_VAR_bastion_security_groups: '["office-ssh"]',
          };
          await recording(target, synthEnv, async (ws) => {
            await applyCheckDestroy(target, ws, async (show, held) => {
              expect(count(held, "router")).toBe(0);
              // The project's private network: the public one alone is new, and every private port is on it.
              expect([count(held, "network"), count(held, "subnet")]).toEqual([1, 1]);
              const privatePorts = stateValues(show, "openstack_networking_port_v2").filter((p) => p.name.endsWith("-private"));
              expect(privatePorts.map((p) => p.network_id)).toEqual(privatePorts.map(() => privateNetwork));
              expect(show.values.outputs.private_network_id.value).toBe(privateNetwork);
              expect(show.values.outputs.router_id.value).toBe(routerId);
              // The bastion's and the master's given addresses, on their public ports: Neutron associates a
              // floating IP only with a port whose subnet a router joins to the external network, here the
              // existing one. None is allocated.
              expect(count(held, "floating IP")).toBe(0);
              const ports = Object.fromEntries(stateValues(show, "openstack_networking_port_v2").map((p) => [p.name, p.id]));
              expect(await target.seededFloatingIps()).toEqual({
                [bastion]: ports["bastion.kube-on-os-public"],
                [master]: ports["k8s-master.kube-on-os-public"],
              });
              expect([show.values.outputs.bastion_floating_ip.value, show.values.outputs.master_floating_ip.value]).toEqual([
                bastion,
                master,
              ]);
              // The roles' groups and their rules, as the cloud lists them; the project's group on the bastion's ports.
              expect(held.filter((line) => line.includes("-ingress")).sort()).toEqual(
                [
                  "security group: kube-on-os-bastion-ingress",
                  "security group: kube-on-os-control-plane-ingress",
                  ...["bastion", "control-plane"].flatMap((role) =>
                    ["IPv4", "IPv6"].map(
                      (ethertype) => `security group rule: kube-on-os-${role}-ingress egress ${ethertype} any to anywhere`,
                    ),
                  ),
                  "security group rule: kube-on-os-bastion-ingress ingress IPv4 udp 51820-51820 from 0.0.0.0/0",
                  "security group rule: kube-on-os-control-plane-ingress ingress IPv4 tcp 8443-8444 from 203.0.113.0/24",
                  "security group rule: kube-on-os-control-plane-ingress ingress IPv4 icmp from 10.0.0.0/8",
                ].sort(),
              );
              const portGroups = Object.fromEntries(
                stateValues(show, "openstack_networking_port_v2").map((p) => [p.name, p.security_group_ids]),
              );
              for (const side of ["public", "private"]) expect(portGroups[`bastion.kube-on-os-${side}`]).toContain(office);
            });
            // The destroy gave them back to the project, free.
            expect(await target.seededFloatingIps()).toEqual({ [bastion]: null, [master]: null });
          });
        }),
      JOURNEY,
    );

    it(
      "refuses at plan time an oversized deployment and an unknown zone, in one line each, creating nothing",
      async () =>
        onTarget(name, async (target) => {
          await recording(target, {}, async (ws) => {
            // 5 nodes of m1.large, the m1.medium Salt master and the m1.small bastion: 23 cores.
            const cores = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "5" });
            expect(cores.status).toBe(1);
            expect(oneLine(cores)).toContain("Quota too small: this deployment needs Nova quota cores = 23, but the project allows 20");
            const zone = await ws.tofu(["plan", "-input=false"], { TF_VAR_kube_node_availability_zones: '["az-9"]' });
            expect(zone.status).toBe(1);
            expect(oneLine(zone)).toContain(
              "Unknown availability zone: az-9 (in kube_node_availability_zones or node_pools) is not one of this cloud's available zones, az-1, az-2",
            );
          });
          expect(await target.resources()).toEqual([]);
        }),
      JOURNEY,
    );
  });

  it("the provider exchanged the same requests and answers with both, but for the differences docs/decisions.md lists", () => {
    for (const name of TARGETS) expect(recorded[name].length).toBeGreaterThan(0);
    const onDouble = new Set(exchangeLines(recorded.double));
    const onCloud = new Set(exchangeLines(recorded.openstack));
    // For a developer comparing the targets by hand: KOO_EXCHANGES_DIR keeps each one's lines.
    const keep = process.env.KOO_EXCHANGES_DIR;
    if (keep) for (const name of TARGETS) fs.writeFileSync(path.join(keep, `${name}.txt`), exchangeLines(recorded[name]).join("\n") + "\n");
    expectOnlyAccepted("", [
      ...[...onDouble].filter((line) => !onCloud.has(line)).map((line) => `only on the double: ${line}`),
      ...[...onCloud].filter((line) => !onDouble.has(line)).map((line) => `only on the real cloud: ${line}`),
    ]);
  });

  it("answered the same exchanges with the same fields the provider reads, but for the differences docs/decisions.md lists", () => {
    const reads = providerReads();
    const onDouble = fieldsRead(recorded.double, reads);
    const onCloud = fieldsRead(recorded.openstack, reads);
    const keep = process.env.KOO_EXCHANGES_DIR;
    if (keep)
      for (const [name, lines] of [
        ["double", onDouble],
        ["openstack", onCloud],
      ] as const)
        fs.writeFileSync(
          path.join(keep, `${name}-fields.txt`),
          [...lines]
            .flatMap(([line, fields]) => [...fields].map((f) => `${line} ${f}`))
            .sort()
            .join("\n") + "\n",
        );
    const differences = new Set<string>();
    for (const [line, fields] of onCloud) {
      const other = onDouble.get(line);
      if (!other) continue; // a difference of the exchanges themselves, the test above's
      const [service, , template] = line.split(" ");
      const owner = (f: string) => `${service} ${fieldOwner(template, f)}`;
      for (const f of fields) if (!other.has(f) && comparable(f, other)) differences.add(`field only on the real cloud: ${owner(f)}`);
      for (const f of other) if (!fields.has(f) && comparable(f, fields)) differences.add(`field only on the double: ${owner(f)}`);
    }
    expectOnlyAccepted("field ", [...differences]);
  });
});

describe("the kit's APIs", () => {
  // Each API's offset from the kit's port base (scripts/openstack/koo_cloud/kit.py, PORTS).
  const APIS = { keystone: 0, glance: 1, placement: 2, nova: 3, neutron: 4, cinder: 5, octavia: 6 };
  // Longer than gunicorn's default keep-alive (2 s) and its worker's poll (1 s).
  const IDLE = 3_500;

  it(
    "end each connection with their reply, so that no client reuses one the server closes while it is idle",
    async () => {
      // gunicorn's threaded worker closes a kept-alive connection after --keep-alive seconds idle.
      // A client that sends on it just then (openstacksdk's pool does) gets ECONNRESET: Octavia's
      // worker, which builds its Neutron client without retries, then left a member in ERROR.
      const base = Number(new URL(admin.OS_AUTH_URL).port) - APIS.keystone;
      const kept = await Promise.all(
        Object.entries(APIS).map(async ([api, offset]) => {
          const connection = await rawConnection(base + offset);
          try {
            const first = await connection.request();
            if (/^connection:\s*close\s*$/im.test(first)) return (await connection.ended()) ? "" : `${api}: said close and kept it open`;
            await new Promise((resolve) => setTimeout(resolve, IDLE));
            const second = await connection.request();
            return second === "" ? `${api}: kept the connection alive, then closed it while idle` : "";
          } finally {
            connection.destroy();
          }
        }),
      );
      expect(kept.filter((line) => line !== "")).toEqual([]);
    },
    START,
  );
});

interface RawConnection {
  /** Sends `GET /` and resolves to the reply's header, or "" when the server ended the connection instead. */
  request(): Promise<string>;
  /** Whether the server ends the connection within a second. */
  ended(): Promise<boolean>;
  destroy(): void;
}

/** A plain HTTP/1.1 connection, so that the test sees what the server does with it, and no client's pool. */
async function rawConnection(port: number): Promise<RawConnection> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  let received = "";
  let closed = false;
  const waiters: (() => void)[] = [];
  const wake = () => waiters.splice(0).forEach((w) => w());
  socket.on("data", (chunk) => ((received += chunk.toString("latin1")), wake()));
  socket.on("close", () => ((closed = true), wake()));
  socket.on("error", () => undefined); // a reset ends the connection: "close" follows
  const until = (done: () => boolean, ms: number) =>
    new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, ms);
      const check = () => (done() ? (clearTimeout(timer), resolve()) : waiters.push(check));
      check();
    });
  /** The length of a complete reply at the start of `received`, or 0. */
  const replyLength = (): number => {
    const end = received.indexOf("\r\n\r\n");
    if (end < 0) return 0;
    const length = Number(/^content-length:\s*(\d+)/im.exec(received.slice(0, end))?.[1] ?? 0);
    return received.length >= end + 4 + length ? end + 4 + length : 0;
  };
  return {
    async request() {
      if (closed) return "";
      socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      await until(() => closed || replyLength() > 0, 30_000);
      const length = replyLength();
      const reply = received.slice(0, length);
      received = received.slice(length);
      return reply.slice(0, reply.indexOf("\r\n\r\n"));
    },
    async ended() {
      await until(() => closed, 1_000);
      return closed;
    },
    destroy: () => socket.destroy(),
  };
}

/**
 * Fails on a difference docs/decisions.md does not accept, and on an accepted one (of the kind
 * whose rows start with `kind`) that no longer occurs: the list must shrink with the double's fixes.
 */
function expectOnlyAccepted(kind: string, differences: string[]): void {
  const accepted = [...acceptedDifferences()].filter((d) => d.startsWith(`${kind}only on`));
  expect(differences.filter((d) => !accepted.includes(d)).sort()).toEqual([]);
  expect(accepted.filter((d) => !differences.includes(d))).toEqual([]);
}

/**
 * The differences docs/decisions.md accepts, from its table under "The double's referee": rows
 * of "| only on the double | `service METHOD template status` | reason |", and of
 * "| field only on the real cloud | `service owner.field` | reason |" (support/recorder.ts, fieldOwner).
 */
function acceptedDifferences(): Set<string> {
  const decisions = fs.readFileSync(path.join(__dirname, "..", "docs", "decisions.md"), "utf8");
  const rows = decisions.matchAll(/^\|\s*((?:field )?only on the (?:double|real cloud))\s*\|\s*`([^`]+)`\s*\|.+\|$/gm);
  return new Set([...rows].map((row) => `${row[1]}: ${row[2]}`));
}
