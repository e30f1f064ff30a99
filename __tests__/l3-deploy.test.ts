/**
 * L2 and L3: the synthesized stack planned, applied, re-planned and destroyed by real OpenTofu
 * with the real OpenStack provider, against the OpenStack API double, keeping its state in the
 * http state server through the partial http backend (TF_HTTP_*), as the pipeline does.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { NOVA_DEFAULT_QUOTAS } from "./doubles/openstack/nova";
import { NOBLE_IMAGE, OpenStackDouble, startOpenStackDouble, WIKI_IMAGE } from "./doubles/openstack/server";
import type { StateServer } from "./doubles/http-state/server";
import YAML from "yaml";
import { CA_CERTIFICATE } from "./support/arbitraries";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import { planJson } from "./support/plan";
// scripts/ is plain JavaScript, for the npm scripts to run without a compiler.
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { previewPlan, readPlan, UNKNOWN } = require("../scripts/preview.js") as {
  previewPlan: (read: any) => any;
  readPlan: (plan: any) => any;
  UNKNOWN: string;
};
import { CloudTarget, doubleTarget } from "./support/target";
import { describeEachCli, TfCli, tfClis } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace as makeWorkspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

useCloud({ double: { settled: true }, state: GITLAB_STATE }, (cloud) => ({ double, target, state } = cloud));

/** A fresh workspace against this file's double and state server. */
function workspace(synthEnv: NodeJS.ProcessEnv = {}, runEnv: NodeJS.ProcessEnv = WITHOUT_PROVISIONERS, cli: TfCli = tfClis()[0]) {
  return makeWorkspace(double, state, synthEnv, runEnv, cli);
}

function plannedResources(plan: any): any[] {
  return plan.planned_values.root_module.resources;
}

function countByType(resources: { type: string }[]): Record<string, number> {
  return resources.reduce<Record<string, number>>((counts, r) => ({ ...counts, [r.type]: (counts[r.type] ?? 0) + 1 }), {});
}

function byName(resources: any[], type: string, name: string): any {
  const found = resources.filter((r) => r.type === type && r.values.name === name);
  expect(found).toHaveLength(1);
  return found[0].values;
}

/**
 * Every resource the stack plans for `nodes` Kubernetes nodes (1 master + nodes - 1 workers), with
 * the API load balancer the double's catalog (Octavia's load-balancer) makes api_load_balancer=auto create.
 */
function expectedResources(nodes: number, provisioners = false): Record<string, number> {
  const workers = nodes - 1;
  return {
    // seven chain steps, and one membership record per worker; the parameters' preconditions and
    // the control plane's floor
    ...(provisioners ? { null_resource: 7 } : {}),
    // ParameterRules and ControlPlaneFloor; with the chain, a NodeMembership per worker and a drain record per node.
    terraform_data: 2 + (provisioners ? workers + 1 + workers : 0),
    openstack_networking_network_v2: 2,
    openstack_networking_subnet_v2: 2,
    openstack_networking_router_v2: 1,
    openstack_networking_router_interface_v2: 1,
    openstack_networking_secgroup_v2: 5,
    // and the load balancer's way in to the members, and LoadBalancer Services' to the NodePorts
    openstack_networking_secgroup_rule_v2: 8,
    // bastion 2, salt master 1, k8s master 2, one per worker
    openstack_networking_port_v2: 5 + workers,
    // bastion, master, load balancer
    openstack_networking_floatingip_v2: 3,
    openstack_networking_floatingip_associate_v2: 3,
    openstack_compute_instance_v2: 3 + workers,
    openstack_compute_servergroup_v2: 1,
    openstack_blockstorage_volume_v3: 1,
    openstack_compute_volume_attach_v2: 1,
    openstack_lb_loadbalancer_v2: 1,
    openstack_lb_listener_v2: 1,
    openstack_lb_pool_v2: 1,
    openstack_lb_monitor_v2: 1,
    // one per control-plane node
    openstack_lb_member_v2: Math.min(3, nodes),
    // the cloud controller manager's and Cinder CSI's
    openstack_identity_application_credential_v3: 1,
  };
}
const TOTAL_AT_3 = Object.values(expectedResources(3)).reduce((a, b) => a + b, 0);

/** A Keystone behind a private CA, and LoadBalancer Services on an OVN-only Octavia. */
const PRIVATE_CA_AND_OVN = {
  TF_VAR_openstack_ca_certificate: CA_CERTIFICATE,
  TF_VAR_lb_provider: "ovn",
  TF_VAR_lb_method: "SOURCE_IP_PORT",
};

/** The id of the Nova server named `host`.kube-on-os. */
async function serverId(host: string): Promise<string> {
  const found = (await target.servers()).filter((s) => s.name === `${host}.kube-on-os`);
  expect(found).toHaveLength(1);
  return found[0].id;
}

function portAddress(resources: any[], name: string): string {
  return byName(resources, "openstack_networking_port_v2", name).fixed_ip[0].ip_address;
}

