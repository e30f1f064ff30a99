/**
 * L3: the stack against what real clouds do, through the real provider and the OpenStack API
 * double at its upstream defaults: quotas checked at plan time (and hit at apply time), a
 * server that goes to ERROR, the Salt volume behind a flavor's ephemeral disk, config drives.
 * Each failure is followed by the fix a user would make and a re-apply that converges.
 */
import { CINDER_DEFAULT_QUOTAS } from "./doubles/openstack/cinder";
import { NEUTRON_DEFAULT_QUOTAS } from "./doubles/openstack/neutron";
import { NOVA_DEFAULT_QUOTAS } from "./doubles/openstack/nova";
import type { StateServer } from "./doubles/http-state/server";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { useCloud } from "./support/cloud";
import type { CloudTarget } from "./support/target";
import { RunResult, runAsync, tfClis } from "./support/tofu";
import { workspace, Workspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

useCloud({}, (cloud) => ({ double, target, state } = cloud));

beforeEach(async () => {
  // Every test starts from the upstream defaults and an empty project.
  Object.assign(double.nova.quotas, NOVA_DEFAULT_QUOTAS);
  Object.assign(double.cinder.quotas, CINDER_DEFAULT_QUOTAS);
  Object.assign(double.neutron.quotas, NEUTRON_DEFAULT_QUOTAS);
  double.nova.hosts = 16;
  expect(await target.resources()).toEqual([]);
});

function oneLine(result: RunResult): string {
  return `${result.stderr}${result.stdout}`.replace(/[│╷╵]/g, " ").replace(/\s+/g, " ");
}

async function apply(ws: Workspace, env: NodeJS.ProcessEnv = {}): Promise<RunResult> {
  return ws.tofu(["apply", "-auto-approve", "-input=false"], env);
}

async function destroyAll(ws: Workspace, env: NodeJS.ProcessEnv = {}): Promise<void> {
  const destroyed = await ws.tofu(["destroy", "-auto-approve", "-input=false"], env);
  expect({ status: destroyed.status, stderr: destroyed.stderr }).toEqual({ status: 0, stderr: "" });
  expect(await target.resources()).toEqual([]);
}

describe("quotas", () => {
  it("stops the plan with one line naming the quota when a limit is below what the cluster needs, before creating anything", async () => {
    const ws = await workspace(double, state);
    // 5 nodes of m1.large, the m1.medium Salt master and the m1.small bastion: 23 cores.
    const cores = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "5" });
    expect(cores.status).toBe(1);
    expect(oneLine(cores)).toContain(
      "Quota too small: this deployment needs Nova quota cores = 23, but the project allows 20 (openstack quota show); " +
        "raise the quota, or deploy fewer or smaller machines.",
    );
    // 11 nodes overflow the server group even where cores, RAM and instances are plenty.
    Object.assign(double.nova.quotas, { instances: -1, cores: -1, ram: -1 });
    const members = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "11" });
    expect(members.status).toBe(1);
    expect(oneLine(members)).toContain("this deployment needs Nova quota server_group_members = 11, but the project allows 10");
    // Without a server group, the same 11 nodes fit.
    const ungrouped = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "11", TF_VAR_kube_server_group_policy: "none" });
    expect({ status: ungrouped.status, stderr: ungrouped.stderr }).toEqual({ status: 0, stderr: "" });
    // A cloud that hides its quotas: check_quotas=false skips the reads.
    const unchecked = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "11", TF_VAR_check_quotas: "false" });
    expect({ status: unchecked.status, stderr: unchecked.stderr }).toEqual({ status: 0, stderr: "" });
    expect(double.requests.some((r) => r.url.includes("/os-quota-sets/") && r.status !== 200)).toBe(false);
  });

  it("stops the plan when server_metadata has more items than the project allows a server, on both CLIs", async () => {
    const allowed = double.nova.quotas.metadata_items;
    double.nova.quotas.metadata_items = 2;
    try {
      for (const cli of tfClis()) {
        const ws = await workspace(double, state, {}, {}, cli);
        const metadata = '{ owner = "team-a", "cost center" = "4711", tier = "gold" }';
        const refused = await ws.tofu(["plan", "-input=false"], { TF_VAR_server_metadata: metadata });
        expect({ cli, status: refused.status }).toEqual({ cli, status: 1 });
        expect(oneLine(refused)).toContain(
          "Quota too small: server_metadata has 3 items, but the project allows a server 2 (Nova quota metadata_items, openstack quota show); raise the quota, or give fewer items.",
        );
        const fits = await ws.tofu(["plan", "-input=false"], { TF_VAR_server_metadata: '{ owner = "team-a", tier = "gold" }' });
        expect({ cli, status: fits.status, stderr: fits.stderr }).toEqual({ cli, status: 0, stderr: "" });
      }
    } finally {
      double.nova.quotas.metadata_items = allowed;
    }
    expect(await target.resources()).toEqual([]);
  });

  it("stops it at plan with a deploy key too, on both CLIs: the keypair is counted from the variable", async () => {
    // The README's laptop steps set a key; counted from the keypair resource, the quota reads
    // waited for it and ran during the apply, after about 55 resources.
    for (const cli of tfClis()) {
      const ws = await workspace(double, state, {}, { TF_VAR_run_provisioners: "false", TF_VAR_deploy_ssh_public_key: SSH_KEY }, cli);
      const cores = await ws.tofu(["plan", "-input=false"], { TF_VAR_num_kube_nodes: "5" });
      expect({ cli, status: cores.status }).toEqual({ cli, status: 1 });
      expect(oneLine(cores)).toContain("Quota too small: this deployment needs Nova quota cores = 23, but the project allows 20");
      expect(oneLine(cores)).not.toContain("will be read during apply");
    }
    expect(await target.resources()).toEqual([]);
  });

  it("counts in quota_needs exactly what the apply then uses of every quota", async () => {
    const ws = await workspace(double, state, {}, { TF_VAR_run_provisioners: "false", TF_VAR_deploy_ssh_public_key: SSH_KEY });
    const before = { nova: double.nova.usage(), cinder: double.cinder.usage(), neutron: double.neutron.usage() };
    const applied = await apply(ws);
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: "" });
    const needs = JSON.parse((await ws.tofu(["output", "-json", "quota_needs"])).stdout);
    const used = (after: Record<string, number | undefined>, start: Record<string, number | undefined>, quotas: string[]) =>
      Object.fromEntries(quotas.map((q) => [q, (after[q] ?? 0) - (start[q] ?? 0)]));
    expect(used(double.nova.usage(), before.nova, Object.keys(needs.compute))).toEqual(needs.compute);
    expect(used(double.cinder.usage(), before.cinder, Object.keys(needs.blockStorage))).toEqual(needs.blockStorage);
    expect(used(double.neutron.usage(), before.neutron, Object.keys(needs.network))).toEqual(needs.network);
    // The table in docs/quotas.md, column N = 3 (on a cloud with Octavia: the API load balancer).
    expect(needs.compute).toMatchObject({ instances: 5, cores: 15, ram: 30720, server_group_members: 3, key_pairs: 1 });
    expect(needs.network).toMatchObject({ floatingip: 3, port: 11, security_group: 5, security_group_rule: 18 });
    await destroyAll(ws);
  });

  it("reports a quota that other resources exhausted during the apply, and converges once it is raised", async () => {
    // Another deployment in the project holds a floating IP; the limit is exactly this cluster's 3
    // (bastion, master, API load balancer).
    const external = double.neutron.networks.all().find((n) => n["router:external"] === true);
    const other = double.neutron.createFloatingIp({ floating_network_id: external?.id });
    double.neutron.quotas.floatingip = 3;
    const ws = await workspace(double, state);
    const failed = await apply(ws);
    expect(failed.status).toBe(1);
    expect(oneLine(failed)).toContain("Quota exceeded for resources: ['floatingip'].");
    expect(oneLine(failed)).toMatch(/with openstack_networking_floatingip_v2\.\w+/);
    const partial = (await target.servers()).length;
    expect(partial).toBeGreaterThan(0);

    double.neutron.quotas.floatingip = 4;
    const converged = await apply(ws);
    expect({ status: converged.status, stderr: converged.stderr }).toEqual({ status: 0, stderr: "" });
    expect(converged.stdout).toMatch(/Apply complete! Resources: \d+ added, 0 changed, 0 destroyed\./);
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
    expect(replan.status).toBe(0);
    double.neutron.floatingips.delete(other.id);
    await destroyAll(ws);
  });
});

