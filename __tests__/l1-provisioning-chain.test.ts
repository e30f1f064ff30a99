import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Testing } from "cdktf";
import { loadConfig } from "../config/load";
import { NEW_CLUSTER_CHANNEL } from "../config/parameters";
import { cleanCopy } from "../constructs/provisioning/tree-hash";
import { KubeOnOsStack } from "../constructs/stack";
import { localById, resourceById, synthStack, TerraformJson } from "./support/synth";
import { describeEachCli, initOffline, runTf } from "./support/tofu";

const ROOT = path.resolve(__dirname, "..");
const STEPS = [
  "WaitForBastion",
  "WaitForSaltMaster",
  "SyncSaltTree",
  "AcceptMinionKeys",
  "Upgrade",
  "Orchestrate",
  "RebootForUpdates",
] as const;
/** The steps that were terraform_data resources until eb9d706 (Upgrade and RebootForUpdates came later). */
const EB9D706_STEPS = STEPS.filter((id) => id !== "Upgrade" && id !== "RebootForUpdates");
/** The chain as commit eb9d706 synthesized it, before null_resource (see the fixture's "//"). */
const EB9D706: Record<string, any> = JSON.parse(
  fs.readFileSync(path.join(__dirname, "fixtures", "terraform-data-chain@eb9d706.json"), "utf8"),
).terraform_data;

/** The chain's steps are null_resources; the per-worker membership records are terraform_data. */
function typeOf(id: string): string {
  return /^(Pool)?Node(Membership|Drain)$|^MasterDrain$/.test(id) ? "terraform_data" : "null_resource";
}

function step(json: TerraformJson, id: string): Record<string, any> {
  return resourceById(json, typeOf(id), id);
}

/** `<type>.<logical id>` of a step, as references name it. */
function address(json: TerraformJson, id: string): string {
  const key = Object.keys(json.resource[typeOf(id)]).find((k) => new RegExp(`_${id}_[0-9A-F]{8}$`).test(k));
  return `${typeOf(id)}.${key}`;
}

/** Every provisioner of every step, with the step's id. */
function provisioners(json: TerraformJson): { step: string; type: string; body: any }[] {
  return [...STEPS, "NodeMembership"].flatMap((id) =>
    step(json, id).provisioner.map((p: Record<string, any>) => {
      const [type, body] = Object.entries(p)[0];
      return { step: id, type, body };
    }),
  );
}

async function synthWithTrees(saltTree: string, pillarTree: string): Promise<TerraformJson> {
  const stack = new KubeOnOsStack(Testing.app(), "kube-on-os", { config: await loadConfig({}), saltTree, pillarTree });
  return JSON.parse(Testing.synth(stack));
}

/**
 * A machine's floating IP address as the stack refers to it (constructs/floating-ips.ts): the
 * given one (`<variable>`) when set, else the one allocated at index 0. `construct` is the
 * construct's path in logical ids (Bastion, KubeNodes), `id` the allocated one's (FloatingIp,
 * MasterFloatingIp).
 */
function floatingIpAddress(construct: string, id: string, variable: string): RegExp {
  const hash = "[0-9A-F]{8}";
  return new RegExp(
    `^\\$\\{\\(local\\.${construct}_${variable}_given_${hash} == 1\\) \\? ` +
      `one\\(data\\.openstack_networking_floatingip_v2\\.${variable}\\[\\*\\]\\.address\\) : ` +
      `one\\(openstack_networking_floatingip_v2\\.${construct}_${id}_${hash}\\[\\*\\]\\.address\\)\\}$`,
  );
}