describeEachCli("L2: plan against the OpenStack API double", (cli) => {
  let ws: Workspace;
  let plan: any;

  beforeAll(async () => {
    // A project with room for the 100-node plans below; the upstream defaults allow 4 nodes.
    Object.assign(double.nova.quotas, { instances: -1, cores: -1, ram: -1, server_group_members: -1 });
    ws = await workspace({}, {}, cli);
    plan = await planJson(ws);
  });

  afterAll(() => {
    Object.assign(double.nova.quotas, NOVA_DEFAULT_QUOTAS);
  });

  it("plans every resource of the stack, and nothing else", async () => {
    expect(countByType(plannedResources(plan))).toEqual(expectedResources(3, true));
    expect(plan.resource_changes.every((c: any) => c.change.actions.join() === "create" || c.mode === "data")).toBe(true);
  });

  it("reads the external network by name from the API", async () => {
    const lookups = double.requests.filter((r) => r.method === "GET" && r.url.startsWith("/network/v2.0/networks?"));
    expect(lookups.some((r) => r.url.includes("name=vlan1066"))).toBe(true);
    const router = plannedResources(plan).find((r: any) => r.type === "openstack_networking_router_v2");
    expect(router.values.external_network_id).toBe(double.neutron.networks.all().find((n) => n.name === "vlan1066")?.id);
  });

  it("plans the design's gateway addresses and keeps DHCP out of the static half", async () => {
    const resources = plannedResources(plan);
    expect(byName(resources, "openstack_networking_subnet_v2", "kube-on-os-public")).toMatchObject({
      cidr: "10.0.0.0/16",
      gateway_ip: "10.0.0.1",
      allocation_pool: [{ start: "10.0.128.0", end: "10.0.255.254" }],
      dns_nameservers: ["1.1.1.1", "1.0.0.1"],
    });
    expect(byName(resources, "openstack_networking_subnet_v2", "kube-on-os-private")).toMatchObject({
      cidr: "10.1.0.0/16",
      gateway_ip: "10.1.0.1",
      allocation_pool: [{ start: "10.1.128.0", end: "10.1.255.254" }],
    });
  });

  it("applies plan-time TF_VAR_ overrides to a stack synthesized with the defaults", async () => {
    const overridden = await planJson(ws, {
      TF_VAR_private_network_cidr: "192.168.0.0/20",
      TF_VAR_deploy_domain_name: "lab.example",
      TF_VAR_ssh_allowed_cidrs: '["203.0.113.0/24", "198.51.100.0/24"]',
    });
    const resources = plannedResources(overridden);
    expect(byName(resources, "openstack_networking_subnet_v2", "lab.example-private")).toMatchObject({
      cidr: "192.168.0.0/20",
      gateway_ip: "192.168.0.1",
      allocation_pool: [{ start: "192.168.8.0", end: "192.168.15.254" }],
    });
    const ssh = resources.filter((r: any) => r.type === "openstack_networking_secgroup_rule_v2" && r.values.port_range_min === 22);
    expect(ssh.map((r: any) => r.values.remote_ip_prefix).sort()).toEqual(["198.51.100.0/24", "203.0.113.0/24"]);
  });

  it("plans a private CA and LoadBalancer Services on OVN into the cloud pillar alone", async () => {
    // They reach Salt only: every resource is planned as without them.
    const values = (json: any) => plannedResources(json).map((r: any) => [r.address, r.values]);
    expect(values(await planJson(ws, PRIVATE_CA_AND_OVN))).toEqual(values(plan));
  });

  it("plans every machine at the design's fixed addresses", () => {
    const resources = plannedResources(plan);
    expect(portAddress(resources, "bastion.kube-on-os-public")).toBe("10.0.0.10");
    expect(portAddress(resources, "bastion.kube-on-os-private")).toBe("10.1.0.1");
    expect(portAddress(resources, "salt.kube-on-os-private")).toBe("10.1.0.5");
    expect(portAddress(resources, "k8s-master.kube-on-os-public")).toBe("10.0.0.11");
    expect(portAddress(resources, "k8s-master.kube-on-os-private")).toBe("10.1.0.10");
    expect(portAddress(resources, "k8s-worker-0.kube-on-os-private")).toBe("10.1.0.100");
    expect(portAddress(resources, "k8s-worker-1.kube-on-os-private")).toBe("10.1.0.101");
    const instances = resources.filter((r: any) => r.type === "openstack_compute_instance_v2").map((r: any) => r.values.name);
    expect(instances.sort()).toEqual([
      "bastion.kube-on-os",
      "k8s-master.kube-on-os",
      "k8s-worker-0.kube-on-os",
      "k8s-worker-1.kube-on-os",
      "salt.kube-on-os",
    ]);
  });

  it.each([1, 5, 10, 100])("plans num_kube_nodes=%d given only at plan time as that many nodes", async (nodes) => {
    const resources = plannedResources(await planJson(ws, { TF_VAR_num_kube_nodes: String(nodes) }));
    expect(countByType(resources)).toEqual(expectedResources(nodes, true));
    const workers = resources.filter((r: any) => r.type === "openstack_compute_instance_v2" && r.values.name.startsWith("k8s-worker-"));
    expect(workers).toHaveLength(nodes - 1);
    if (nodes > 1) expect(portAddress(resources, `k8s-worker-${nodes - 2}.kube-on-os-private`)).toBe(`10.1.0.${100 + nodes - 2}`);
  });

  it("plans the provisioning chain as seven steps at any node count, and none without run_provisioners", async () => {
    const chain = (p: any) =>
      p.resource_changes
        .filter((c: any) => /^(null_resource|terraform_data)\.SaltProvisioner_/.test(c.address))
        .map(
          (c: any) =>
            `${c.address.replace(/^(null_resource|terraform_data)\.SaltProvisioner_([A-Za-z]+)_[0-9A-F]{8}/, "$2")} ${c.change.actions}`,
        );
    const steps = [
      "WaitForBastion",
      "WaitForSaltMaster",
      "SyncSaltTree",
      "AcceptMinionKeys",
      "Upgrade",
      "Orchestrate",
      "RebootForUpdates",
    ].map((s) => `${s}[0] create`);
    const members = (n: number) => [
      ...Array.from({ length: n - 1 }, (_, i) => `NodeMembership[${i}] create`),
      ...Array.from({ length: n - 1 }, (_, i) => `NodeDrain[${i}] create`),
      "MasterDrain[0] create",
    ];
    expect(chain(plan).sort()).toEqual([...steps, ...members(3)].sort());
    expect(chain(await planJson(ws, { TF_VAR_num_kube_nodes: "50" })).sort()).toEqual([...steps, ...members(50)].sort());
    expect(chain(await planJson(ws, WITHOUT_PROVISIONERS))).toEqual([]);
  });

  it("shows the pillar's node list and the content hashes in the plan", () => {
    const sync = plan.resource_changes.find((c: any) => /SyncSaltTree/.test(c.address));
    expect(sync.change.after.triggers).toMatchObject({
      salt_tree: expect.stringMatching(/^[0-9a-f]{64}$/),
      pillar_tree: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    // The master's floating IP is allocated at apply; the rest of the pillar is known now.
    expect(sync.change.after_unknown.triggers).toMatchObject({ pillar_data: true });
    const accept = plan.resource_changes.find((c: any) => /AcceptMinionKeys/.test(c.address));
    // The minion ids are known before any machine exists (a JSON list: triggers are strings);
    // the machines' ids, which re-run the step when a machine is re-created, are not.
    expect(JSON.parse(accept.change.after.triggers.minions)).toEqual([
      "salt.kube-on-os",
      "bastion.kube-on-os",
      "k8s-master.kube-on-os",
      "k8s-worker-0.kube-on-os",
      "k8s-worker-1.kube-on-os",
    ]);
    expect(accept.change.after_unknown.triggers).toMatchObject({ machines: true });
  });

  it("rejects a bad plan-time TF_VAR_ with the variable's validation message", async () => {
    const result = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "0" });
    expect(result.status).not.toBe(0);
    expect(result.stderr.replace(/\s+/g, " ")).toContain("num_kube_nodes must be a whole number from 1 to 256 (the master counts,");
  });

  it("keeps fixed addresses out of the DHCP pool whatever the plan-time values, before creating anything", async () => {
    const before = await target.resources();
    const result = await ws.tofu(["plan", "-input=false", "-lock=false"], {
      TF_VAR_private_network_cidr: "10.1.0.0/24",
      TF_VAR_num_kube_nodes: "30",
    });
    expect(result.status).not.toBe(0);
    // The variable's validation says so before the subnet's precondition, the cloud-side guard, would.
    expect(result.stderr.replace(/\s+/g, " ")).toContain(
      "num_kube_nodes must be small enough that every worker's fixed address (private host numbers 100 and up) lies in the " +
        "lower half of private_network_cidr, below the DHCP range",
    );
    // 29 nodes end at host 127, just below the pool.
    const fits = await ws.tofu(["plan", "-input=false", "-lock=false"], {
      TF_VAR_private_network_cidr: "10.1.0.0/24",
      TF_VAR_num_kube_nodes: "29",
    });
    expect(fits.stderr).toBe("");
    expect(await target.resources()).toEqual(before);
  });

  it("authenticates with an application credential as well as with a password", async () => {
    const env = double.applicationCredentialEnv();
    const unset = Object.fromEntries(Object.keys(double.passwordEnv()).map((k) => [k, ""]));
    const result = await ws.tofu(["plan", "-input=false", "-lock=false"], { ...unset, ...env });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  });

  it("fails to plan with wrong credentials, naming the authentication failure", async () => {
    const result = await ws.tofu(["plan", "-input=false", "-lock=false"], { OS_PASSWORD: "wrong" });
    expect(result.status).not.toBe(0);
    expect(result.stderr).toMatch(/Authentication failed|401/);
  });
});