/** TF_VAR_quota_usage as npm run diff|deploy and the pipeline's plan read it before a plan. */
async function quotaUsage(ws: Workspace, env: NodeJS.ProcessEnv = {}): Promise<{ env: NodeJS.ProcessEnv; said: string }> {
  const script = path.join(__dirname, "..", "scripts", "quota-usage.js");
  const read = await runAsync("node", [script, ws.dir, ws.cli.path], { env: { ...process.env, ...ws.env, ...env } });
  expect({ status: read.status, lines: read.stderr.trim().split("\n").length }).toEqual({ status: 0, lines: 1 });
  return { env: read.stdout.trim() ? { TF_VAR_quota_usage: read.stdout.trim() } : {}, said: read.stderr.trim() };
}

describe("quotas with what the project already uses", () => {
  it("refuses a second cluster in the project at plan time, naming security groups, and creates nothing", async () => {
    const first = await workspace(double, state, { TF_VAR_deploy_domain_name: "first.example" });
    const applied = await apply(first);
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: "" });
    const resources = await target.resources();
    // The first cluster's 5 groups and the project's default: 6 of Neutron's default 10.
    for (const cli of tfClis()) {
      const second = await workspace(double, state, { TF_VAR_deploy_domain_name: "second.example" }, undefined, cli);
      const usage = await quotaUsage(second);
      expect(usage.said).toBe("kube-on-os: quotas: the plan compares what this deployment needs with what the project has free");
      const refused = await second.tofu(["plan", "-input=false"], usage.env);
      expect(refused.status).toBe(1);
      expect(oneLine(refused)).toContain(
        "Quota too small: this deployment needs Neutron quota security_group = 5, 4 free (10 allowed, 6 in use; " +
          "openstack quota show --usage); raise the quota, or deploy fewer or smaller machines.",
      );
      // Limits alone, as before, would let it through to a 409 halfway through the apply.
      const limitsOnly = await second.tofu(["plan", "-input=false"]);
      expect({ cli: cli.name, status: limitsOnly.status, stderr: limitsOnly.stderr }).toEqual({ cli: cli.name, status: 0, stderr: "" });
    }
    expect(await target.resources()).toEqual(resources);
    await destroyAll(first);
  });

  it("counts only what an update adds to what the deployment already holds", async () => {
    const ws = await workspace(double, state);
    // An application credential reads the usage as well as a password does.
    const unset = Object.fromEntries(Object.keys(double.passwordEnv()).map((k) => [k, ""]));
    const none = await quotaUsage(ws, { ...unset, ...double.applicationCredentialEnv() });
    expect(JSON.parse(String(none.env.TF_VAR_quota_usage))["compute.cores"]).toEqual({ used: 0, own: 0 });
    const applied = await apply(ws, none.env);
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: "" });
    // 3 nodes hold 15 of the 20 cores; a 4th needs 4 more of the 5 free.
    const held = await quotaUsage(ws);
    expect(held.said).toBe(
      "kube-on-os: quotas: the plan compares what this deployment needs beyond what it already holds with what the project has free",
    );
    expect(JSON.parse(String(held.env.TF_VAR_quota_usage))["compute.cores"]).toEqual({ used: 15, own: 15 });
    const replan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"], held.env);
    expect({ status: replan.status, stderr: replan.stderr }).toEqual({ status: 0, stderr: "" });
    const four = await ws.tofu(["plan", "-input=false"], { ...held.env, TF_VAR_num_kube_nodes: "4" });
    expect({ status: four.status, stderr: four.stderr }).toEqual({ status: 0, stderr: "" });
    const five = await ws.tofu(["plan", "-input=false"], { ...held.env, TF_VAR_num_kube_nodes: "5" });
    expect(five.status).toBe(1);
    expect(oneLine(five)).toContain(
      "this deployment needs Nova quota cores = 23 (8 more than the 15 it holds), 5 free (20 allowed, 15 in use; openstack quota show --usage)",
    );
    await destroyAll(ws);
  });

  it("says in one line why it could not read the usage, and the plan compares the limits alone", async () => {
    const ws = await workspace(double, state);
    const unread = await quotaUsage(ws, { OS_PASSWORD: "wrong" });
    expect(unread).toEqual({
      env: {},
      said: "kube-on-os: quotas: the project's usage could not be read (POST /identity/v3/auth/tokens answered 401); the plan compares the limits only",
    });
    // A clouds.yaml the parser refuses: the line it quotes would show the password.
    const clouds = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-clouds-")), "clouds.yaml");
    fs.writeFileSync(clouds, "clouds:\n  double:\n    auth:\n      password: s3cret: oops\n");
    const unset = Object.fromEntries(Object.keys(double.passwordEnv()).map((k) => [k, ""]));
    const broken = await quotaUsage(ws, { ...unset, OS_CLOUD: "double", OS_CLIENT_CONFIG_FILE: clouds });
    expect(broken.said).toBe(
      `kube-on-os: quotas: the project's usage could not be read (${clouds} cannot be read as YAML (BLOCK_AS_IMPLICIT_KEY)); the plan compares the limits only`,
    );
    expect(await quotaUsage(ws, { TF_VAR_check_quotas: "false" })).toEqual({ env: {}, said: "" });
    // A cloud whose catalog lists no Cinder: Nova's and Neutron's usage still count.
    const noCinder = await startOpenStackDouble({ cinderInCatalog: false });
    try {
      const partly = await quotaUsage(ws, noCinder.passwordEnv());
      expect(partly.said).toBe(
        "kube-on-os: quotas: the plan compares what this deployment needs with what the project has free " +
          "(but the limits alone where the usage could not be read: Cinder: the catalog has no volumev3 endpoint (public, RegionOne))",
      );
      const usage = JSON.parse(String(partly.env.TF_VAR_quota_usage));
      expect(Object.keys(usage).filter((key) => key.startsWith("blockStorage."))).toEqual([]);
      expect(usage["network.security_group"]).toEqual({ used: 1, own: 0 });
    } finally {
      await noCinder.close();
    }
  });
});

