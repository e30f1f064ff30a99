/**
 * What the stack opens to the world, read from the plan real OpenTofu makes against the OpenStack
 * API double: the security group rules it plans, joined to their groups, the ports the groups are
 * on and the machines those ports belong to. The rules come from for_each over the plan-time
 * variables, so only a plan (not the synthesized JSON) shows who they admit.
 *
 * What the default stack opens used to be checked on the synthesized JSON (l0-network), which
 * sees `${each.value}` where the plan sees 0.0.0.0/0. Each plan here, with its `show -json`, takes
 * about 1.5 s; the workspace's synth and init about 1 s.
 */
import { HOST_NAMES } from "../facts/hosts";
import type { StateServer } from "./doubles/http-state/server";
import type { OpenStackDouble } from "./doubles/openstack/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import { planJson } from "./support/plan";
import { Workspace, workspace } from "./support/workspace";

const RULE = "openstack_networking_secgroup_rule_v2";
const GROUP = "openstack_networking_secgroup_v2";
const PORT = "openstack_networking_port_v2";
const SERVER = "openstack_compute_instance_v2";

/** One way in: `<host role> <protocol>/<ports> from <remote>`, e.g. `bastion tcp/22 from 0.0.0.0/0`. */
interface Ingress {
  readonly host: string;
  readonly protocol: string;
  /** `22`, `4505-4506`, or `all` */
  readonly ports: string;
  /** An address prefix, or `group <name>` for the members of a security group. */
  readonly remote: string;
}

const show = (i: Ingress) => `${i.host} ${i.protocol}/${i.ports} from ${i.remote}`;

/** The configuration's address of a planned resource: without its count or for_each key. */
const configAddress = (address: string) => address.replace(/\[[^\]]*\]$/, "");

/** The resources of `type` an expression of the configuration refers to, however deeply nested. */
function referenced(expression: unknown, type: string): string[] {
  const found = new Set<string>();
  const walk = (node: unknown): void => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === "object") {
      for (const [key, value] of Object.entries(node)) {
        if (key === "references") {
          for (const ref of value as string[]) if (ref.startsWith(`${type}.`)) found.add(ref.split(".").slice(0, 2).join("."));
        } else walk(value);
      }
    }
  };
  walk(expression);
  return [...found];
}

/** A machine's role from its planned name: the first label, without a worker's number. */
function role(serverName: string): string {
  const host = serverName.split(".")[0];
  return host.startsWith(`${HOST_NAMES.worker}-`) ? HOST_NAMES.worker : host;
}

/**
 * Every way into every machine the plan creates. Most ids are unknown until apply, so rules,
 * groups, ports and servers are joined by the references in the plan's configuration; anything
 * the plan cannot tell (a prefix known only after apply, a port left to the project's default
 * group) throws instead of passing unseen.
 */
function ingress(plan: any): Ingress[] {
  const planned: any[] = plan.planned_values.root_module.resources;
  const config = new Map<string, any>(plan.configuration.root_module.resources.map((r: any) => [r.address, r]));
  const expressionsOf = (r: any) => config.get(configAddress(r.address)).expressions;
  const unknownOf = (r: any) => plan.resource_changes.find((c: any) => c.address === r.address)?.change.after_unknown ?? {};
  const groupNames = new Map<string, string>(planned.filter((r) => r.type === GROUP).map((g) => [configAddress(g.address), g.values.name]));

  const portHosts = new Map<string, Set<string>>();
  for (const server of planned.filter((r) => r.type === SERVER)) {
    for (const port of referenced(expressionsOf(server).network, PORT)) {
      portHosts.set(port, (portHosts.get(port) ?? new Set()).add(role(server.values.name)));
    }
  }

  const found: Ingress[] = [];
  const groupHosts = new Map<string, Set<string>>();
  for (const port of planned.filter((r) => r.type === PORT)) {
    const hosts = portHosts.get(configAddress(port.address)) ?? new Set([`unattached port ${port.values.name}`]);
    if (port.values.port_security_enabled === false) {
      // No security groups apply at all: everything reaches the port.
      for (const host of hosts) for (const remote of ["0.0.0.0/0", "::/0"]) found.push({ host, protocol: "any", ports: "all", remote });
      continue;
    }
    const groups = referenced(expressionsOf(port).security_group_ids, GROUP);
    if (groups.length === 0 && port.values.no_security_groups !== true) {
      throw new Error(`${port.address} names no security group: Neutron gives it the project's default group, which no plan shows`);
    }
    for (const group of groups) for (const host of hosts) groupHosts.set(group, (groupHosts.get(group) ?? new Set()).add(host));
  }

  for (const rule of planned.filter((r) => r.type === RULE && r.values.direction === "ingress")) {
    const expressions = expressionsOf(rule);
    const unknown = unknownOf(rule);
    const [group, ...more] = referenced(expressions.security_group_id, GROUP);
    if (!group || more.length > 0) throw new Error(`${rule.address}: cannot tell which planned security group it belongs to`);
    // The provider computes the remotes a rule does not set, so they are unknown in the plan:
    // only a remote the configuration sets counts.
    const setsRemote = (name: string) => Boolean(rule.values[name] || (expressions[name] && unknown[name]));
    if (expressions.remote_ip_prefix && unknown.remote_ip_prefix) {
      throw new Error(`${rule.address}: remote_ip_prefix is known only after apply`);
    }
    const [remoteGroup] = referenced(expressions.remote_group_id, GROUP);
    // A rule without any remote matches every source: the Neutron API reference ("Create security
    // group rule", https://docs.openstack.org/api-ref/network/v2/#create-security-group-rule) makes
    // remote_ip_prefix, remote_group_id and remote_address_group_id all optional, and a rule matches
    // on the attributes it has; Neutron's reference firewall driver (neutron/agent/linux/
    // iptables_firewall.py, _ip_prefix_arg) adds no source match without a prefix, and drops a /0
    // prefix as "not a constraint", so the two are the same rule.
    const remote =
      rule.values.remote_ip_prefix ??
      (setsRemote("remote_group_id")
        ? `group ${groupNames.get(remoteGroup) ?? "(not in the plan)"}`
        : setsRemote("remote_address_group_id")
          ? "address group"
          : rule.values.ethertype === "IPv6"
            ? "::/0"
            : "0.0.0.0/0");
    const { protocol, port_range_min: min, port_range_max: max } = rule.values;
    const ports = min == null && max == null ? "all" : min === max ? `${min}` : `${min ?? 1}-${max ?? 65535}`;
    for (const host of groupHosts.get(group) ?? []) found.push({ host, protocol: protocol ?? "any", ports, remote });
  }
  return found;
}