describe("L3: apply, re-plan with no changes, destroy", () => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace();
  });

  it("applies the stack", async () => {
    const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
    expect(apply.stderr).toBe("");
    expect(apply.stdout).toContain(`Apply complete! Resources: ${TOTAL_AT_3} added, 0 changed, 0 destroyed.`);
    expect((await target.servers()).map((s) => s.status)).toEqual(["ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE", "ACTIVE"]);
  });

  it("outputs an ssh config through the bastion, the kubeconfig command and the minion ids", async () => {
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    const bastionIp = outputs.bastion_floating_ip.value;
    expect(outputs.ssh_config.value).toContain(`Host bastion.kube-on-os\n  HostName ${bastionIp}\n  User ubuntu\n`);
    expect(outputs.ssh_config.value).toContain(
      "Host k8s-worker-1.kube-on-os\n  HostName 10.1.0.101\n  User ubuntu\n  ProxyJump bastion.kube-on-os\n",
    );
    expect(outputs.ssh_config.value).toContain("Host salt.kube-on-os\n  HostName 10.1.0.5\n");
    // The server is the API load balancer's floating IP (tested in l3-node-pools).
    expect(outputs.kubeconfig_command.value).toBe(
      `ssh -J ubuntu@${bastionIp} ubuntu@10.1.0.10 sudo microk8s config | sed 's#server: https://[^:]*:#server: https://${outputs.api_address.value}:#' > kubeconfig`,
    );
    expect(outputs.minion_ids.value).toEqual([
      "salt.kube-on-os",
      "bastion.kube-on-os",
      "k8s-master.kube-on-os",
      "k8s-worker-0.kube-on-os",
      "k8s-worker-1.kube-on-os",
    ]);
  });

  it("writes the pillar the Salt states read: Terraform's values in the shape of _from_terraform.sls.example", async () => {
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    // Base64: the console prints strings in HCL syntax, where `${` reads `$${`.
    const console = await ws.tofu(["console", "-lock=false"], {}, "base64encode(local.salt_pillar)\n");
    expect(console.stderr).toBe("");
    const written = Buffer.from(JSON.parse(console.stdout.trim()), "base64").toString("utf8");
    // Data for a data-only renderer, as the example is: no value can be read as Jinja.
    expect(written.split("\n")[0]).toBe("#!yaml");
    const pillar = YAML.parse(written);
    expect(pillar).toEqual({
      users: [],
      mine_functions: { "network.ip_addrs": { cidr: "10.1.0.0/16" } },
      network: { public_cidr: "10.0.0.0/16", private_cidr: "10.1.0.0/16" },
      core: { nameservers: ["1.1.1.1", "1.0.0.1"] },
      microk8s: {
        master: "k8s-master.kube-on-os",
        allowed_csr_ip: outputs.master_floating_ip.value,
        // The load balancer's VIP is on the public network.
        api_addresses: [outputs.master_floating_ip.value, outputs.api_address.value, expect.stringMatching(/^10[.]0[.]/)],
        pod_cidr: "10.244.0.0/16",
        service_cidr: "10.152.183.0/24",
        // microk8s_channel unset: the nodes keep theirs, a new cluster installs Salt's new_cluster_channel.
        channel: null,
        external_cloud_provider: true,
        // Each node's Nova server, for its providerID.
        nodes: [
          {
            id: "k8s-master.kube-on-os",
            address: "10.1.0.10",
            labels: { "kube-on-os/pool": "default" },
            taints: [],
            instance_id: await serverId("k8s-master"),
          },
          {
            id: "k8s-worker-0.kube-on-os",
            address: "10.1.0.100",
            labels: { "kube-on-os/pool": "default" },
            taints: [],
            instance_id: await serverId("k8s-worker-0"),
          },
          {
            id: "k8s-worker-1.kube-on-os",
            address: "10.1.0.101",
            labels: { "kube-on-os/pool": "default" },
            taints: [],
            instance_id: await serverId("k8s-worker-1"),
          },
        ],
        control_plane: ["k8s-master.kube-on-os", "k8s-worker-0.kube-on-os", "k8s-worker-1.kube-on-os"],
      },
    });
    // Same keys, all the way down, as the documented contract.
    const shape = (v: any): any =>
      Array.isArray(v)
        ? v.length
          ? [shape(v[0])]
          : []
        : v && typeof v === "object"
          ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, shape(x)]))
          : typeof v;
    const example = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "pillar", "_from_terraform.sls.example"), "utf8"));
    expect(shape({ ...pillar, users: example.users })).toEqual(shape(example));
  });

  it("gives npm run diff's Salt preview the pillar Terraform writes, the Salt master, and the hosts a plan keeps and adds", async () => {
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    const pillarFile = await ws.tofu(["console", "-lock=false"], {}, "base64encode(local.salt_pillar)\n");
    const written = YAML.parse(Buffer.from(JSON.parse(pillarFile.stdout.trim()), "base64").toString("utf8"));
    const ids = ["salt", "bastion", "k8s-master", "k8s-worker-0", "k8s-worker-1"].map((host) => `${host}.kube-on-os`);
    // The same cluster, now with the chain: every host is asked, with exactly the pillar it has.
    const samePlan = await planJson(ws, { TF_VAR_run_provisioners: "true" });
    const same = readPlan(samePlan);
    expect(same.live).toEqual({
      bastion: outputs.bastion_floating_ip.value,
      salt_master: { id: "salt.kube-on-os", address: "10.1.0.5" },
      user: "ubuntu",
      pillar: written,
    });
    expect(same.pillar).toEqual(written);
    expect(previewPlan(same)).toEqual({ ask: ids, fresh: [], removed: [] });
    // A fourth node: a new machine, whose server id the plan does not know yet.
    const grown = readPlan(await planJson(ws, { TF_VAR_run_provisioners: "true", TF_VAR_num_kube_nodes: "4" }));
    expect(previewPlan(grown)).toEqual({ ask: ids, fresh: ["k8s-worker-2.kube-on-os"], removed: [] });
    expect(grown.pillar.microk8s.nodes).toEqual([
      ...written.microk8s.nodes,
      { id: "k8s-worker-2.kube-on-os", address: "10.1.0.102", labels: { "kube-on-os/pool": "default" }, taints: [], instance_id: UNKNOWN },
    ]);
    // A cluster applied before the output existed: nothing to preview until this version's apply.
    delete samePlan.prior_state.values.outputs.salt_preview;
    expect(previewPlan(readPlan(samePlan))).toEqual({
      skip: "the cluster was applied before Salt previews existed (its state has no salt_preview output): the next apply makes them possible",
    });
    // Without the chain there is nothing to preview.
    expect(previewPlan(readPlan(await planJson(ws)))).toEqual({
      skip: "run_provisioners is false: the apply runs no Salt, so there is nothing to preview",
    });
  });

  it("creates the cluster's application credential with the least roles, and writes it to the cloud pillar only", async () => {
    const credentials = double.keystone.applicationCredentials.all().filter((c) => c.seeded !== true);
    expect(credentials).toHaveLength(1);
    const [credential] = credentials as any[];
    expect(credential.name).toBe("kube-on-os-cloud-provider");
    expect(credential.unrestricted).toBe(false);
    // member and load-balancer_member are the user's; Keystone lists reader, which member implies, too.
    expect(credential.roles.map((r: { name: string }) => r.name).sort()).toEqual(["load-balancer_member", "member", "reader"]);

    const console = await ws.tofu(["console", "-lock=false"], {}, "nonsensitive(base64encode(local.cloud_pillar))\n");
    expect(console.stderr).toBe("");
    const written = Buffer.from(JSON.parse(console.stdout.trim()), "base64").toString("utf8");
    expect(written.split("\n")[0]).toBe("#!yaml");
    const externalNetwork = double.neutron.networks.all().find((n: any) => n["router:external"]) as any;
    const subnet = (name: string) => (double.neutron.subnets.all().find((s: any) => s.name === name) as any).id;
    expect(YAML.parse(written)).toEqual({
      openstack: {
        cloud: {
          auth_url: expect.stringMatching(/^http:\/\/127[.]0[.]0[.]1:\d+\/identity/),
          region: "RegionOne",
          application_credential_id: credential.id,
          application_credential_secret: credential.secret,
          floating_network_id: externalNetwork.id,
          subnet_id: subnet("kube-on-os-public"),
          member_subnet_id: subnet("kube-on-os-private"),
          load_balancer: true,
        },
      },
    });
    // The documented contract has the same keys.
    const example = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "pillar", "_cloud.sls.example"), "utf8"));
    expect(Object.keys(YAML.parse(written).openstack.cloud).sort()).toEqual(Object.keys(example.openstack.cloud).sort());
    // The secret is in the state (as every credential Terraform creates is), not in the JSON or a plan.
    expect(fs.readFileSync(path.join(ws.dir, "cdk.tf.json"), "utf8")).not.toContain(credential.secret);
    // (A saved plan holds the state, so `show -json` of one would print it, as Terraform documents.)
    const plan = await ws.tofu(["plan", "-input=false", "-lock=false"]);
    expect(plan.status).toBe(0);
    expect(plan.stdout + plan.stderr).not.toContain(credential.secret);
  });

  it("writes a private CA and LoadBalancer Services' provider and method into the cloud pillar only when set", async () => {
    // console only reads the state. Taking its lock, OpenTofu prints "Acquiring state lock. This
    // may take a few moments..." on stdout once that takes over 400 ms, as it did on a busy CI
    // machine, and the line is no JSON.
    const evaluate = async (env: NodeJS.ProcessEnv, expression: string) => {
      const console = await ws.tofu(["console", "-lock=false"], env, `${expression}\n`);
      expect(console.stderr).toBe("");
      // A sensitive value prints as (sensitive value), which is no JSON.
      return JSON.parse(console.stdout.trim());
    };
    const cloud = async (env: NodeJS.ProcessEnv) =>
      YAML.parse(Buffer.from(await evaluate(env, "nonsensitive(base64encode(local.cloud_pillar))"), "base64").toString("utf8")).openstack
        .cloud;
    const version = (env: NodeJS.ProcessEnv) => evaluate(env, "local.cloud_pillar_version");
    const credential = "one(openstack_identity_application_credential_v3.CloudIntegration_Credential_0F2B3D85[*].id)";

    // Unset, the pillar's version (the sync step's trigger) is what it was before they existed:
    // the settings' and the credential's, not sensitive.
    const unset = await version({});
    expect(unset).toBe(
      await evaluate({}, `sha256(jsonencode(merge(local.cloud_settings, { application_credential_id = ${credential} })))`),
    );
    expect(Object.keys(await cloud({}))).not.toContain("ca_certificate");

    // Those keys alone: a failure must not print the credential's secret beside them.
    const { ca_certificate, lb_provider, lb_method } = await cloud(PRIVATE_CA_AND_OVN);
    expect({ ca_certificate, lb_provider, lb_method }).toEqual({
      ca_certificate: CA_CERTIFICATE,
      lb_provider: "ovn",
      lb_method: "SOURCE_IP_PORT",
    });
    const set = await version(PRIVATE_CA_AND_OVN);
    expect(set).toMatch(/^[0-9a-f]{64}$/);
    expect(set).not.toBe(unset);
    // A new CA alone re-syncs the pillar.
    const otherCa = { ...PRIVATE_CA_AND_OVN, TF_VAR_openstack_ca_certificate: CA_CERTIFICATE.replace("MIIB", "MIIC") };
    expect(await version(otherCa)).not.toBe(set);
    // Without the chain, nothing else changes.
    const plan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"], PRIVATE_CA_AND_OVN);
    expect(plan.stderr).toBe("");
    expect(plan.status).toBe(0);
  });

  it("outputs an ssh command for every machine", async () => {
    const outputs = JSON.parse((await ws.tofu(["output", "-json"])).stdout);
    const jump = `ubuntu@${outputs.bastion_floating_ip.value}`;
    expect(outputs.ssh_commands.value).toEqual({
      "bastion.kube-on-os": `ssh ${jump}`,
      "salt.kube-on-os": `ssh -J ${jump} ubuntu@10.1.0.5`,
      "k8s-master.kube-on-os": `ssh -J ${jump} ubuntu@10.1.0.10`,
      "k8s-worker-0.kube-on-os": `ssh -J ${jump} ubuntu@10.1.0.100`,
      "k8s-worker-1.kube-on-os": `ssh -J ${jump} ubuntu@10.1.0.101`,
    });
  });

  it("keeps the state in the http backend, unlocked after the run", async () => {
    const stored = state.readState(ws.stateName) as { resources: { type: string; mode: string; instances: unknown[] }[] };
    const instances = stored.resources.filter((r) => r.mode === "managed").flatMap((r) => r.instances.map(() => ({ type: r.type })));
    expect(countByType(instances)).toEqual(expectedResources(3));
    expect(state.lockInfo(ws.stateName)).toBeUndefined();
    const locks = state.requests.filter((r) => r.path === `/state/${ws.stateName}/lock`).map((r) => `${r.method} ${r.status}`);
    expect(locks).toEqual(expect.arrayContaining(["POST 200", "DELETE 200"]));
  });

  it("re-plans with no changes (exit code 0 of -detailed-exitcode)", async () => {
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.stderr).toBe("");
    expect(replan.status).toBe(0);
    expect(replan.stdout).toContain("No changes.");
  });

  it("re-creates the Salt master instance without touching its volume", async () => {
    const volumeBefore = (await ws.tofu(["output", "-raw", "salt_volume_id"])).stdout;
    const list = (await ws.tofu(["state", "list"])).stdout.split("\n");
    const saltInstance = list.find((address) => address.startsWith("openstack_compute_instance_v2.SaltMaster_Instance_"));
    expect(saltInstance).toBeDefined();
    const serverBefore = (await target.servers()).find((s) => s.name.startsWith("salt."))?.id;

    const replace = await ws.tofu(["apply", "-auto-approve", "-input=false", `-replace=${saltInstance}`]);
    expect(replace.stderr).toBe("");
    // The instance and its attachment are replaced; the volume is not.
    expect(replace.stdout).toContain("Apply complete! Resources: 2 added, 0 changed, 2 destroyed.");
    const serverAfter = (await target.servers()).find((s) => s.name.startsWith("salt."));
    expect(serverAfter?.id).not.toBe(serverBefore);
    expect((await ws.tofu(["output", "-raw", "salt_volume_id"])).stdout).toBe(volumeBefore);
    expect(double.cinder.volumes.get(volumeBefore)).toMatchObject({
      status: "in-use",
      attachments: [expect.objectContaining({ server_id: serverAfter?.id })],
    });
    expect((await ws.tofu(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
  });

  it("destroys everything it created, leaving the double as seeded", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
    expect(destroy.stderr).toBe("");
    expect(destroy.stdout).toContain(`Destroy complete! Resources: ${TOTAL_AT_3} destroyed.`);
    expect(await target.resources()).toEqual([]);
    const stored = state.readState(ws.stateName) as { resources: unknown[] };
    expect(stored.resources).toEqual([]);
  });
});

