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
  /** Empty for a group of the project's own, whose rules the plan does not show. */
  readonly protocol: string;
  /** `22`, `4505-4506`, or `all` */
  readonly ports: string;
  /** An address prefix, or `group <name>` for the members of a security group. */
  readonly remote: string;
}

const show = (i: Ingress) => (i.protocol === "" ? `${i.host} ${i.remote}` : `${i.host} ${i.protocol}/${i.ports} from ${i.remote}`);

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
 * What an ingress rule admits, from its planned values: `expressions` are its configuration's,
 * `unknown` what the plan knows only after apply, `remoteGroup` the name of the group it admits
 * the members of, if it names one the plan has.
 */
function ruleWay(rule: any, expressions: any, unknown: any, remoteGroup: string | undefined): Omit<Ingress, "host"> {
  // The provider computes the remotes a rule does not set, so they are unknown in the plan:
  // only a remote the configuration sets counts.
  const setsRemote = (name: string) => Boolean(rule.values[name] || (expressions[name] && unknown[name]));
  if (expressions.remote_ip_prefix && unknown.remote_ip_prefix) {
    throw new Error(`${rule.address}: remote_ip_prefix is known only after apply`);
  }
  // A rule without any remote matches every source: the Neutron API reference ("Create security
  // group rule", https://docs.openstack.org/api-ref/network/v2/#create-security-group-rule) makes
  // remote_ip_prefix, remote_group_id and remote_address_group_id all optional, and a rule matches
  // on the attributes it has; Neutron's reference firewall driver (neutron/agent/linux/
  // iptables_firewall.py, _ip_prefix_arg) adds no source match without a prefix, and drops a /0
  // prefix as "not a constraint", so the two are the same rule.
  const remote =
    rule.values.remote_ip_prefix ||
    (setsRemote("remote_group_id")
      ? `group ${remoteGroup ?? "(not in the plan)"}`
      : setsRemote("remote_address_group_id")
        ? "address group"
        : rule.values.ethertype === "IPv6"
          ? "::/0"
          : "0.0.0.0/0");
  const { protocol, port_range_min: min, port_range_max: max } = rule.values;
  // The provider reads an ICMP rule's absent ports back as 0.
  const ports = !min && !max ? "all" : min === max ? `${min}` : `${min ?? 1}-${max ?? 65535}`;
  return { protocol: protocol || "any", ports, remote };
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
  // A role's groups reach its ports through locals, which the plan's configuration does not
  // show: with any, only appliedIngress can tell which port takes which.
  const roleGroups = [...planned, ...(plan.prior_state?.values.root_module.resources ?? [])].filter(
    (r) => r.type === GROUP && (r.mode === "data" || /IngressGroup/.test(r.address)),
  );
  if (roleGroups.length > 0) throw new Error(`${roleGroups[0].address}: a role's group, which only appliedIngress can place`);

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
    const [group, ...more] = referenced(expressions.security_group_id, GROUP);
    if (!group || more.length > 0) throw new Error(`${rule.address}: cannot tell which planned security group it belongs to`);
    const [remoteGroup] = referenced(expressions.remote_group_id, GROUP);
    const way = ruleWay(rule, expressions, unknownOf(rule), remoteGroup && groupNames.get(remoteGroup));
    for (const host of groupHosts.get(group) ?? []) found.push({ host, ...way });
  }
  return found;
}

/**
 * Every way into every machine of an applied deployment, from a plan with nothing left to do,
 * whose values are all known: rules, groups, ports and servers are joined by their IDs, and each
 * machine is named by its host name (k8s-worker-2), where a port of a counted resource may take
 * other groups than its siblings. A group of the project's own that the plan reads (a data
 * source) shows as `the project's group <name>`: its rules are not the plan's to show.
 */
