/**
 * L5 for the provisioning chain: real OpenTofu applies the synthesized stack against the
 * OpenStack API double, and the chain's provisioners log in over real SSH. OpenSSH's sshd runs
 * in a network namespace of the test's own (__tests__/doubles/ssh-hosts), where the double's floating IPs and
 * the private network are local: the bastion is reached at its floating IP, the Salt master at
 * 10.1.0.5 only through the bastion hop. Authentication is an ssh-agent; host keys are checked.
 * The real salt/ and pillar/ trees are uploaded and the real provisioners/ scripts run with real
 * sudo. Only the programs on the "hosts" are fakes: salt, salt-key, salt-run, cloud-init and
 * hostname (__tests__/doubles/salt-cli), replaying output captured from Salt 3007.
 *
 * The deployment rehearsal (l5-rehearsal.test.ts) runs the same chain on real hosts with real Salt
 * and checks the trees installed, the keys accepted, the root password and the state there. This
 * suite keeps what the rehearsal cannot yet: checked host keys (the rehearsal's hosts make their
 * own at boot), the exact lines docs/provisioning.md shows, a failed state and the next apply
 * converging, and the upgrade from eb9d706's chain.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CHAIN_STEPS } from "../constructs/provisioning/chain";
import { cleanCopy } from "../constructs/provisioning/tree-hash";
import { OpenStackDouble, startOpenStackDouble, WIKI_IMAGE } from "./doubles/openstack/server";
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { SshHosts, startSshHosts } from "./doubles/ssh-hosts/server";
import { synthToDir } from "./support/synth";
import { RunResult, runTofuAsync } from "./support/tofu";
import { ADDED_SINCE_A4E49BC, API_LOAD_BALANCER, CLOUD_INTEGRATION, planOf, plannedChanges, taggingOf } from "./support/upgrade";

const ROOT = path.resolve(__dirname, "..");
const DOMAIN = "lab.example";
const id = (host: string) => `${host}.${DOMAIN}`;
const [BASTION, SALT, MASTER, WORKER_0, WORKER_1, WORKER_2] = [
  "bastion",
  "salt",
  "k8s-master",
  "k8s-worker-0",
  "k8s-worker-1",
  "k8s-worker-2",
].map(id);
const EXPECTED_MINIONS = [SALT, BASTION, MASTER, WORKER_0, WORKER_1];
const INTRUDER = id("intruder");
// RFC 2544's benchmarking range: never on the internet, and a /24 of its own for each process.
const EXTERNAL_CIDR = `198.18.${process.pid % 256}.0/24`;
const PRIVATE_CIDR = "10.1.0.0/16";
const FAKES = path.join(__dirname, "doubles", "salt-cli");
const FIXTURES = path.join(__dirname, "l5-provisioners", "fixtures");
const PROGRAMS: Record<string, string> = {
  salt: "fake_salt.py",
  "salt-key": "fake_salt_key.py",
  "salt-run": "fake_salt_run.py",
  "salt-call": "fake_salt_call.py",
  "cloud-init": "fake_cloud_init.py",
  hostname: "fake_hostname.py",
};
const STEPS = CHAIN_STEPS;
/** The steps of the chains before the Upgrade and RebootForUpdates steps (eb9d706's, a4e49bc's). */
const OLD_STEPS = STEPS.filter((step) => step !== "Upgrade" && step !== "RebootForUpdates");
const ROOT_PASSWORD = "l5 console password 7c1d";
/** A drain record per Kubernetes node of 3 (constructs/provisioning/node-drain.ts), new to an older deployment: created, running nothing. */
const DRAIN_RECORDS = ["terraform_data.MasterDrain[0] create", "terraform_data.NodeDrain[0] create", "terraform_data.NodeDrain[1] create"];

/** What the hosts share with the test: the fakes' state and call log, the Salt and pillar roots. */
class HostFiles {
  readonly root = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-hosts-"));
  readonly fakes = path.join(this.root, "fakes");
  readonly bin = path.join(this.root, "bin");
  readonly saltRoot = path.join(this.root, "srv", "salt");
  readonly pillarRoot = path.join(this.root, "srv", "pillar");

  constructor() {
    fs.chmodSync(this.root, 0o755);
    fs.mkdirSync(this.bin);
    for (const [name, script] of Object.entries(PROGRAMS)) fs.copyFileSync(path.join(FAKES, script), path.join(this.bin, name));
    fs.copyFileSync(path.join(FAKES, "fakestate.py"), path.join(this.bin, "fakestate.py"));
    for (const name of fs.readdirSync(this.bin)) fs.chmodSync(path.join(this.bin, name), 0o755);
    // The deploy user (cloud-init, hostname) and root (under sudo) both write here.
    fs.mkdirSync(this.fakes, { mode: 0o777 });
    fs.chmodSync(this.fakes, 0o777);
    for (const file of ["state.json", "state.lock", "calls.jsonl", "bus.txt", "state-event.pids"]) {
      fs.writeFileSync(path.join(this.fakes, file), file === "state.json" ? "{}" : "");
      fs.chmodSync(path.join(this.fakes, file), 0o666);
    }
    for (const file of fs.readdirSync(FIXTURES)) fs.copyFileSync(path.join(FIXTURES, file), path.join(this.fakes, file));
    // The Salt master's volume is mounted at the salt root; the pillar root is made by the sync.
    fs.mkdirSync(this.saltRoot, { recursive: true });
  }