describeEachCli("L3: the control plane's 3 voters (issue 18)", (cli) => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace({}, WITHOUT_PROVISIONERS, cli);
  });

  afterAll(async () => {
    await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
  });

  it("refuses at plan time to take a cluster applied with 3 voters below them, in one line, changing nothing", async () => {
    expect((await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "4" })).stderr).toBe("");
    const servers = (await target.servers()).length;
    const down = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "2" });
    expect(down.status).not.toBe(0);
    expect(down.stderr.replace(/\s+/g, " ")).toContain(
      "num_kube_nodes: the cluster's control plane has 3 dqlite voters (the first 3 nodes) and must keep them; num_kube_nodes must stay at least 3.",
    );
    expect(await target.servers()).toHaveLength(servers);
    // A worker that is no voter may go.
    const three = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "3" });
    expect(three.stderr).toBe("");
    expect(await target.servers()).toHaveLength(servers - 1);
  });

  it("still destroys the whole cluster", async () => {
    const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "1" });
    expect(destroy.stderr).toBe("");
    expect(await target.resources()).toEqual([]);
  });

  it("lets a cluster that never had 3 voters lose its spare", async () => {
    expect((await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "2" })).stderr).toBe("");
    const down = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "1" });
    expect(down.stderr).toBe("");
    expect(await target.servers()).toHaveLength(3);
  });
});