function appliedIngress(plan: any): Ingress[] {
  const planned: any[] = plan.planned_values.root_module.resources;
  const config = new Map<string, any>(plan.configuration.root_module.resources.map((r: any) => [r.address, r]));
  const managed = planned.filter((r) => r.mode === "managed");
  const groups = new Map<string, any>(managed.filter((r) => r.type === GROUP).map((g) => [g.values.id, g]));
  // The plan's reads are in its prior state.
  const read: any[] = plan.prior_state?.values.root_module.resources ?? [];
  const existing = new Map<string, string>(
    read.filter((r) => r.mode === "data" && r.type === GROUP).map((g) => [g.values.id, g.values.name]),
  );
  const ports = new Map<string, any>(managed.filter((r) => r.type === PORT).map((p) => [p.values.id, p]));

  const groupHosts = new Map<string, Set<string>>();
  const found: Ingress[] = [];
  for (const server of managed.filter((r) => r.type === SERVER)) {
    const host = server.values.name.split(".")[0];
    for (const { port: portId } of server.values.network) {
      const port = ports.get(portId);
      if (!port) throw new Error(`${server.address}: port ${portId} is not in the plan`);
      if (port.values.port_security_enabled === false) throw new Error(`${port.address}: no port security`);
      for (const id of port.values.security_group_ids) {
        if (groups.has(id)) groupHosts.set(id, (groupHosts.get(id) ?? new Set()).add(host));
        else if (existing.has(id)) found.push({ host, protocol: "", ports: "", remote: `the project's group ${existing.get(id)!}` });
        else throw new Error(`${port.address}: group ${id} is neither the plan's nor read by it`);
      }
    }
  }
  for (const rule of managed.filter((r) => r.type === RULE && r.values.direction === "ingress")) {
    const expressions = config.get(configAddress(rule.address)).expressions;
    const way = ruleWay(rule, expressions, {}, groups.get(rule.values.remote_group_id)?.values.name);
    for (const host of groupHosts.get(rule.values.security_group_id) ?? []) found.push({ host, ...way });
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

describe("Exposure with each role's ingress rules and the project's groups, once applied", () => {
  let plan: any;
  const ROLES = {
    TF_VAR_num_kube_nodes: "4",
    TF_VAR_kube_node_flavor: "m1.medium",
    TF_VAR_bastion_ingress_rules: '["udp/51820 from 0.0.0.0/0"]',
    TF_VAR_control_plane_ingress_rules: '["tcp/8443 from 203.0.113.0/24", "icmp from 10.0.0.0/8"]',
    TF_VAR_worker_ingress_rules: '["tcp/30000-32767 from 10.20.0.0/16"]',
    TF_VAR_worker_security_groups: '["monitoring"]',
  };

  beforeAll(async () => {
    double.neutron.seedSecurityGroup("monitoring", {
      ingress: { ethertype: "IPv4", protocol: "tcp", port_range_min: 9100, port_range_max: 9100, remote_ip_prefix: "10.30.0.0/16" },
    });
    const applied = await ws.tofu(["apply", "-auto-approve", "-input=false"], ROLES);
    if (applied.status !== 0) throw new Error(`apply failed:\n${applied.stderr}`);
    plan = await planJson(ws, ROLES);
  });

  afterAll(async () => {
    await ws.tofu(["destroy", "-auto-approve", "-input=false"], ROLES);
  });

  it("opens to the world, besides the defaults, only the bastion's WireGuard port the rules name", () => {
    expect(
      appliedIngress(plan)
        .filter((i) => i.remote.endsWith("/0"))
        .map(show)
        .sort(),
    ).toEqual([
      "bastion tcp/22 from 0.0.0.0/0",
      "bastion udp/51820 from 0.0.0.0/0",
      "k8s-master tcp/16443 from 0.0.0.0/0",
      "k8s-master tcp/443 from 0.0.0.0/0",
      "k8s-master tcp/80 from 0.0.0.0/0",
    ]);
  });

  it("admits each role's rules on its machines alone: the control plane's on the master and the next two nodes", () => {
    const added = appliedIngress(plan)
      .map(show)
      .filter((i) => / from (203\.0\.113\.0\/24|10\.0\.0\.0\/8|10\.20\.0\.0\/16)$|the project's group/.test(i))
      .sort();
    expect(added).toEqual(
      [
        ...["k8s-master", "k8s-worker-0", "k8s-worker-1"].flatMap((host) => [
          `${host} icmp/all from 10.0.0.0/8`,
          `${host} tcp/8443 from 203.0.113.0/24`,
        ]),
        "k8s-worker-2 tcp/30000-32767 from 10.20.0.0/16",
        "k8s-worker-2 the project's group monitoring",
      ].sort(),
    );
  });
});