/** The ways in from anywhere: a prefix of length 0 (0.0.0.0/0, ::/0), or no remote at all. */
const worldOpen = (plan: any) =>
  ingress(plan)
    .filter((i) => i.remote.endsWith("/0"))
    .map(show)
    .sort();

/** The ways in to TCP `port`, on any machine. */
function reaching(plan: any, port: number): string[] {
  const covers = (i: Ingress) => {
    // Neutron takes a protocol by name or number; "any" and 0 are every protocol.
    if (!["tcp", "6", "any", "0"].includes(i.protocol)) return false;
    if (i.ports === "all") return true;
    const [min, max = min] = i.ports.split("-").map(Number);
    return min <= port && port <= max;
  };
  return ingress(plan).filter(covers).map(show).sort();
}

let double: OpenStackDouble;
let state: StateServer;
let ws: Workspace;

useCloud({ double: { settled: true }, state: GITLAB_STATE }, (cloud) => ({ double, state } = cloud));

beforeAll(async () => {
  ws = await workspace(double, state);
});

describe("Exposure with the default variables", () => {
  let plan: any;

  beforeAll(async () => {
    plan = await planJson(ws);
  });

  it("opens SSH on the bastion, and HTTP, HTTPS and the Kubernetes API on the master, to the world, and nothing else", () => {
    expect(worldOpen(plan)).toEqual([
      "bastion tcp/22 from 0.0.0.0/0",
      "k8s-master tcp/16443 from 0.0.0.0/0",
      "k8s-master tcp/443 from 0.0.0.0/0",
      "k8s-master tcp/80 from 0.0.0.0/0",
    ]);
  });

  it("admits, besides those, only the cluster's own machines", () => {
    const internal = "from group kube-on-os-internal";
    expect(
      ingress(plan)
        .map(show)
        .filter((i) => !i.endsWith("/0"))
        .sort(),
    ).toEqual(
      [
        `bastion any/all ${internal}`,
        `k8s-master any/all ${internal}`,
        `k8s-worker any/all ${internal}`,
        `salt any/all ${internal}`,
        "salt tcp/4505-4506 from 10.1.0.0/16",
        // The API load balancer reaches its members from its port on the private network, and
        // LoadBalancer Services' load balancers the NodePorts (cloud_integration): on the
        // Kubernetes nodes' group, which neither the bastion nor the Salt master has.
        ...["k8s-master", "k8s-worker"].map((host) => `${host} tcp/16443 from 10.1.0.0/16`),
        ...["k8s-master", "k8s-worker"].map((host) => `${host} tcp/30000-32767 from 10.1.0.0/16`),
      ].sort(),
    );
  });

  it.each([
    [4505, "Salt publish"],
    [4506, "Salt return"],
    [25000, "microk8s cluster agent"],
    [10250, "kubelet"],
    [10255, "kubelet read-only"],
    [19001, "dqlite"],
    [12379, "etcd"],
  ])("keeps port %d (%s) closed to the world", (port) => {
    expect(reaching(plan, port).filter((i) => i.endsWith("/0"))).toEqual([]);
  });
});

describe("Exposure with ssh_allowed_cidrs=[203.0.113.0/24] and api_allowed_cidrs=[]", () => {
  let plan: any;

  beforeAll(async () => {
    plan = await planJson(ws, { TF_VAR_ssh_allowed_cidrs: '["203.0.113.0/24"]', TF_VAR_api_allowed_cidrs: "[]" });
  });

  it("opens only HTTP and HTTPS on the master to the world", () => {
    expect(worldOpen(plan)).toEqual(["k8s-master tcp/443 from 0.0.0.0/0", "k8s-master tcp/80 from 0.0.0.0/0"]);
  });

  /** The ways in to TCP `port` from outside the cluster's own machines. */
  // The private network is the cluster's own: only its machines and the load balancer's port are on it.
  const fromOutside = (port: number) => reaching(plan, port).filter((i) => !i.includes(" from group ") && !i.endsWith(" from 10.1.0.0/16"));

  it("admits SSH to the bastion only from 203.0.113.0/24", () => {
    expect(fromOutside(22)).toEqual(["bastion tcp/22 from 203.0.113.0/24"]);
  });

  it("closes the Kubernetes API to everything but the cluster's own machines", () => {
    expect(fromOutside(16443)).toEqual([]);
    expect(reaching(plan, 16443).filter((i) => i.startsWith("k8s-master "))).toEqual([
      "k8s-master any/all from group kube-on-os-internal",
      "k8s-master tcp/16443 from 10.1.0.0/16",
    ]);
    // The load balancer's listener admits no one either: it is down.
    expect(plan.planned_values.root_module.resources.find((r: any) => r.type === "openstack_lb_listener_v2").values).toMatchObject({
      admin_state_up: false,
      allowed_cidrs: [],
    });
  });
});