  get env(): Record<string, string> {
    return {
      PATH: `${this.bin}:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin`,
      FAKE_SALT_STATE: path.join(this.fakes, "state.json"),
      FAKE_SALT_LOG: path.join(this.fakes, "calls.jsonl"),
      KOO_SALT_ROOT: this.saltRoot,
      KOO_PILLAR_ROOT: this.pillarRoot,
      KOO_MACHINE_LEDGER: path.join(this.fakes, "machines"),
    };
  }

  state(): any {
    return JSON.parse(fs.readFileSync(this.env.FAKE_SALT_STATE, "utf8"));
  }

  update(changes: Record<string, unknown>): void {
    fs.writeFileSync(this.env.FAKE_SALT_STATE, JSON.stringify({ ...this.state(), ...changes }));
  }

  /** Every call the fakes got, as argv lists with the program first. */
  calls(): string[][] {
    return fs
      .readFileSync(this.env.FAKE_SALT_LOG, "utf8")
      .split("\n")
      .filter(Boolean)
      .map((line) => JSON.parse(line));
  }

  replay(outcome: "succeeded" | "failed"): void {
    this.update({
      state_orchestrate: {
        events_file: path.join(this.fakes, `state-event-${outcome}.txt`),
        stdout_file: path.join(this.fakes, `orchestrate-${outcome}.out`),
        exit: outcome === "succeeded" ? 0 : 1,
      },
    });
  }

  /**
   * A new cluster, with a Salt master of its own: every minion's key is waiting from the start,
   * no machine is on record yet, and the orchestration succeeds.
   */
  newCluster(): void {
    fs.rmSync(this.env.KOO_MACHINE_LEDGER, { force: true });
    this.update({
      keys: { minions: [], minions_pre: [...EXPECTED_MINIONS].sort(), minions_rejected: [], minions_denied: [] },
      arrivals: {},
    });
    this.replay("succeeded");
  }

  close(): void {
    fs.rmSync(this.root, { recursive: true, force: true });
  }
}

let double: OpenStackDouble;
let stateServer: StateServer;
let files: HostFiles;
let hosts: SshHosts;
let tofuEnv: NodeJS.ProcessEnv;
let synthEnv: NodeJS.ProcessEnv;
let scratch: string;

type Tofu = (args: string[], extra?: NodeJS.ProcessEnv) => Promise<RunResult>;

/**
 * The stack synthesized into a fresh directory (with `saltTree` instead of salt/), initialized
 * against the state `stateName`; `rewrite` may change its JSON first.
 */
async function workspace(saltTree?: string, stateName = "l5", rewrite?: (json: any) => any): Promise<Tofu> {
  const dir = await synthToDir(fs.mkdtempSync(path.join(scratch, "synth-")), synthEnv, { saltTree });
  if (rewrite) {
    const file = path.join(dir, "cdk.tf.json");
    fs.writeFileSync(file, JSON.stringify(rewrite(JSON.parse(fs.readFileSync(file, "utf8"))), null, 2));
  }
  const tofu = async (args: string[], extra: NodeJS.ProcessEnv = {}) => {
    const result = await runTofuAsync(args, dir, { ...tofuEnv, ...stateServer.backendEnv(stateName), ...extra });
    return result;
  };
  const init = await tofu(["init", "-input=false"]);
  if (init.status !== 0) throw new Error(`tofu init failed:\n${init.stderr}`);
  return tofu;
}

/** A copy of salt/ with `line` appended to core/motd.sls: an operator's edit of one SLS file. */
function editedSaltTree(line: string): string {
  const tree = fs.mkdtempSync(path.join(scratch, "salt-"));
  fs.cpSync(path.join(ROOT, "salt"), tree, { recursive: true });
  fs.appendFileSync(path.join(tree, "core", "motd.sls"), `\n${line}\n`);
  return tree;
}

/** The content hashes of salt/, pillar/ and provisioners/ that a stack's chain steps name. */
function treeHashes(steps: any[]): Record<"salt_tree" | "pillar_tree" | "scripts", string> {
  const hash = (key: string) => steps.find((step) => step.triggers?.[key]).triggers[key];
  return { salt_tree: hash("salt_tree"), pillar_tree: hash("pillar_tree"), scripts: hash("scripts") };
}

/**
 * A committed fixture with today's content hashes of salt/, pillar/ and provisioners/ (from
 * `json`), in its triggers and asset paths: for placeholders, or for the hashes of the trees of
 * the version that synthesized it (fixtures/upgrade/).
 */
function fixtureWithTodaysHashes(json: any, fixture: string): any {
  const today = treeHashes(Object.values<any>(json.resource.null_resource));
  const placeholders: Record<string, string> = {
    "<sha256 of salt/>": today.salt_tree,
    "<sha256 of pillar/>": today.pillar_tree,
    "<sha256 of provisioners/>": today.scripts,
  };
  let text = fs.readFileSync(path.join(__dirname, "fixtures", fixture), "utf8");
  text = text.replace(/<sha256 of [a-z]+\/>/g, (placeholder) => placeholders[placeholder]);
  const steps = Object.values<any>(JSON.parse(text).resource?.null_resource ?? {});
  if (steps.some((step) => step.triggers?.salt_tree)) {
    const theirs = treeHashes(steps);
    for (const tree of ["salt_tree", "pillar_tree", "scripts"] as const) text = text.replaceAll(theirs[tree], today[tree]);
  }
  return JSON.parse(text);
}