describe("the base image, by name or by ID (issue 18)", () => {
  // Glance as a cloud publishes Ubuntu: an older and a newer build under one name, the old default
  // by ID, and a community image of the same name, which Glance lists only when asked for.
  const OLDER = { id: "0b9d1e4c-3a57-4f62-8e0d-6c2b7a91f3e8", name: "Ubuntu 24.04" };
  const COMMUNITY = { id: "7e2f4a6b-1c3d-4e5f-8a9b-0c1d2e3f4a5b", name: "Ubuntu 24.04", visibility: "community" as const };
  const NEWEST = { id: "c4e8a2f6-5b1d-4c3e-9f7a-2d6b8e0c1a43", name: "Ubuntu 24.04" };
  let cloud: OpenStackDouble;

  beforeAll(async () => {
    cloud = await startOpenStackDouble({ images: [OLDER, WIKI_IMAGE, NOBLE_IMAGE, COMMUNITY], settled: true });
  });

  afterAll(async () => {
    await cloud.close();
  });

  afterEach(() => {
    expect(cloud.unhandled).toEqual([]);
  });

  const imagesOf = (plan: any) =>
    plannedResources(plan)
      .filter((r: any) => r.type === "openstack_compute_instance_v2")
      .map((r: any) => r.values.image_id);

  describeEachCli("L2", (cli) => {
    let ws: Workspace;

    beforeAll(async () => {
      ws = await makeWorkspace(cloud, state, {}, WITHOUT_PROVISIONERS, cli);
    });

    it("looks the default name up in Glance and boots every machine from the newest image of that name", async () => {
      const plan = await planJson(ws);
      expect(imagesOf(plan)).toEqual(Array(5).fill(NOBLE_IMAGE.id));
      const lookups = cloud.requests.filter((r) => r.method === "GET" && r.url.startsWith("/image/v2/images?"));
      expect(lookups.length).toBeGreaterThan(0);
      const query = new URL(lookups[lookups.length - 1].url, "http://double").searchParams;
      expect(Object.fromEntries(query)).toEqual({ name: "Ubuntu 24.04", sort: "name:asc", status: "active" });
    });

    it("uses an ID as it is, with no lookup", async () => {
      const before = cloud.requests.length;
      const plan = await planJson(ws, { TF_VAR_base_image: WIKI_IMAGE.id });
      expect(imagesOf(plan)).toEqual(Array(5).fill(WIKI_IMAGE.id));
      expect(plan.resource_changes.filter((c: any) => c.type === "openstack_images_image_v2")).toEqual([]);
      expect(cloud.requests.slice(before).filter((r) => r.url.startsWith("/image/v2/images?"))).toEqual([]);
    });

    it("fails the plan with the provider's error when no image has the name, creating nothing", async () => {
      const result = await ws.tofu(["plan", "-input=false", "-lock=false"], { TF_VAR_base_image: "Ubuntu 26.04" });
      expect(result.status).not.toBe(0);
      expect(result.stderr.replace(/\s+/g, " ")).toContain("Your query returned no results.");
      expect(await doubleTarget(cloud).resources()).toEqual([]);
    });
  });

  describe("L3", () => {
    let ws: Workspace;

    beforeAll(async () => {
      ws = await makeWorkspace(cloud, state, {});
    });

    afterAll(async () => {
      await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
    });

    it("keeps a deployment made from the old default's ID when the default becomes a name: the re-plan changes nothing", async () => {
      // As before issue 18: the same stack, with the ID the default was.
      const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_base_image: WIKI_IMAGE.id });
      expect(apply.stderr).toBe("");
      expect((await doubleTarget(cloud).servers()).map((s) => s.image)).toEqual(Array(5).fill(WIKI_IMAGE.id));
      const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
      expect(replan.stderr).toBe("");
      expect(replan.status).toBe(0);
    });

    it("replaces no machine when the cloud publishes a newer build, and boots only new machines from it", async () => {
      cloud.glance.seedImage(NEWEST.id, NEWEST.name);
      const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
      expect(replan.stderr).toBe("");
      expect(replan.status).toBe(0);
      const up = await ws.tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "4" });
      expect(up.stderr).toBe("");
      const images = Object.fromEntries((await doubleTarget(cloud).servers()).map((s) => [s.name.split(".")[0], s.image]));
      expect(images).toEqual({
        ...Object.fromEntries(["bastion", "salt", "k8s-master", "k8s-worker-0", "k8s-worker-1"].map((host) => [host, WIKI_IMAGE.id])),
        "k8s-worker-2": NEWEST.id,
      });
      expect((await ws.tofu(["plan", "-detailed-exitcode", "-input=false"], { TF_VAR_num_kube_nodes: "4" })).status).toBe(0);
    });
  });
});