describe("cloud objects the variables name", () => {
  it("stops the plan at a keypair_name the project lacks, on both CLIs, and plans with one it has", async () => {
    for (const cli of tfClis()) {
      const ws = await workspace(double, state, {}, { TF_VAR_run_provisioners: "false" }, cli);
      const missing = await ws.tofu(["plan", "-input=false"], { TF_VAR_keypair_name: "ops-key" });
      expect({ cli, status: missing.status }).toEqual({ cli, status: 1 });
      expect(oneLine(missing)).toMatch(
        /Error retrieving openstack_compute_keypair_v2 ops-key: .*with data\.openstack_compute_keypair_v2\.keypair_name\[0\]/,
      );
      double.nova.keypairs.add({
        id: "ops-key",
        name: "ops-key",
        public_key: SSH_KEY,
        type: "ssh",
        fingerprint: "x",
        user_id: double.identity.user.id,
      });
      try {
        const found = await ws.tofu(["plan", "-input=false"], { TF_VAR_keypair_name: "ops-key" });
        expect({ cli, status: found.status, stderr: found.stderr }).toEqual({ cli, status: 0, stderr: "" });
      } finally {
        double.nova.keypairs.delete("ops-key");
      }
    }
    expect(await target.resources()).toEqual([]);
  });
});