/**
 * The stack as commit eb9d706 synthesized it, from today's: the chain's steps as they were then
 * (terraform_data, the committed fixture, with today's content hashes and asset paths filled in),
 * without hashicorp/null and the `removed` blocks. Everything else is today's, so that upgrading
 * from it changes the chain only; __tests__/l1-provisioning-chain.test.ts checks that the fixture's
 * addresses and NodeMembership are today's but for the types.
 */
function asOfEb9d706(json: any): any {
  const old = structuredClone(json);
  old.resource.terraform_data = fixtureWithTodaysHashes(json, "terraform-data-chain@eb9d706.json").terraform_data;
  delete old.resource.null_resource;
  // The control plane's floor came later too (a terraform_data, left out with the others above).
  for (const instance of Object.values<any>(old.resource.openstack_compute_instance_v2)) delete instance.lifecycle?.precondition;
  // And so did the count of the bastion's and the master's floating IPs (bastion_floating_ip,
  // master_floating_ip): their instance 0 was the resource itself, which today's moves.
  const floatingIps = (moved: { from: string }) => moved.from.startsWith("openstack_networking_floatingip_v2.");
  for (const moved of (old.moved as { from: string }[]).filter(floatingIps)) {
    const [type, name] = moved.from.split(".");
    delete old.resource[type][name].count;
  }
  old.moved = (old.moved as { from: string }[]).filter((moved) => !floatingIps(moved));
  delete old.removed;
  delete old.provider.null;
  delete old.terraform.required_providers.null;
  return old;
}

/**
 * The whole stack as commit a4e49bc synthesized it (the upgrade matrix's fixture), before the
 * cluster layout module: its resources, locals and outputs, with today's variables (this test's
 * TF_VAR_ values), backend and content hashes.
 */
function asOfA4e49bc(json: any): any {
  // base_image was an ID then, and its default the wiki's: the machines boot from it as is.
  const variable = { ...json.variable, base_image: { ...json.variable.base_image, default: WIKI_IMAGE.id } };
  return { ...fixtureWithTodaysHashes(json, "upgrade/a4e49bc.json"), "//": json["//"], terraform: json.terraform, variable };
}

/** The provisioners' output lines: "<step>: <line>" (Terraform prefixes the resource address). */
function chainOutput(stdout: string): string[] {
  return [
    ...stdout.matchAll(/^(?:null_resource|terraform_data)\.SaltProvisioner_([A-Za-z]+)_[0-9A-F]{8}\[(\d+)\] \((?:remote-exec)\): (.*)$/gm),
  ].map(([, step, index, line]) => `${/^Node(Membership|Drain)$/.test(step) ? `${step}[${index}]` : step}: ${line.trim()}`);
}

/** The lines the project's scripts print (Terraform's own connection lines left out). */
function scriptLines(stdout: string): string[] {
  const terraform =
    /: (Connecting to remote host via SSH\.\.\.|Host: |User: |Password: |Private key: |Certificate: |SSH Agent: |Checking Host Key: |Target Platform: |Using configured bastion host\.\.\.|Connected!|Bastion )/;
  return chainOutput(stdout).filter((line) => !terraform.test(line));
}

/** The steps that ran, in order of their first line. */
function stepsRun(stdout: string): string[] {
  return [...new Set(chainOutput(stdout).map((line) => line.split(":")[0]))];
}

/** Resource addresses of the plan's changes that are not no-ops, with their actions. */

// What microk8s.vacate_node returns for a node drained in 4 s, and microk8s leave prints on a
// worker (scripts/wrappers/leave.py).
const drained = (node: string) => ({ outcome: "drained", node, member: null, seconds: 4, reason: null });
const LEFT = "Configuring services.\nGenerating new cluster certificates.\nWaiting for node to start.";

// GitLab's shared runners are unprivileged containers without network namespaces: the
// pipeline's test job sets KOO_SKIP_NAMESPACE_TESTS=1 (jest reports the suite as skipped).
// .ci/run, and a privileged runner, run it.
const describeWithNamespaces = process.env.KOO_SKIP_NAMESPACE_TESTS === "1" ? describe.skip : describe;