describe("SaltProvisioner", () => {
  let json: TerraformJson;
  beforeAll(async () => {
    json = await synthStack({});
  });

  it("chains seven null_resource steps, each triggered by its predecessor's id", () => {
    expect(Object.keys(json.resource.null_resource)).toHaveLength(STEPS.length);
    expect(step(json, "WaitForBastion").triggers.after).toBeUndefined();
    for (const [previous, next] of STEPS.slice(0, -1).map((id, i) => [id, STEPS[i + 1]])) {
      expect({ next, after: step(json, next).triggers.after }).toEqual({
        next,
        after: `\${one(${address(json, previous)}[*].id)}`,
      });
    }
  });

  it("exists only when run_provisioners is true, once at any node count", () => {
    for (const id of STEPS) expect(step(json, id).count).toBe("${var.run_provisioners ? 1 : 0}");
    expect(step(json, "NodeMembership").count).toBe("${var.run_provisioners ? (var.num_kube_nodes - 1) : 0}");
  });

  it("waits for the bastion's floating IP, then for cloud-init on the bastion and then on the Salt master", () => {
    expect(step(json, "WaitForBastion").depends_on).toEqual([
      expect.stringMatching(/^openstack_networking_floatingip_associate_v2\.Bastion_/),
    ]);
    const commands = (id: string) =>
      step(json, id)
        .provisioner.flatMap((p: any) => p["remote-exec"]?.inline ?? [])
        .filter((line: string) => line.includes("wait-cloud-init"));
    expect(commands("WaitForBastion")).toEqual(["bash .kube-on-os/bin/wait-cloud-init.sh 1800"]);
    expect(commands("WaitForSaltMaster")).toEqual(["bash .kube-on-os/bin/wait-cloud-init.sh 1800"]);
  });

  it("connects to the bastion directly and to the Salt master through it, with the ssh-agent and no key material", () => {
    const all = provisioners(json);
    expect(all.length).toBeGreaterThanOrEqual(10);
    for (const { step: id, body } of all) {
      const c = body.connection;
      expect({ id, type: c.type, agent: c.agent, user: c.user === "${var.deploy_user}" || c.user === "${self.input.user}" }).toEqual({
        id,
        type: "ssh",
        agent: true,
        user: true,
      });
      for (const secret of ["private_key", "password", "certificate", "bastion_private_key", "bastion_password", "bastion_certificate"]) {
        expect(c[secret]).toBeUndefined();
      }
      if (id === "WaitForBastion") {
        expect(c.host).toMatch(floatingIpAddress("Bastion", "FloatingIp", "bastion_floating_ip"));
        expect(c.bastion_host).toBeUndefined();
        expect(c.host_key).toBe("${local.bastion_host_key}");
      } else if (id !== "NodeMembership") {
        expect(c.host).toBe("${cidrhost(var.private_network_cidr, 5)}");
        expect(c.bastion_host).toMatch(floatingIpAddress("Bastion", "FloatingIp", "bastion_floating_ip"));
        expect(c.bastion_user).toBe("${var.deploy_user}");
        expect(c.host_key).toBe("${local.salt_master_host_key}");
        expect(c.bastion_host_key).toBe("${local.bastion_host_key}");
      }
    }
    expect(JSON.stringify(json)).not.toMatch(/private_key|BEGIN [A-Z ]*PRIVATE KEY/);
  });

  it("checks host keys only for the roles given in ssh_host_keys", () => {
    expect(json.locals).toMatchObject({
      bastion_host_key: '${lookup(var.ssh_host_keys, "bastion", null)}',
      salt_master_host_key: '${lookup(var.ssh_host_keys, "salt_master", null)}',
    });
  });

  it("uploads salt/ and pillar/ contents (trailing slash) and the pillar data, then installs them with sudo", () => {
    const sync = step(json, "SyncSaltTree").provisioner.map((p: any) => Object.entries(p)[0]);
    expect(sync.map(([type]: [string]) => type)).toEqual(["remote-exec", "file", "file", "file", "file", "remote-exec"]);
    // The staging directory is the deploy user's alone before the cloud credential lands in it.
    expect(sync[0][1].inline).toEqual([
      "set -eu",
      "rm -rf .kube-on-os/stage",
      "install -d -m 0700 .kube-on-os/stage",
      "mkdir -p .kube-on-os/stage/salt .kube-on-os/stage/pillar",
    ]);
    const [, salt] = sync[1];
    const [, pillar] = sync[2];
    const [, data] = sync[3];
    expect(salt).toMatchObject({ source: expect.stringMatching(/^assets\/SaltProvisioner_SaltTree_[0-9A-F]{8}\/[0-9a-f]{64}\/$/) });
    expect(salt.destination).toBe(".kube-on-os/stage/salt");
    expect(pillar).toMatchObject({ source: expect.stringMatching(/^assets\/SaltProvisioner_PillarTree_[0-9A-F]{8}\/[0-9a-f]{64}\/$/) });
    expect(pillar.destination).toBe(".kube-on-os/stage/pillar");
    expect(data).toMatchObject({ content: "${local.salt_pillar}", destination: ".kube-on-os/stage/_from_terraform.sls" });
    expect(sync[4][1]).toMatchObject({ content: "${local.cloud_pillar}", destination: ".kube-on-os/stage/_cloud.sls" });
    expect(sync[5][1].inline).toEqual(["set -eu", "sudo bash .kube-on-os/bin/install-salt-tree.sh .kube-on-os/stage"]);
  });

  it("re-runs the whole chain when provisioners/ changes, since steps 1 and 2 upload it", () => {
    const scripts = cleanCopy(path.join(ROOT, "provisioners"));
    expect(step(json, "WaitForBastion").triggers.scripts).toBe(scripts.hash);
    for (const id of ["WaitForBastion", "WaitForSaltMaster"]) {
      const upload = step(json, id).provisioner.find((p: any) => p.file)?.file;
      expect(upload).toMatchObject({ source: expect.stringMatching(new RegExp(`/${scripts.hash}/$`)), destination: ".kube-on-os/bin" });
    }
  });

  it("triggers the sync on content hashes of salt/, pillar/ and the pillar data, and the cloud pillar's non-secret values", () => {
    expect(step(json, "SyncSaltTree").triggers).toEqual({
      after: `\${one(${address(json, "WaitForSaltMaster")}[*].id)}`,
      salt_tree: cleanCopy(path.join(ROOT, "salt")).hash,
      pillar_tree: cleanCopy(path.join(ROOT, "pillar")).hash,
      pillar_data: "${sha256(local.salt_pillar)}",
      // A hash of the settings and the credential's id: a secret cannot be a trigger the plan shows.
      cloud_pillar: "${local.cloud_pillar_version}",
    });
  });

  it("accepts exactly the minion ids of every machine, never all keys", () => {
    const accept = step(json, "AcceptMinionKeys");
    const [command] = accept.provisioner[0]["remote-exec"].inline.slice(1);
    expect(command).toMatch(/^\$\{format\("sudo bash \.kube-on-os\/bin\/accept-minion-keys\.sh --timeout %d %s", 900, join\(" ", /);
    expect(command).not.toMatch(/-A\b|--accept-all/);
    // null_resource triggers are strings: the lists are JSON-encoded.
    // The cluster layout's list: known at plan time, before any machine exists.
    expect(accept.triggers.minions).toBe("${jsonencode(local.salt_minion_ids)}");
    // A re-created machine presents a new key.
    expect(accept.triggers.machines).toMatch(
      /^\$\{jsonencode\(concat\(.*, local\.KubeNodes_default_pool_worker_ids_[0-9A-F]{8}, local\.WorkerPools_worker_ids_[0-9A-F]{8}\)\)\}$/,
    );
    // The workers in the layout's order, as salt_minion_ids lists them, by index or name: a
    // refresh-only plan may lack a server deleted out of band, whose id is then null.
    expect(localById(json, "KubeNodes_default_pool_worker_ids")[1]).toMatch(
      /^\$\{\[for i in range\(.+\) : try\(openstack_compute_instance_v2\.KubeNodes_Worker_[0-9A-F]{8}\[i\]\.id, null\)\]\}$/,
    );
    expect(localById(json, "WorkerPools_worker_ids")[1]).toMatch(
      /^\$\{\[for node in local\.kube_pool_nodes : try\(openstack_compute_instance_v2\.WorkerPools_Worker_[0-9A-F]{8}\[node\.host\]\.id, null\)\]\}$/,
    );
  });

  it("rolls microk8s_channel to the nodes that run an older one before orch.deploy, and shows the channel in the plan", () => {
    const upgrade = step(json, "Upgrade");
    // Unset, upgrade.sh gets "" and keeps the nodes' channel (L5 chain-over-SSH runs both on both CLIs).
    expect(upgrade.provisioner.map((p: any) => p["remote-exec"].inline)).toEqual([
      [
        "set -eu",
        `\${format("sudo bash .kube-on-os/bin/upgrade.sh %s '%s'", format("%s.%s", "k8s-master", var.deploy_domain_name), (var.microk8s_channel == null) ? "" : var.microk8s_channel)}`,
      ],
    ]);
    expect(upgrade.triggers.channel).toBe(
      `\${(var.microk8s_channel == null) ? "unset: every node keeps the channel the cluster's nodes track (a new cluster installs ${NEW_CLUSTER_CHANNEL})" : format("%s: the nodes below it roll up one minor at a time, one node at a time", var.microk8s_channel)}`,
    );
    expect(step(json, "Orchestrate").triggers.after).toBe(`\${one(${address(json, "Upgrade")}[*].id)}`);
  });

  it("after orch.deploy, reboots the nodes whose updates need it when reboot_for_updates is true, and names them otherwise", () => {
    const reboot = step(json, "RebootForUpdates");
    expect(reboot.provisioner.map((p: any) => p["remote-exec"].inline)).toEqual([
      [
        "set -eu",
        '${format("sudo bash .kube-on-os/bin/reboot.sh %s %s", tostring(var.reboot_for_updates), join(" ", local.kube_node_ids))}',
      ],
    ]);
    // Turning it on reboots what needs it without another orchestration.
    expect(reboot.triggers.roll).toBe("${tostring(var.reboot_for_updates)}");
  });

  it("sets root's console password through a directory only the deploy user can enter, then orchestrates", () => {
    const [mkdir, file, set, orchestrate] = step(json, "Orchestrate").provisioner.map((p: any) => Object.entries(p)[0]);
    expect(mkdir).toEqual(["remote-exec", expect.objectContaining({ inline: ["set -eu", "install -d -m 0700 .kube-on-os/secrets"] })]);
    expect(file).toEqual([
      "file",
      expect.objectContaining({
        content:
          '${var.set_root_password && var.root_password != null ? format("plaintext\\n%s", var.root_password) : var.set_root_password && var.root_password_hash != null ? format("hash\\n%s", var.root_password_hash) : ""}',
        destination: ".kube-on-os/secrets/root-password",
      }),
    ]);
    // A changed root_password_hash sets it again on running machines, whose cloud-init ran once.
    expect(step(json, "Orchestrate").triggers.root_password_hash).toBe(
      '${var.set_root_password && var.root_password_hash != null ? nonsensitive(sha256(var.root_password_hash == null ? "" : var.root_password_hash)) : ""}',
    );
    expect(set[1].inline).toEqual([
      "set -eu",
      '${format("sudo bash .kube-on-os/bin/set-root-password.sh .kube-on-os/secrets/root-password %s", join(" ", local.salt_minion_ids))}',
    ]);
    expect(orchestrate[1].inline).toEqual(["set -eu", "sudo bash .kube-on-os/bin/orchestrate.sh orch.deploy"]);
  });

  it("removes a departed worker from the cluster before its machine goes, and never blocks a destroy", () => {
    const membership = step(json, "NodeMembership");
    // A terraform_data, whose input is updated in place: see the comment in the construct.
    const chainData = Object.keys(json.resource.terraform_data).filter((key) => key.startsWith("SaltProvisioner_"));
    expect(chainData.filter((key) => key.includes("Membership"))).toEqual([
      address(json, "NodeMembership").split(".")[1],
      address(json, "PoolNodeMembership").split(".")[1],
    ]);
    expect(membership.depends_on).toContain(address(json, "Orchestrate"));
    expect(membership.input).toMatchObject({
      node_id: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.KubeNodes_Worker_[0-9A-F]{8}\[count\.index\]\.name\}$/),
      address: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.KubeNodes_Worker_[0-9A-F]{8}\[count\.index\]\.access_ip_v4\}$/),
      master_id: '${format("%s.%s", "k8s-master", var.deploy_domain_name)}',
    });
    const [{ "remote-exec": destroy }] = membership.provisioner;
    expect(destroy).toMatchObject({ when: "destroy", on_failure: "continue" });
    expect(destroy.inline).toEqual([
      "set -eu",
      "sudo bash .kube-on-os/bin/remove-node.sh ${self.input.master_id} ${self.input.node_id} ${self.input.address}",
    ]);
    // The pools' workers get the same record, keyed by host name as their machines are.
    const poolMembership = step(json, "PoolNodeMembership");
    expect(poolMembership.for_each).toBe("${var.run_provisioners ? local.kube_pool_nodes_by_host : {}}");
    expect(poolMembership.input).toMatchObject({
      node_id: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.WorkerPools_Worker_[0-9A-F]{8}\[each\.key\]\.name\}$/),
      address: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.WorkerPools_Worker_[0-9A-F]{8}\[each\.key\]\.access_ip_v4\}$/),
    });
    expect(poolMembership.provisioner).toEqual(membership.provisioner);
    expect(poolMembership.depends_on).toEqual(membership.depends_on);
  });

  it("drains a Kubernetes node before its machine is replaced: a record per node that the machine's replacement replaces", () => {
    const [master, workers, pools] = ["MasterDrain", "NodeDrain", "PoolNodeDrain"].map((id) => step(json, id));
    const fqdn = '${format("%s.%s", "k8s-master", var.deploy_domain_name)}';
    // Its machine's id: a new machine (-replace, npm run roll) replaces the record, whose destroy
    // comes first, since the record refers to the machine.
    expect(master.triggers_replace).toEqual({
      machine: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.KubeNodes_Master_[0-9A-F]{8}\.id\}$/),
    });
    expect(workers.triggers_replace).toEqual({
      machine: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.KubeNodes_Worker_[0-9A-F]{8}\[count\.index\]\.id\}$/),
    });
    expect(pools.triggers_replace).toEqual({
      machine: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.WorkerPools_Worker_[0-9A-F]{8}\[each\.key\]\.id\}$/),
    });
    expect([master.count, workers.count, pools.for_each]).toEqual([
      "${var.run_provisioners ? 1 : 0}",
      "${var.run_provisioners ? (var.num_kube_nodes - 1) : 0}",
      "${var.run_provisioners ? local.kube_pool_nodes_by_host : {}}",
    ]);
    // The master drains the workers; the next voter drains the master (a master alone, itself).
    expect(workers.input.operator_id).toBe(fqdn);
    expect(master.input).toMatchObject({
      node_id: expect.stringMatching(/^\$\{openstack_compute_instance_v2\.KubeNodes_Master_[0-9A-F]{8}\.name\}$/),
      address: "${cidrhost(var.private_network_cidr, 10)}",
      operator_id: `\${(length(local.kube_control_plane) > 1) ? element(local.kube_control_plane, 1) : ${fqdn.slice(2, -1)}}`,
    });
    const membership = step(json, "NodeMembership");
    // A scale-down drains a worker before its NodeMembership record removes it.
    expect(master.depends_on).toEqual(membership.depends_on);
    expect(workers.depends_on).toEqual([...membership.depends_on, address(json, "NodeMembership")]);
    expect(pools.depends_on).toEqual([...membership.depends_on, address(json, "PoolNodeMembership")]);
    for (const drain of [master, workers, pools]) {
      const [{ "remote-exec": destroy }] = drain.provisioner;
      expect(destroy).toEqual({
        ...membership.provisioner[0]["remote-exec"],
        inline: [
          "set -eu",
          "sudo bash .kube-on-os/bin/drain-node.sh ${self.input.operator_id} ${self.input.node_id} ${self.input.address}",
        ],
      });
    }
  });

  it("writes the pillar with yamlencode() from Terraform values, in the shape of _from_terraform.sls.example", () => {
    // The data-only renderer line first (pillar.ts), then the data, which salt_preview shows too.
    expect(json.locals.salt_pillar).toBe('${join("\\n", ["#!yaml", yamlencode(local.salt_pillar_data)])}');
    const data = json.locals.salt_pillar_data;
    expect(Object.keys(data).sort()).toEqual(["core", "microk8s", "mine_functions", "network", "users"]);
    expect(data.mine_functions).toEqual({ "network.ip_addrs": { cidr: "${var.private_network_cidr}" } });
    expect(Object.keys(data.network).sort()).toEqual(["private_cidr", "public_cidr"]);
    expect(Object.keys(data.core)).toEqual(["nameservers"]);
    for (const key of ["master", "allowed_csr_ip", "pod_cidr", "service_cidr", "nodes", "control_plane"]) {
      expect(data.microk8s).toHaveProperty(key);
    }
    expect(data.microk8s.allowed_csr_ip).toMatch(floatingIpAddress("KubeNodes", "MasterFloatingIp", "master_floating_ip"));
    expect(json.output.salt_preview.value.pillar).toBe("${local.salt_pillar_data}");
  });

  describe("upgrading a deployment made before null_resource (eb9d706)", () => {
    it("keeps every step's address but for its type, and forgets the old terraform_data steps without destroying them", () => {
      const steps = EB9D706_STEPS.map((id) => address(json, id).split(".")[1]);
      expect(Object.keys(EB9D706).sort()).toEqual([...steps, address(json, "NodeMembership").split(".")[1]].sort());
      expect(json.removed).toEqual(steps.map((key) => ({ from: `terraform_data.${key}`, lifecycle: { destroy: false } })));
    });

    it("leaves NodeMembership as eb9d706 made it, but for the step it waits for, so the upgrade never replaces it", () => {
      const membership = structuredClone(step(json, "NodeMembership"));
      membership.depends_on = membership.depends_on.map((dependency: string) => dependency.replace(/^null_resource\./, "terraform_data."));
      // The master's id now comes from the cluster layout, as format(): the same value, so the
      // record's input does not change (l5-chain-over-ssh.test.ts applies the old stack, then today's).
      membership.input.master_id = "k8s-master.${var.deploy_domain_name}";
      // The bastion's address now chooses between its allocated floating IP and a given one
      // (bastion_floating_ip): the same value while none is given.
      expect(membership.input.bastion_host).toMatch(floatingIpAddress("Bastion", "FloatingIp", "bastion_floating_ip"));
      membership.input.bastion_host = "${openstack_networking_floatingip_v2.Bastion_FloatingIp_8C4B8B22.address}";
      expect(membership).toEqual(EB9D706[address(json, "NodeMembership").split(".")[1]]);
    });
  });

  describe("when a file under salt/ changes", () => {
    let before: TerraformJson;
    let after: TerraformJson;
    beforeAll(async () => {
      const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-trees-"));
      fs.cpSync(path.join(ROOT, "salt"), path.join(scratch, "salt"), { recursive: true });
      before = await synthWithTrees(path.join(scratch, "salt"), path.join(ROOT, "pillar"));
      fs.appendFileSync(path.join(scratch, "salt", "core", "motd.sls"), "\n# edited\n");
      after = await synthWithTrees(path.join(scratch, "salt"), path.join(ROOT, "pillar"));
      fs.rmSync(scratch, { recursive: true, force: true });
    });

    it("changes the sync's salt_tree trigger and nothing else in the configuration", () => {
      const changed: string[] = [];
      for (const [type, resources] of Object.entries(after.resource)) {
        for (const [name, resource] of Object.entries(resources)) {
          const old = before.resource[type][name];
          const strip = (r: any) =>
            JSON.stringify({ ...r, provisioner: undefined, triggers: r.triggers && { ...r.triggers, salt_tree: 0 } });
          if (JSON.stringify(old) !== JSON.stringify(resource)) changed.push(`${type}.${name}`);
          if (strip(old) !== strip(resource) && !name.includes("SyncSaltTree")) changed.push(`unexpected: ${type}.${name}`);
        }
      }
      expect(changed).toEqual([address(after, "SyncSaltTree")]);
      expect(step(after, "SyncSaltTree").triggers.salt_tree).not.toBe(step(before, "SyncSaltTree").triggers.salt_tree);
    });
  });
});