describe("state locking", () => {
  it("fails a second plan with the holder's lock info while the first holds the lock, and keeps the state intact", async () => {
    const ws = await workspace();
    expect((await ws.tofu(["apply", "-auto-approve", "-input=false"])).status).toBe(0);
    const before = fs.readFileSync(path.join(state.dir, `${ws.stateName}.tfstate`), "utf8");

    // The first plan stops at its first API call, holding the state lock.
    const held = double.hold((method, url) => method === "GET" && url.startsWith("/network/v2.0/"));
    const first = ws.tofu(["plan", "-input=false", "-detailed-exitcode"]);
    await held.reached;

    const holder = state.lockInfo(ws.stateName);
    expect(holder).toMatchObject({ Operation: "OperationTypePlan" });
    const second = await ws.tofu(["plan", "-input=false", "-lock-timeout=0s"]);
    expect(second.status).toBe(1);
    const message = second.stderr.replace(/\s+/g, " ");
    expect(message).toContain("Error acquiring the state lock");
    expect(message).toContain(`ID: ${holder?.ID}`);
    expect(message).toContain("Operation: OperationTypePlan");

    held.release();
    const firstResult = await first;
    expect(firstResult.status).toBe(0);
    expect(firstResult.stdout).toContain("No changes.");
    expect(fs.readFileSync(path.join(state.dir, `${ws.stateName}.tfstate`), "utf8")).toBe(before);
    expect(state.lockInfo(ws.stateName)).toBeUndefined();
    expect((await ws.tofu(["destroy", "-auto-approve", "-input=false"])).status).toBe(0);
  });
});