describe("a server that goes to ERROR", () => {
  it("fails the apply naming the instance, keeps the scheduler's reason as its fault, and a re-apply after the fix replaces it", async () => {
    // Hard anti-affinity for 3 nodes on a cloud with 2 compute hosts: the third cannot be placed.
    double.nova.hosts = 2;
    const ws = await workspace(double, state, {}, { TF_VAR_run_provisioners: "false", TF_VAR_kube_server_group_policy: "anti-affinity" });
    const failed = await apply(ws);
    expect(failed.status).toBe(1);
    const text = oneLine(failed);
    // The provider names the instance and its state; the reason is the server's fault, which
    // `openstack server show <id> -c fault` prints (docs/quotas.md).
    expect(text).toMatch(/Error waiting for instance \([0-9a-f-]{36}\) to become ready: unexpected state 'ERROR', wanted target 'ACTIVE'/);
    expect(text).toMatch(/with openstack_compute_instance_v2\.KubeNodes_(Master|Worker)_\w+(\[\d\])?/);
    const errored = double.nova.servers.all().filter((s) => s.status === "ERROR");
    expect(errored).toHaveLength(1);
    expect(text).toContain(errored[0].id);
    expect(errored[0].fault).toMatchObject({ code: 500, message: "No valid host was found. There are not enough hosts available." });

    double.nova.hosts = 3;
    const converged = await apply(ws);
    expect({ status: converged.status, stderr: converged.stderr }).toEqual({ status: 0, stderr: "" });
    // The tainted instance is replaced; everything else was already there.
    expect(converged.stdout).toMatch(/Apply complete! Resources: \d+ added, 0 changed, 1 destroyed\./);
    const servers = await target.servers();
    expect(servers.map((s) => s.status)).toEqual(Array(5).fill("ACTIVE"));
    expect(servers.map((s) => s.id)).not.toContain(errored[0].id);
    await destroyAll(ws);
  });
});

describe("machines as a real cloud boots them", () => {
  it("boots every machine from a config drive, and gives the Salt master the id of the volume it finds behind a flavor's ephemeral disk", async () => {
    const ws = await workspace(double, state, {}, { TF_VAR_run_provisioners: "false", TF_VAR_salt_master_flavor: "m1.large.ephemeral" });
    const applied = await apply(ws);
    expect({ status: applied.status, stderr: applied.stderr }).toEqual({ status: 0, stderr: "" });
    expect(double.nova.servers.all().map((s) => s.config_drive)).toEqual(Array(5).fill("True"));
    const salt = double.nova.servers.all().find((s) => s.name === "salt.kube-on-os");
    const [attachment] = salt?.volumes_attached as { id: string; device: string }[];
    // vda is the root disk, vdb the ephemeral disk, vdc swap: the volume is not /dev/vdb.
    expect(attachment.device).toBe("/dev/vdd");
    const userData = Buffer.from(String(salt?.user_data), "base64").toString("utf8");
    expect(userData).toContain(`KOO_SALT_VOLUME_ID=${attachment.id}\\n`);
    expect(userData).not.toContain("/dev/vdb\\n");
    await destroyAll(ws);
  });
});

/** A syntactically valid ed25519 public key (Nova parses keys before it stores them). */
const SSH_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOX2EFSHSrU/B/qZqr11hcUePiMnRjHzugkCmsMDhGyW cloud-limits";