describe("cleanCopy", () => {
  it("hashes names as well as contents, and leaves build debris out of the hash and the copy", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-tree-"));
    fs.mkdirSync(path.join(dir, "core"));
    fs.writeFileSync(path.join(dir, "core", "a.sls"), "a: 1\n");
    const first = cleanCopy(dir);
    fs.mkdirSync(path.join(dir, "core", "__pycache__"));
    fs.writeFileSync(path.join(dir, "core", "__pycache__", "x.pyc"), "junk");
    expect(cleanCopy(dir).hash).toBe(first.hash);
    expect(fs.readdirSync(path.join(cleanCopy(dir).copy, "core"))).toEqual(["a.sls"]);
    fs.renameSync(path.join(dir, "core", "a.sls"), path.join(dir, "core", "b.sls"));
    expect(cleanCopy(dir).hash).not.toBe(first.hash);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a path that is not a directory, naming the prop", async () => {
    await expect(synthWithTrees(path.join(ROOT, "README.md"), path.join(ROOT, "pillar"))).rejects.toThrow(
      /SaltProvisioner: saltTree must be a directory \(got ".*README\.md"\)/,
    );
  });
});

describeEachCli("the stack's removed blocks, on an existing terraform_data chain", (cli) => {
  // The steps at eb9d706's addresses (checked above) as terraform_data, each with a destroy-time
  // provisioner that leaves a mark; then the same names as null_resources with the stack's own
  // `removed` blocks.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-removed-${cli.name}-`));
  const marks = path.join(dir, "destroyed");
  let stack: TerraformJson;
  let steps: string[];

  function tf(args: string[]) {
    const result = runTf(cli, args, dir);
    if (result.status !== 0 && !args.includes("-detailed-exitcode")) throw new Error(`${cli.name} ${args[0]} failed:\n${result.stderr}`);
    return result;
  }

  beforeAll(async () => {
    stack = await synthStack({});
    steps = (stack.removed ?? []).map((block: { from: string }) => block.from.split(".")[1]);
    expect(steps).toHaveLength(EB9D706_STEPS.length);
    fs.mkdirSync(marks);
    const old = steps.map((key) => [
      key,
      {
        count: 1,
        triggers_replace: { step: key },
        provisioner: [{ "local-exec": { when: "destroy", command: `touch ${path.join(marks, key)}` } }],
      },
    ]);
    fs.writeFileSync(path.join(dir, "main.tf.json"), JSON.stringify({ resource: { terraform_data: Object.fromEntries(old) } }));
    initOffline(dir, cli);
    tf(["apply", "-auto-approve", "-input=false"]);
  });

  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("accepts them in JSON syntax, forgets the five steps and creates the null_resources, destroying nothing", () => {
    fs.writeFileSync(
      path.join(dir, "main.tf.json"),
      JSON.stringify({
        terraform: { required_providers: { null: stack.terraform.required_providers.null } },
        provider: { null: stack.provider.null },
        resource: { null_resource: Object.fromEntries(steps.map((key) => [key, { count: 1, triggers: { step: key } }])) },
        removed: stack.removed,
      }),
    );
    initOffline(dir, cli);
    expect(JSON.parse(tf(["validate", "-json"]).stdout)).toMatchObject({ valid: true, error_count: 0 });
    tf(["plan", "-input=false", "-out=plan.cache"]);
    const plan = JSON.parse(tf(["show", "-json", "plan.cache"]).stdout);
    expect(plan.resource_changes.map((c: any) => `${c.address} ${c.change.actions.join("+")}`).sort()).toEqual(
      [...steps.map((key) => `terraform_data.${key}[0] forget`), ...steps.map((key) => `null_resource.${key}[0] create`)].sort(),
    );
    tf(["apply", "-input=false", "plan.cache"]);
    expect(fs.readdirSync(marks)).toEqual([]);
    expect(tf(["plan", "-input=false", "-detailed-exitcode"]).status).toBe(0);
  });
});