describe("secrets", () => {
  it("keeps TF_VAR_root_password out of cdktf.out, the plan, its JSON, the state and every log line", async () => {
    const secret = "Root-Secret-Never-Written-8c2e";
    const secretEnv = { TF_VAR_root_password: secret, TF_VAR_set_root_password: "true" };
    const ws = await workspace(secretEnv);
    const outputs: string[] = [];
    const run = async (args: string[]) => {
      const result = await ws.tofu(args, secretEnv);
      outputs.push(result.stdout, result.stderr);
      expect(result.status).toBe(0);
      return result;
    };
    await run(["plan", "-input=false", "-out=tfplan"]);
    outputs.push((await run(["show", "-json", "tfplan"])).stdout);
    await run(["apply", "-auto-approve", "-input=false", "tfplan"]);
    await run(["destroy", "-auto-approve", "-input=false"]);

    const files = fs.readdirSync(path.dirname(path.dirname(ws.dir)), { recursive: true, withFileTypes: true }).filter((f) => f.isFile());
    expect(files.map((f) => f.name)).toContain("tfplan");
    for (const file of files) {
      expect({ file: file.name, leaked: fs.readFileSync(path.join(file.parentPath, file.name)).includes(secret) }).toEqual({
        file: file.name,
        leaked: false,
      });
    }
    // Counted, not shown: a failing assertion must not print the secret either.
    expect(outputs.filter((output) => output.includes(secret)).length).toBe(0);
    expect(fs.readFileSync(path.join(state.dir, `${ws.stateName}.tfstate`), "utf8")).not.toContain(secret);
  });
});

