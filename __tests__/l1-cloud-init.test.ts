/**
 * Every machine's user_data as Terraform evaluates it: each instance's user_data expression is
 * copied, with its `count`, into a built-in terraform_data resource of a scratch configuration
 * that keeps the stack's variables and locals, and `tofu apply` evaluates it — exactly the
 * expression the instance would get, with no cloud involved (the Salt volume's id, known only
 * once Cinder made it, is SALT_VOLUME_ID there). The result must pass cloud-init's
 * own schema validator, carry the scripts byte for byte, and match the committed golden files.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { escapeTerraformTemplate, renderCloudInit, SALT_DIR, TEMPLATE_DIR } from "../constructs/cloud-init";
import { synthToDir } from "./support/synth";
import { runTofuAsync } from "./support/tofu";

const GOLDEN_DIR = path.join(__dirname, "golden", "cloud-init");
/** The address Neutron gives a pool worker's port, in the scratch configuration. */
const POOL_WORKER_ADDRESS = "10.1.128.7";
/** The id Cinder gives the Salt master's volume, in the scratch configuration. */
const SALT_VOLUME_ID = "0b6f1d3e-5a7c-4e21-9f3b-2d8c6a4e1f07";

/** Evaluated user_data per machine name (workers as `k8s-worker-<n>`). */
async function evaluatedUserData(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const stackDir = await synthToDir(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-ci-src-")), env);
  const stack = JSON.parse(fs.readFileSync(path.join(stackDir, "cdk.tf.json"), "utf8"));
  const data: Record<string, unknown> = {};
  const output: Record<string, unknown> = {};
  for (const [id, instance] of Object.entries<any>(stack.resource.openstack_compute_instance_v2)) {
    const input = (instance.user_data as string)
      .replace(/openstack_blockstorage_volume_v3\.\w+\.id/g, "local.salt_volume_id")
      // A pool worker's address is the one Neutron gives its port: POOL_WORKER_ADDRESS here.
      .replace(/openstack_networking_port_v2\.\w+\[each\.key\]\.all_fixed_ips\[0\]/g, JSON.stringify(POOL_WORKER_ADDRESS));
    // The pools' workers are keyed by host name, the others counted.
    data[id] = instance.for_each ? { for_each: instance.for_each, input } : { count: instance.count ?? 1, input };
    output[id] = { value: `\${${instance.for_each ? `values(terraform_data.${id})` : `terraform_data.${id}`}[*].output}`, sensitive: true };
  }
  // The locals that read variables alone (root's password, the cluster layout): user_data uses no
  // others. A local that reads a resource goes, and so does every local that reads one that went.
  const locals: Record<string, unknown> = { ...stack.locals };
  for (let dropped = true; dropped; ) {
    dropped = false;
    for (const [name, value] of Object.entries(locals)) {
      const text = JSON.stringify(value);
      const readsGone =
        /\b(openstack_\w+|data|null_resource|terraform_data)\./.test(text) ||
        [...text.matchAll(/\blocal\.(\w+)/g)].some(([, other]) => !(other in locals) && other !== "salt_volume_id");
      if (readsGone) {
        delete locals[name];
        dropped = true;
      }
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-ci-eval-"));
  fs.writeFileSync(
    path.join(dir, "main.tf.json"),
    JSON.stringify({
      variable: stack.variable,
      locals: { ...locals, salt_volume_id: SALT_VOLUME_ID },
      resource: { terraform_data: data },
      output,
    }),
  );
  const tfVars = Object.fromEntries(Object.entries(env).filter(([key]) => key.startsWith("TF_VAR_")));
  for (const args of [
    ["init", "-input=false"],
    ["apply", "-auto-approve", "-input=false"],
  ]) {
    const result = await runTofuAsync(args, dir, tfVars);
    if (result.status !== 0) throw new Error(`tofu ${args[0]} failed:\n${result.stderr}`);
  }
  const outputs = JSON.parse((await runTofuAsync(["output", "-json"], dir)).stdout) as Record<string, { value: string[] }>;
  const byMachine: Record<string, string> = {};
  for (const { value } of Object.values(outputs)) {
    for (const userData of value) byMachine[(parseYaml(userData) as { hostname: string }).hostname] = userData;
  }
  return byMachine;
}

function validateSchema(userData: string): { status: number | null; output: string } {
  const validator = process.env.KOO_CLOUD_INIT_SCHEMA;
  if (!validator) throw new Error("KOO_CLOUD_INIT_SCHEMA is not set: run the tests with `npm test`");
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-ud-")), "user-data.yaml");
  fs.writeFileSync(file, userData);
  const result = spawnSync(validator, [file], { encoding: "utf8" });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

interface WriteFile {
  path: string;
  content: string;
  permissions: string;
}

function writeFiles(userData: string): Record<string, WriteFile> {
  const parsed = parseYaml(userData) as { write_files: WriteFile[] };
  return Object.fromEntries(parsed.write_files.map((f) => [f.path, f]));
}

const SCRIPTS: Record<string, string> = {
  "/tmp/install_script.sh": "install-salt.sh",
  "/tmp/wait-for-it.sh": "wait-for-it.sh",
  "/usr/local/sbin/kube-on-os-nat": "bastion-nat.sh",
  "/usr/local/sbin/kube-on-os-salt-volume": "salt-volume.sh",
};

describe("cloud-init user_data, as Terraform evaluates it", () => {
  let defaults: Record<string, string>;

  beforeAll(async () => {
    defaults = await evaluatedUserData({});
  });

  it("exists for every machine at the default size", () => {
    expect(Object.keys(defaults).sort()).toEqual(["bastion", "k8s-master", "k8s-worker-0", "k8s-worker-1", "salt"]);
  });

  it("passes cloud-init's own schema validator for every role", () => {
    for (const [machine, userData] of Object.entries(defaults)) {
      expect({ machine, ...validateSchema(userData) }).toEqual({
        machine,
        status: 0,
        output: expect.stringContaining("Valid cloud-config"),
      });
    }
  });

  it("names each machine by its FQDN, which is also its minion id, and knows the Salt master", () => {
    for (const [machine, userData] of Object.entries(defaults)) {
      const parsed = parseYaml(userData);
      expect(parsed).toMatchObject({ hostname: machine, fqdn: `${machine}.kube-on-os`, timezone: "Etc/UTC" });
      const files = writeFiles(userData);
      expect(files["/etc/salt/minion_id"].content).toBe(`${machine}.kube-on-os`);
      expect(files["/etc/hosts"].content).toContain("10.1.0.5 salt.kube-on-os salt\n");
      expect(files["/etc/resolv.conf"].content).toBe("nameserver 1.1.1.1\nnameserver 1.0.0.1\n");
    }
    expect(writeFiles(defaults["k8s-worker-1"])["/etc/hosts"].content).toContain("10.1.0.101 k8s-worker-1.kube-on-os k8s-worker-1\n");
  });

  it("carries every script byte for byte as in templates/cloud-init/files/", () => {
    let compared = 0;
    for (const userData of Object.values(defaults)) {
      for (const [target, file] of Object.entries(writeFiles(userData))) {
        if (!SCRIPTS[target]) continue;
        expect({ target, content: file.content }).toEqual({
          target,
          content: fs.readFileSync(path.join(TEMPLATE_DIR, "files", SCRIPTS[target]), "utf8"),
        });
        expect(file.permissions).toBe("0755");
        compared++;
      }
    }
    // install + wait-for-it on all 5 machines, NAT on the bastion, the volume on the Salt master
    expect(compared).toBe(12);
  });

  it("starts every minion with the options core.minion manages, byte for byte, so the first deploy restarts none", () => {
    const options = fs.readFileSync(path.join(SALT_DIR, "core", "files", "minion.conf"), "utf8");
    for (const [machine, userData] of Object.entries(defaults)) {
      const file = writeFiles(userData)["/etc/salt/minion.d/kube-on-os.conf"];
      expect({ machine, content: file?.content, permissions: file?.permissions }).toEqual({
        machine,
        content: options,
        permissions: "0644",
      });
    }
  });

  it("starts the Salt master with the options the salt_master state manages, byte for byte, so the first deploy does not restart it", () => {
    const options = fs.readFileSync(path.join(SALT_DIR, "salt_master", "files", "master.conf"), "utf8");
    for (const [machine, userData] of Object.entries(defaults)) {
      const file = writeFiles(userData)["/etc/salt/master.d/kube-on-os.conf"];
      expect([machine, file?.content]).toEqual([machine, machine === "salt" ? options : undefined]);
    }
  });

  it("sets up NAT on the bastion, the volume on the Salt master, and netplan on the dual-homed hosts", () => {
    expect(writeFiles(defaults.bastion)["/etc/sysctl.d/90-kube-on-os-forwarding.conf"].content).toContain("net.ipv4.ip_forward = 1");
    expect(writeFiles(defaults.bastion)["/etc/kube-on-os/bootstrap.env"].content).toContain("KOO_PRIVATE_CIDR=10.1.0.0/16\n");
    expect(parseYaml(defaults.salt).runcmd[0]).toEqual(["bash", "/usr/local/sbin/kube-on-os-salt-volume"]);
    for (const machine of ["bastion", "k8s-master"]) {
      expect(parseYaml(writeFiles(defaults[machine])["/etc/netplan/90-kube-on-os.yaml"].content)).toEqual({
        network: { version: 2, ethernets: { ens4: { dhcp4: true, "dhcp4-overrides": { "use-routes": false, "use-dns": false } } } },
      });
    }
    expect(writeFiles(defaults.salt)["/etc/netplan/90-kube-on-os.yaml"]).toBeUndefined();
  });

  it("finds the Salt volume by the serial Nova gives it, not by a device name", () => {
    const files = writeFiles(defaults.salt);
    expect(files["/etc/kube-on-os/bootstrap.env"].content).toContain(`KOO_SALT_VOLUME_ID=${SALT_VOLUME_ID}\n`);
    expect(files["/etc/kube-on-os/bootstrap.env"].content).not.toContain("/dev/vd");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-salt-volume-"));
    const script = path.join(dir, "salt-volume.sh");
    fs.writeFileSync(script, files["/usr/local/sbin/kube-on-os-salt-volume"].content);
    fs.writeFileSync(path.join(dir, "bootstrap.env"), files["/etc/kube-on-os/bootstrap.env"].content);
    // Block devices as a guest sees them: the flavor's ephemeral disk is vdb, the volume vdc.
    const byId = path.join(dir, "by-id");
    fs.mkdirSync(byId);
    for (const [node, minor] of [
      ["vdb", "0"],
      ["vdc", "1"],
    ]) {
      expect(spawnSync("mknod", [path.join(dir, node), "b", "7", minor]).status).toBe(0);
    }
    const printDevice = () =>
      spawnSync("bash", [script, "--print-device"], {
        encoding: "utf8",
        env: { ...process.env, KOO_BOOTSTRAP_ENV: path.join(dir, "bootstrap.env"), KOO_DISK_BY_ID: byId },
      });
    const otherVolume = "9d3c2b1a-0000-4e21-9f3b-2d8c6a4e1f07";
    // virtio-blk: udev's link carries the first 20 characters of the serial (VIRTIO_BLK_ID_BYTES).
    fs.symlinkSync("../vdb", path.join(byId, `virtio-${otherVolume.slice(0, 20)}`));
    fs.symlinkSync("../vdc", path.join(byId, `virtio-${SALT_VOLUME_ID.slice(0, 20)}`));
    expect(printDevice()).toMatchObject({ status: 0, stdout: `${path.join(dir, "vdc")}\n` });
    // A SCSI bus (hw_disk_bus=scsi) keeps the whole id.
    fs.rmSync(path.join(byId, `virtio-${SALT_VOLUME_ID.slice(0, 20)}`));
    fs.symlinkSync("../vdb", path.join(byId, `scsi-0QEMU_QEMU_HARDDISK_${SALT_VOLUME_ID}`));
    expect(printDevice()).toMatchObject({ status: 0, stdout: `${path.join(dir, "vdb")}\n` });
  });

  it("sets no root password unless asked to", () => {
    for (const userData of Object.values(defaults)) expect(parseYaml(userData).chpasswd).toEqual({ expire: false, users: [] });
  });

  it("matches the committed golden file of every machine", () => {
    for (const [machine, userData] of Object.entries(defaults)) {
      const golden = path.join(GOLDEN_DIR, `${machine}.yaml`);
      if (process.env.UPDATE_GOLDEN === "1") fs.writeFileSync(golden, userData);
      expect({ machine, userData }).toEqual({ machine, userData: fs.readFileSync(golden, "utf8") });
    }
  });

  it("survives adversarial values: a hash full of YAML and Terraform syntax arrives intact and valid", async () => {
    const hash = `$6$sa:lt#"q'\${x}%{y}\\$Zx/y.z`;
    const adversarial = await evaluatedUserData({
      TF_VAR_set_root_password: "true",
      TF_VAR_root_password_hash: hash,
      TF_VAR_deploy_domain_name: "a-1.example-org.test",
      TF_VAR_dns_nameservers: '["9.9.9.9"]',
    });
    for (const [machine, userData] of Object.entries(adversarial)) {
      expect({ machine, ...validateSchema(userData) }).toEqual({
        machine,
        status: 0,
        output: expect.stringContaining("Valid cloud-config"),
      });
      expect(parseYaml(userData).chpasswd.users).toEqual([{ name: "root", password: hash, type: "hash" }]);
      expect(parseYaml(userData).fqdn).toBe(`${machine}.a-1.example-org.test`);
    }
  });

  it("gives a pool's worker its name, the address Neutron gave its port, and a valid cloud-config", async () => {
    const pools = await evaluatedUserData({ TF_VAR_node_pools: "{ gpu = { count = 2 } }" });
    expect(Object.keys(pools).sort()).toEqual(["bastion", "k8s-gpu-0", "k8s-gpu-1", "k8s-master", "k8s-worker-0", "k8s-worker-1", "salt"]);
    const userData = pools["k8s-gpu-1"];
    expect(validateSchema(userData)).toEqual({ status: 0, output: expect.stringContaining("Valid cloud-config") });
    expect(parseYaml(userData)).toMatchObject({ hostname: "k8s-gpu-1", fqdn: "k8s-gpu-1.kube-on-os" });
    const files = writeFiles(userData);
    expect(files["/etc/salt/minion_id"].content).toBe("k8s-gpu-1.kube-on-os");
    expect(files["/etc/hosts"].content).toBe(
      `127.0.0.1 localhost\n${POOL_WORKER_ADDRESS} k8s-gpu-1.kube-on-os k8s-gpu-1\n10.1.0.5 salt.kube-on-os salt\n`,
    );
    // Otherwise the same bootstrap as the default pool's workers.
    expect(userData.replaceAll("k8s-gpu-1", "k8s-worker-1").replace(POOL_WORKER_ADDRESS, "10.1.0.101")).toBe(pools["k8s-worker-1"]);
  });
});

describe("cloud-init rendering", () => {
  const values = {
    hostname: "h",
    fqdn: "h.example",
    saltMasterIp: "10.1.0.5",
    resolvConf: "nameserver 9.9.9.9\n",
    etcHosts: "127.0.0.1 localhost\n",
    bootstrapEnv: "KOO_ROLE=test\n",
    rootPasswordUsers: "${TfToken[TOKEN.0]}",
  };

  it("escapes every literal ${ and %{ so Terraform passes it through", () => {
    expect(escapeTerraformTemplate('a ${b} %{c} $${d} "${e}"')).toBe('a $${b} %%{c} $$${d} "$${e}"');
    const rendered = renderCloudInit("salt-minion", values);
    const script = fs.readFileSync(path.join(TEMPLATE_DIR, "files", "install-salt.sh"), "utf8");
    expect(script).toContain("${KOO_SALT_VERSION}");
    expect(rendered).toContain("$${KOO_SALT_VERSION}");
    expect(rendered.replace(/\$\$\{/g, "").replace(/\$\{TfToken\[TOKEN\.\d+\]\}/g, "")).not.toContain("${");
  });

  it("quotes plain values as YAML scalars, whatever they contain", () => {
    const rendered = renderCloudInit("salt-minion", { ...values, fqdn: 'we: "ird" # ${x}' });
    expect(rendered).toContain('fqdn: "we: \\"ird\\" # $${x}"');
  });
});