describeWithNamespaces("L5: the provisioning chain over SSH through the bastion", () => {
  beforeAll(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-l5-"));
    double = await startOpenStackDouble({ externalNetwork: { name: "vlan1066", cidr: EXTERNAL_CIDR }, settled: true });
    stateServer = await startStateServer({ username: "gitlab-ci-token", password: "state-password-l5" });
    files = new HostFiles();
    hosts = await startSshHosts({ publicCidrs: [EXTERNAL_CIDR], privateCidrs: [PRIVATE_CIDR], env: files.env });
    files.update({
      hostname: SALT,
      hostname_by_address: { "10.1.0.5": SALT, [EXTERNAL_CIDR.replace(/0\/24$/, "*")]: BASTION },
      cloud_init: { exit: 0, sleep: 1 },
      // Three keys are there at the first poll (and a stranger's); the workers' arrive at the second.
      keys: { minions: [], minions_pre: [SALT, BASTION, MASTER, INTRUDER], minions_rejected: [], minions_denied: [] },
      arrivals: { "2": { minions_pre: [WORKER_0, WORKER_1] } },
      ping: Object.fromEntries([...EXPECTED_MINIONS, WORKER_2].map((minion) => [minion, 1])),
      returns: {
        // remove-node.sh's three calls, answered as salt/_modules/microk8s returns them (_scale.vacate
        // per departing address, microk8s leave's output on a worker, forget_node) for departing nodes
        // that hold no dqlite vote. NB: in the real layout the first three nodes are the voters, so
        // at num_kube_nodes = 3 vacate_node refuses k8s-worker-0 and k8s-worker-1 (an HA cluster keeps
        // three voters); this fake stands for the chain, not for that rule (L4 and
        // l5-provisioners/test_remove_node_real_salt.py show it).
        "microk8s.vacate_node 10.1.0.100 300": { [MASTER]: drained("k8s-worker-0") },
        "microk8s.vacate_node 10.1.0.101 300": { [MASTER]: drained("k8s-worker-1") },
        "microk8s.vacate_node 10.1.0.102 300": { [MASTER]: drained("k8s-worker-2") },
        "microk8s.leave": { [WORKER_0]: LEFT, [WORKER_1]: LEFT, [WORKER_2]: LEFT },
        // drain-node.sh's call when a node's machine goes (its drain record): the master drains the
        // workers, the next voter the master (_reboot.drain's return).
        ...Object.fromEntries(
          [
            ["10.1.0.10", WORKER_0, "k8s-master"],
            ["10.1.0.100", MASTER, "k8s-worker-0"],
            ["10.1.0.101", MASTER, "k8s-worker-1"],
            ["10.1.0.102", MASTER, "k8s-worker-2"],
          ].map(([address, operator, node]) => [
            `microk8s.drain_for_replacement ${address} 300`,
            { [operator]: { node, boot_id: `boot-of-${node}` } },
          ]),
        ),
        "microk8s.forget_node": { [MASTER]: true },
        // upgrade.sh's calls, answered as the module does before microk8s is installed (no snap
        // on the master: nothing to roll); the roll itself is L4's and the rehearsal's.
        "saltutil.sync_all": { [MASTER]: {} },
        "saltutil.refresh_pillar wait=True": { [MASTER]: true },
        // microk8s_channel unset: no channel given, the module plans with the master's, which has none yet.
        "microk8s.upgrade_plan": { [MASTER]: { channel: null, minor: null, roll: [], current: {}, steps: [] } },
        // reboot.sh's calls, on every Kubernetes node there may be: no update needs a reboot
        // (the roll itself is L4's, test_reboot_roll.py).
        "saltutil.sync_modules": Object.fromEntries([MASTER, WORKER_0, WORKER_1, WORKER_2].map((minion) => [minion, []])),
        "kube_on_os.reboot_required": Object.fromEntries(
          [MASTER, WORKER_0, WORKER_1, WORKER_2].map((minion) => [minion, { required: false, packages: [] }]),
        ),
        "shadow.set_password": Object.fromEntries([...EXPECTED_MINIONS, WORKER_2].map((minion) => [minion, true])),
      },
    });
    files.replay("succeeded");
    synthEnv = {
      TF_VAR_deploy_domain_name: DOMAIN,
      TF_VAR_deploy_user: hosts.user,
      TF_VAR_ssh_host_keys: JSON.stringify({ bastion: hosts.hostKey, salt_master: hosts.hostKey }),
    };
    // The ephemeral password is given at plan and apply time only, as docs/provisioning.md says.
    const rootPassword = { TF_VAR_set_root_password: "true", TF_VAR_root_password: ROOT_PASSWORD };
    tofuEnv = { ...double.passwordEnv(), ...hosts.agentEnv, ...synthEnv, ...rootPassword };
  }, 60_000);

  afterAll(async () => {
    await hosts?.close();
    files?.close();
    await double?.close();
    await stateServer?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  afterEach(() => {
    expect(double.unhandled).toEqual([]);
  });

  let tofu: Tofu;
  let first: RunResult;
  let outputs: Record<string, { value: any }>;

  beforeAll(async () => {
    tofu = await workspace();
    first = await tofu(["apply", "-auto-approve", "-input=false"]);
    outputs = JSON.parse((await tofu(["output", "-json"])).stdout);
  }, 300_000);

  it("creates the machines, then runs the seven steps in order and succeeds", () => {
    expect(first.stderr).toBe("");
    expect(first.status).toBe(0);
    expect(stepsRun(first.stdout)).toEqual(STEPS);
  });

  it("logs in with the ssh-agent, checking host keys, and reaches the Salt master only through the bastion", () => {
    const connection = (step: string) =>
      chainOutput(first.stdout)
        .filter((line) => line.startsWith(`${step}: `))
        .map((line) => line.slice(step.length + 2))
        .filter((line) => /^(Host|User|Password|Private key|SSH Agent|Checking Host Key|Using configured bastion host)/.test(line));
    const bastionIp = outputs.bastion_floating_ip.value;
    expect(connection("WaitForBastion").slice(0, 6)).toEqual([
      `Host: ${bastionIp}`,
      `User: ${hosts.user}`,
      "Password: false",
      "Private key: false",
      "SSH Agent: true",
      "Checking Host Key: true",
    ]);
    for (const step of STEPS.slice(1)) {
      expect(connection(step).slice(0, 7)).toEqual([
        "Host: 10.1.0.5",
        `User: ${hosts.user}`,
        "Password: false",
        "Private key: false",
        "SSH Agent: true",
        "Checking Host Key: true",
        "Using configured bastion host...",
      ]);
    }
    // Every login to 10.1.0.5 came from inside the namespace: through the bastion's forwarding.
    const log = hosts.log();
    const saltLogins = [...log.matchAll(/Connection from (\S+) port \d+ on 10\.1\.0\.5 port 22/g)].map((match) => match[1]);
    expect(saltLogins.length).toBeGreaterThanOrEqual(4);
    for (const source of saltLogins) expect(source).toMatch(/^(10\.1\.|198\.18\.)/);
    expect(log).toMatch(new RegExp(`Connection from 169\\.254\\.\\d+\\.\\d+ port \\d+ on ${bastionIp.replace(/\./g, "\\.")} port 22`));
  });

  it("prints what each step did, as docs/provisioning.md shows", () => {
    const lines = scriptLines(first.stdout).map((line) =>
      line
        .replace(/sha256 [0-9a-f]{12}/g, "sha256 H")
        .replace(/\(\d+ s left\)/, "(N s left)")
        .replace(/ in \d+ s:/, " in N s:"),
    );
    const saltFiles = cleanCopy(path.join(ROOT, "salt"));
    // The pillar: the repository's, and the two files Terraform writes (_from_terraform.sls, _cloud.sls).
    const count = (dir: string): number =>
      fs.readdirSync(dir, { withFileTypes: true }).reduce((n, e) => n + (e.isDirectory() ? count(path.join(dir, e.name)) : 1), 0);
    expect(lines).toEqual([
      `WaitForBastion: cloud-init: finished on ${BASTION}`,
      `WaitForSaltMaster: cloud-init: finished on ${SALT}`,
      `SyncSaltTree: installed Salt tree on ${SALT}: ${files.saltRoot} ${count(saltFiles.copy)} files, sha256 H; ${files.pillarRoot} ${count(path.join(ROOT, "pillar")) + 2} files, sha256 H`,
      `AcceptMinionKeys: accepted minion key: ${SALT}`,
      `AcceptMinionKeys: accepted minion key: ${BASTION}`,
      `AcceptMinionKeys: accepted minion key: ${MASTER}`,
      `AcceptMinionKeys: unexpected minion key left pending: ${INTRUDER}`,
      `AcceptMinionKeys: waiting for 2 of 5 minion keys: ${WORKER_0}, ${WORKER_1} (N s left)`,
      `AcceptMinionKeys: accepted minion key: ${WORKER_0}`,
      `AcceptMinionKeys: accepted minion key: ${WORKER_1}`,
      "AcceptMinionKeys: all 5 minion keys accepted",
      "AcceptMinionKeys: all 5 minions answer test.ping",
      "Upgrade: microk8s_channel unset: no node runs microk8s yet; orch.deploy installs it",
      "Orchestrate: root password: set on 5 machines",
      `Orchestrate: orchestration orch.deploy started on ${SALT}`,
      "Orchestrate: [k8s-worker-0.lab.example] saltutil.sync_all: ok",
      "Orchestrate: [k8s-master.lab.example] saltutil.sync_all: ok",
      "Orchestrate: [k8s-worker-0.lab.example] state.sls: 2 states, 1 changed, 0 failed",
      "Orchestrate: [k8s-master.lab.example] state.sls: 2 states, 1 changed, 0 failed",
      "Orchestrate: orchestration orch.deploy succeeded in N s: 2 steps, 2 states changed on 2 minions",
      "RebootForUpdates: reboot_for_updates: no Kubernetes node needs a reboot for its updates",
    ]);
  });

  it("re-plans with no changes", async () => {
    expect((await tofu(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
  });

  it("plans to re-run the sync and the steps after it when microk8s_channel changes (the pillar's hash), and nothing else", async () => {
    expect(await plannedChanges((args) => tofu(args, { TF_VAR_microk8s_channel: "1.34/stable" }))).toEqual([
      "null_resource.AcceptMinionKeys[0] delete+create",
      "null_resource.Orchestrate[0] delete+create",
      "null_resource.RebootForUpdates[0] delete+create",
      "null_resource.SyncSaltTree[0] delete+create",
      "null_resource.Upgrade[0] delete+create",
    ]);
  });

  it("plans to set root's password again when root_password_hash changes (cloud-init set it once): the orchestration re-runs, and nothing else", async () => {
    const hash = `$6$saltsalt$${"x".repeat(86)}`;
    expect(await plannedChanges((args) => tofu(args, { TF_VAR_root_password_hash: hash }))).toEqual([
      "null_resource.Orchestrate[0] delete+create",
      "null_resource.RebootForUpdates[0] delete+create",
    ]);
  });

  describe("after one SLS file is edited", () => {
    let edited: Tofu;
    let tree: string;

    beforeAll(async () => {
      tree = editedSaltTree("# edited by the L5 test");
      edited = await workspace(tree);
    });

    it("plans to re-run the sync and the steps after it, and nothing else", async () => {
      expect(await plannedChanges(edited)).toEqual([
        "null_resource.AcceptMinionKeys[0] delete+create",
        "null_resource.Orchestrate[0] delete+create",
        "null_resource.RebootForUpdates[0] delete+create",
        "null_resource.SyncSaltTree[0] delete+create",
        "null_resource.Upgrade[0] delete+create",
      ]);
    });

    it("applies it: the new tree reaches the Salt master and the orchestration runs again", async () => {
      const apply = await edited(["apply", "-auto-approve", "-input=false"]);
      expect(apply.stderr).toBe("");
      expect(apply.stdout).toContain("Apply complete! Resources: 5 added, 0 changed, 5 destroyed.");
      expect(stepsRun(apply.stdout)).toEqual(["SyncSaltTree", "AcceptMinionKeys", "Upgrade", "Orchestrate", "RebootForUpdates"]);
      expect(scriptLines(apply.stdout)).toContain("Upgrade: microk8s_channel unset: no node runs microk8s yet; orch.deploy installs it");
      expect(fs.readFileSync(path.join(files.saltRoot, "core", "motd.sls"), "utf8")).toMatch(/# edited by the L5 test\n$/);
      expect((await edited(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
    });

    it("fails the apply on a failed state, naming the step, minion and state id; the next apply converges", async () => {
      files.replay("failed");
      const broken = await workspace(editedSaltTree("# a change whose highstate fails"));
      const failed = await broken(["apply", "-auto-approve", "-input=false"]);
      expect(failed.status).toBe(1);
      // Terraform's own error is generic; the script's one-line reason is the step's last line.
      expect(failed.stderr.replace(/\s+/g, " ")).toMatch(
        /^ ?Error: remote-exec provisioner error with null_resource\.SaltProvisioner_Orchestrate_[0-9A-F]{8}\[0\], .* Process exited with status 1 ?$/,
      );
      const lines = scriptLines(failed.stdout);
      expect(lines).toContain(
        "Orchestrate: [k8s-worker-0.lab.example] state.sls: 2 states, 1 changed, 1 failed: microk8s-joined-microk8s-cluster_joined",
      );
      expect(lines.at(-1)).toBe(
        "Orchestrate: orchestration orch.deploy failed: orch-test-salt-state-workers: k8s-worker-0.lab.example: " +
          "microk8s-joined-microk8s-cluster_joined (join failed: the master refused the token (HTTP 500)); " +
          "orch-test-salt-function-cluster-check: k8s-master.lab.example: Exception: cluster check failed: " +
          "k8s-worker-0.lab.example is NotReady; not run because a requisite failed: orch-test-salt-function-after-workers",
      );

      // The cause is fixed on the hosts; the same configuration applied again re-runs only the
      // failed step (Terraform tainted it).
      files.replay("succeeded");
      // The failed apply had replaced the step after it: destroyed, never created.
      expect(await plannedChanges(broken)).toEqual([
        "null_resource.Orchestrate[0] delete+create",
        "null_resource.RebootForUpdates[0] create",
      ]);
      const fixed = await broken(["apply", "-auto-approve", "-input=false"]);
      expect(fixed.stderr).toBe("");
      expect(stepsRun(fixed.stdout)).toEqual(["Orchestrate", "RebootForUpdates"]);
      expect(scriptLines(fixed.stdout).at(-2)).toMatch(/^Orchestrate: orchestration orch\.deploy succeeded in \d+ s/);
      expect((await broken(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
    });
  });

  describe("scaling up to four nodes and back down to three", () => {
    let apply: RunResult;
    let callsBefore: number;

    beforeAll(async () => {
      // The new machine's minion submits its key, as its cloud-init would.
      files.update({ keys: { ...files.state().keys, minions_pre: [...files.state().keys.minions_pre, WORKER_2] } });
      tofu = await workspace();
      const up = await tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "4" });
      if (up.status !== 0) throw new Error(`scaling up to 4 failed:\n${up.stderr}`);
      callsBefore = files.calls().length;
      apply = await tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "3" });
    }, 600_000);

    it("removes the departed worker from the cluster, then deletes its machine, then orchestrates the rest", () => {
      expect(apply.stderr).toBe("");
      expect(apply.status).toBe(0);
      const lines = apply.stdout.split("\n");
      const at = (pattern: RegExp) => {
        const index = lines.findIndex((line) => pattern.test(line));
        expect({ pattern, index }).toEqual({ pattern, index: expect.any(Number) });
        if (index < 0) throw new Error(`no line matches ${pattern}`);
        return index;
      };
      const drained = at(
        /NodeMembership_[0-9A-F]{8}\[2\] \(remote-exec\): drained node k8s-worker-2 \(10\.1\.0\.102\) on k8s-master\.lab\.example in 4 s$/,
      );
      const left = at(/NodeMembership_[0-9A-F]{8}\[2\] \(remote-exec\): node k8s-worker-2\.lab\.example left the microk8s cluster$/);
      const removed = at(
        /NodeMembership_[0-9A-F]{8}\[2\] \(remote-exec\): removed node k8s-worker-2\.lab\.example \(10\.1\.0\.102\) from the microk8s cluster on k8s-master\.lab\.example$/,
      );
      expect(drained).toBeLessThan(left);
      expect(left).toBeLessThan(removed);
      const keyDeleted = at(/NodeMembership_[0-9A-F]{8}\[2\] \(remote-exec\): deleted minion key: k8s-worker-2\.lab\.example$/);
      const machineGone = at(/KubeNodes_Worker_[0-9A-F]{8}\[2\]: Destruction complete/);
      const orchestrated = at(/Orchestrate_[0-9A-F]{8}\[0\] \(remote-exec\): orchestration orch\.deploy succeeded/);
      expect(removed).toBeLessThan(keyDeleted);
      expect(keyDeleted).toBeLessThan(machineGone);
      expect(removed).toBeLessThan(orchestrated);
      expect(scriptLines(apply.stdout)).toContain("AcceptMinionKeys: all 5 minion keys accepted");
      expect(scriptLines(apply.stdout)).toContain("Orchestrate: root password: set on 5 machines");
      expect(double.nova.servers.all().map((server) => server.name)).not.toContain(WORKER_2);
    });

    it("asks, through Salt, the master to vacate the departed node, the node to leave, then the master to forget it", () => {
      const removals = files
        .calls()
        .slice(callsBefore)
        .filter(
          ([program, ...args]) =>
            program === "salt" && ["microk8s.vacate_node", "microk8s.leave", "microk8s.forget_node"].some((f) => args.includes(f)),
        );
      expect(removals).toEqual([
        ["salt", "--out=json", "--static", "--timeout=390", MASTER, "microk8s.vacate_node", "10.1.0.102", "300"],
        ["salt", "--out=json", "--static", "--timeout=30", WORKER_2, "microk8s.leave"],
        ["salt", "--out=json", "--static", "--timeout=30", MASTER, "microk8s.forget_node", "10.1.0.102"],
      ]);
      expect(files.state().keys.minions).not.toContain(WORKER_2);
    });

    it("refuses at plan time to go below the 3 voters, touching no host", async () => {
      const calls = files.calls().length;
      const down = await tofu(["apply", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "2" });
      expect(down.status).toBe(1);
      expect(down.stderr.replace(/\s+/g, " ")).toContain("num_kube_nodes: the cluster's control plane has 3 dqlite voters");
      expect(files.calls()).toHaveLength(calls);
      expect(double.nova.servers.all().map((server) => server.name)).toContain(WORKER_1);
    });

    it("destroys the rest, removing each worker first, and leaves the double as seeded", async () => {
      const destroy = await tofu(["destroy", "-auto-approve", "-input=false"], { TF_VAR_num_kube_nodes: "3" });
      expect(destroy.stderr).toBe("");
      expect(destroy.status).toBe(0);
      // The fake answers "drained" for both (the real module refuses a voter an HA cluster
      // cannot lose, and the record goes on: on_failure = continue).
      expect(scriptLines(destroy.stdout).sort()).toEqual(
        [0, 1]
          .flatMap((index) => {
            const [worker, address] = [
              [WORKER_0, "10.1.0.100"],
              [WORKER_1, "10.1.0.101"],
            ][index];
            return [
              `NodeDrain[${index}]: drained node ${worker.split(".")[0]} (${address}) on ${MASTER} before its machine is deleted`,
              `NodeMembership[${index}]: drained node ${worker.split(".")[0]} (${address}) on ${MASTER} in 4 s`,
              `NodeMembership[${index}]: node ${worker} left the microk8s cluster`,
              `NodeMembership[${index}]: removed node ${worker} (${address}) from the microk8s cluster on ${MASTER}`,
              `NodeMembership[${index}]: deleted minion key: ${worker}`,
            ];
          })
          .concat([`MasterDrain: drained node k8s-master (10.1.0.10) on ${WORKER_0} before its machine is deleted`])
          .sort(),
      );
      expect(double.resourceCount()).toBe(0);
    });
  });

  describe("upgrading a deployment made with the terraform_data chain of eb9d706", () => {
    let before: Tofu;
    let after: Tofu;
    let installed: RunResult;
    let callsBefore: number;
    let planned: string[];
    let upgrade: RunResult;

    beforeAll(async () => {
      files.newCluster();
      before = await workspace(undefined, "l5-upgrade", asOfEb9d706);
      installed = await before(["apply", "-auto-approve", "-input=false"]);
      callsBefore = files.calls().length;
      after = await workspace(undefined, "l5-upgrade");
      planned = await plannedChanges(after);
      upgrade = await after(["apply", "-auto-approve", "-input=false"]);
    }, 600_000);

    it("starts from a deployment whose chain ran as eb9d706's terraform_data steps", () => {
      expect(installed.stderr).toBe("");
      expect(installed.status).toBe(0);
      expect(stepsRun(installed.stdout)).toEqual(OLD_STEPS);
      expect(installed.stdout).toMatch(
        /^terraform_data\.SaltProvisioner_Orchestrate_[0-9A-F]{8}\[0\] \(remote-exec\): orchestration orch\.deploy succeeded/m,
      );
    });

    it("plans to forget the five terraform_data steps and create the seven null_resource steps (and the parameters' rules, the voters' floor), and nothing else", () => {
      expect(planned).toEqual(
        [
          ...STEPS.map((step) => `null_resource.${step}[0] create`),
          ...OLD_STEPS.map((step) => `terraform_data.${step}[0] forget`),
          "terraform_data.ControlPlaneFloor create",
          "terraform_data.ParameterRules create",
          ...DRAIN_RECORDS,
        ].sort(),
      );
    });

    it("applies it destroying nothing and removing no node: the chain runs once more and succeeds", () => {
      expect(upgrade.stderr).toBe("");
      expect(upgrade.status).toBe(0);
      // The seven steps, the parameters' rules, the voters' floor, and a drain record per Kubernetes node.
      expect(upgrade.stdout).toContain("Apply complete! Resources: 12 added, 0 changed, 0 destroyed, 5 forgotten.");
      expect(stepsRun(upgrade.stdout)).toEqual(STEPS);
      expect(upgrade.stdout).toMatch(
        /^null_resource\.SaltProvisioner_Orchestrate_[0-9A-F]{8}\[0\] \(remote-exec\): orchestration orch\.deploy succeeded/m,
      );
      const lines = scriptLines(upgrade.stdout);
      expect(lines).toContain("AcceptMinionKeys: all 5 minion keys accepted");
      expect(lines.filter((line) => line.startsWith("NodeMembership"))).toEqual([]);
      // What remove-node.sh would have asked the fakes for: nothing.
      const removals = files
        .calls()
        .slice(callsBefore)
        .filter(
          ([program, ...args]) =>
            ["microk8s.vacate_node", "microk8s.leave", "microk8s.forget_node"].some((f) => args.includes(f)) ||
            (program === "salt-key" && args.some((a) => a.startsWith("--delete"))),
        );
      expect(removals).toEqual([]);
      expect(files.state().keys.minions).toEqual([...EXPECTED_MINIONS].sort());
      expect(
        double.nova.servers
          .all()
          .map((server) => server.name)
          .sort(),
      ).toEqual([...EXPECTED_MINIONS].sort());
    });

    it("then plans no changes", async () => {
      expect((await after(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
    });

    it("keeps NodeMembership a record updated in place, so a changed ssh_host_keys never forgets a worker", async () => {
      const changed = await plannedChanges((args) => after(args, { TF_VAR_ssh_host_keys: JSON.stringify({ bastion: hosts.hostKey }) }));
      // The drain records too: updated, never replaced, so no healthy node is drained.
      expect(changed).toEqual([
        ...DRAIN_RECORDS.map((record) => record.replace(/ create$/, " update")),
        "terraform_data.NodeMembership[0] update",
        "terraform_data.NodeMembership[1] update",
      ]);
    });

    it("destroys the upgraded deployment, removing each worker from the cluster first", async () => {
      const destroy = await after(["destroy", "-auto-approve", "-input=false"]);
      expect(destroy.stderr).toBe("");
      expect(destroy.status).toBe(0);
      expect(
        scriptLines(destroy.stdout)
          .filter((line) => /removed node/.test(line))
          .sort(),
      ).toEqual([
        `NodeMembership[0]: removed node ${WORKER_0} (10.1.0.100) from the microk8s cluster on ${MASTER}`,
        `NodeMembership[1]: removed node ${WORKER_1} (10.1.0.101) from the microk8s cluster on ${MASTER}`,
      ]);
      expect(double.resourceCount()).toBe(0);
    });
  });
  describe("upgrading a deployment made before the cluster layout module (a4e49bc)", () => {
    let before: Tofu;
    let after: Tofu;
    let installed: RunResult;

    beforeAll(async () => {
      files.newCluster();
      before = await workspace(undefined, "l5-layout", asOfA4e49bc);
      installed = await before(["apply", "-auto-approve", "-input=false"]);
      after = await workspace(undefined, "l5-layout");
    }, 600_000);

    it("starts from a deployment whose chain ran to the end", () => {
      expect(installed.stderr).toBe("");
      expect(installed.status).toBe(0);
      expect(stepsRun(installed.stdout)).toEqual(OLD_STEPS);
    });

    it("plans to change nothing but the pillar's content: the sync and the steps after it run again, no machine is touched", async () => {
      // Every address, name, address and trigger is the same; only two pillar keys no state read
      // (network:domain, network:external_gateway) are gone, and the renderer line and
      // microk8s:channel are new, so the pillar data's hash changed. The parameters' preconditions
      // are a new, empty terraform_data. base_image's new default, a name, resolves to another
      // image, which the machines ignore (constructs/machine.ts, KEEP_IMAGE).
      // On a cloud with Octavia (the double's catalog lists it), the API load balancer is new too
      // (docs/decisions.md, "The API behind Octavia where the cloud has it"), and so are the
      // cluster's application credential and the NodePort rule: no machine changes. Their rules
      // are on the Kubernetes nodes' group, also new, which the nodes' private ports gain in place.
      expect(await plannedChanges(after)).toEqual(
        [
          ...["AcceptMinionKeys", "Orchestrate", "SyncSaltTree"].map((step) => `null_resource.${step}[0] delete+create`),
          "null_resource.RebootForUpdates[0] create",
          "null_resource.Upgrade[0] create",
          ...ADDED_SINCE_A4E49BC,
          ...DRAIN_RECORDS,
        ].sort(),
      );
    });

    it("applies it removing no node, and then plans no changes", async () => {
      // The resources that only gain the cluster's tag (support/upgrade.ts, tagsOnly), besides the three ports.
      const tagged = taggingOf(await planOf(after)).length;
      expect(tagged).toBeGreaterThan(0);
      const upgrade = await after(["apply", "-auto-approve", "-input=false"]);
      expect(upgrade.stderr).toBe("");
      expect(upgrade.stdout).toContain(
        `Apply complete! Resources: ${8 + DRAIN_RECORDS.length + API_LOAD_BALANCER.length + CLOUD_INTEGRATION.length} added, ${3 + tagged} changed, 3 destroyed.`,
      );
      expect(scriptLines(upgrade.stdout).filter((line) => line.startsWith("NodeMembership"))).toEqual([]);
      expect((await after(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
    });

    it("destroys it, removing each worker from the cluster first", async () => {
      const destroy = await after(["destroy", "-auto-approve", "-input=false"]);
      expect(destroy.stderr).toBe("");
      expect(destroy.status).toBe(0);
      expect(scriptLines(destroy.stdout).filter((line) => /removed node/.test(line))).toHaveLength(2);
      expect(double.resourceCount()).toBe(0);
    });
  });
});