describe("cloud integration with a restricted application credential", () => {
  it("fails at the cluster's credential, naming Keystone's refusal, and deploys with cloud_integration = false", async () => {
    const ws = await workspace();
    const unset = Object.fromEntries(Object.keys(double.passwordEnv()).map((k) => [k, ""]));
    // The double's seeded credential is restricted, Keystone's default.
    const env = { ...unset, ...double.applicationCredentialEnv() };
    const credential = "openstack_identity_application_credential_v3.CloudIntegration_Credential_0F2B3D85";
    const refused = await ws.tofu(["apply", "-auto-approve", "-input=false", `-target=${credential}`], env);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr.replace(/\s+/g, " ")).toContain(
      "Using method 'application_credential' is not allowed for managing additional application credentials.",
    );
    const before = await target.resources();
    const applied = await ws.tofu(["apply", "-auto-approve", "-input=false"], { ...env, TF_VAR_cloud_integration: "false" });
    expect(applied.stderr).toBe("");
    expect(applied.stdout).toContain(`Apply complete! Resources: ${TOTAL_AT_3 - 2} added`);
    expect(double.keystone.applicationCredentials.all().filter((c) => c.seeded !== true)).toEqual([]);
    const console = await ws.tofu(
      ["console", "-lock=false"],
      { ...env, TF_VAR_cloud_integration: "false" },
      "nonsensitive(base64encode(local.cloud_pillar))\n",
    );
    expect(Buffer.from(JSON.parse(console.stdout.trim()), "base64").toString("utf8")).toBe("#!yaml\n{}\n");
    expect((await ws.tofu(["destroy", "-auto-approve", "-input=false"], { ...env, TF_VAR_cloud_integration: "false" })).status).toBe(0);
    expect(await target.resources()).toEqual(before);
  });
});

describe("cloud integration for a deployer without the member role", () => {
  it("fails the plan in one line naming the role, before anything is created", async () => {
    const ws = await workspace();
    const identity = double.identity as { assignedRoles: readonly string[] };
    const assigned = identity.assignedRoles;
    // A project reader (keystone's bootstrap roles): no member, which the credential needs.
    identity.assignedRoles = ["reader", "load-balancer_member"];
    try {
      const before = await target.resources();
      const plan = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
      expect(plan.status).not.toBe(0);
      expect(plan.stderr.replace(/\s+/g, " ")).toContain(
        "cloud_integration is true, but the deploying user has no member role on the project, which the cloud controller manager's application credential needs: ask for the role, or set cloud_integration = false.",
      );
      expect(await target.resources()).toEqual(before);
    } finally {
      identity.assignedRoles = assigned;
    }
  });
});
