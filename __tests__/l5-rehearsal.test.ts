/**
 * L5, the deployment rehearsal (__tests__/doubles/rehearsal/): real OpenTofu applies the synthesized stack
 * against the OpenStack API double; every server it creates boots as a host of its own (network
 * namespace with the double's addresses, overlay on a Debian root, Debian's cloud-init from the
 * user_data the double received, OpenSSH, salt-master and salt-minion); the provisioning chain
 * runs unchanged through the bastion with an ssh-agent, and the real Salt orchestration
 * configures every host. Only microk8s and snap are faked (__tests__/doubles/rehearsal/microk8s/).
 *
 * Skipped where namespaces are not allowed (KOO_SKIP_NAMESPACE_TESTS=1, the GitLab test job) or
 * the toolchain could not build the Debian root. `npm run bench:rehearsal` runs it alone and reports
 * its measurements.
 */
import { execFileSync } from "node:child_process";
import * as crypto from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { CHAIN_STEPS } from "../constructs/provisioning/chain";
import { cleanCopy } from "../constructs/provisioning/tree-hash";
import { rehearsalAvailable, Rehearsal, startRehearsal } from "./doubles/rehearsal/rehearsal";
import { availableMiB, estimate, HOST_MIB, roleOf } from "../tools/rehearsal/memory";
import { applyChange, ChangeReport, changeReport, planChange, previewChange } from "../tools/rehearsal/change";
import { readReport, RehearsalReport, reportLines } from "../tools/rehearsal/report";
import { applyOutcome } from "../tools/rehearsal/results";
import { HostState, highstates, hostState, rehearsedCluster, scriptLines, stateChanges, stepsRun } from "./support/rehearsal";
import { synthToDir } from "./support/synth";
import { RunResult, runAsync, runTfAsync, tfEnv, tofuBinary } from "./support/tofu";

const ROOT = path.resolve(__dirname, "..");
const DOMAIN = "lab.example";
const id = (host: string) => `${host}.${DOMAIN}`;
const [BASTION, SALT, MASTER] = ["bastion", "salt", "k8s-master"].map(id);
const workers = (n: number) => Array.from({ length: n - 1 }, (_, i) => id(`k8s-worker-${i}`));
const STEPS = CHAIN_STEPS;
/** The chain's last line when it ran to the end and no node's updates need a reboot (the rehearsal's hosts have none). */
const NO_REBOOT = "RebootForUpdates: reboot_for_updates: no Kubernetes node needs a reboot for its updates";
/**
 * The channel the rehearsal deploys with, as every deployment made before 1.35 became the default
 * did (Salt's default until 1f28b16); it then unsets microk8s_channel, which keeps it, and later
 * asks for NEXT_CHANNEL on 5 nodes, a roll of one minor at a time. Two minors, not the seven to
 * 1.35: the roll crosses 1.28's differences from the later releases (microk8s-module.md, the
 * fake's releases) and goes step by step; each further step repeats the same Salt jobs on every
 * node (some 30 s of orch.upgrade each), and the plan of every step from 1.28 to 1.35 is
 * test_microk8s_upgrade.py's.
 */
const FIRST_CHANNEL = "1.28/stable";
const NEXT_CHANNEL = "1.30/stable";
/** The minors the roll goes through, in order. */
const ROLL_STEPS = ["1.29/stable", "1.30/stable"];
/**
 * The nodes `npm run roll -- --nodes` replaces the machines of, one of each kind, in the order it
 * replaces them: a --worker node, a voter, the master. (Rolling all 5 adds a minute and a half a
 * node and proves no more; `npm run roll`'s order of every node is tried in journey-laptop.)
 */
const ROLL_ORDER = ["k8s-worker-3", "k8s-worker-1", "k8s-master"];
/** The nodes that keep their machines through the roll. */
const KEPT = ["k8s-worker-0", "k8s-worker-2"];
/** Where `npm run bench:rehearsal` wants the measurements. */
const REPORT = process.env.KOO_REHEARSAL_REPORT;
/** root's console password: ephemeral, given at plan and apply time only, as docs/provisioning.md says. */
const ROOT_PASSWORD = "rehearsal console password 4e2a";
const STRANGER = id("stranger");
/** The file the edit's pillar sends with the file_transfer state, and the hosts it names (globs). */
const TRANSFER = {
  source: "rehearsal-ca.crt",
  target: "/usr/local/share/ca-certificates/rehearsal-ca.crt",
  hosts: ["bastion", "k8s-worker-*"],
  text: "-----BEGIN CERTIFICATE-----\nrehearsal\n-----END CERTIFICATE-----\n",
  /** A second file beside it, which a pillar edit sends instead: a CA's rotation. */
  next: { source: "rehearsal-ca-2.crt", text: "-----BEGIN CERTIFICATE-----\nrehearsal, rotated\n-----END CERTIFICATE-----\n" },
};
/** The hosts TRANSFER.hosts names while the cluster has 3 nodes. */
const TRANSFERRED_TO = [BASTION, ...workers(3)];
/** Another Salt tree to rehearse instead of salt/ (e.g. an older commit's, to see its defects). */
const SALT_TREE = process.env.KOO_REHEARSAL_SALT_TREE || undefined;
/** The fake microk8s' record of the objects kubectl applied, on the node that ran kubectl (fake-microk8s/microk8s.py). */
const OBJECTS = "/var/snap/microk8s/current/fake/objects.json";
/** What the cluster integration keeps in the cluster, and the fake's database holds. */
const WORKLOADS = [
  "Secret/kube-system/cloud-config",
  "DaemonSet/kube-system/openstack-cloud-controller-manager",
  "Deployment/kube-system/csi-cinder-controllerplugin",
  "DaemonSet/kube-system/csi-cinder-nodeplugin",
  "StorageClass//cinder",
];

type Tofu = ((args: string[], extra?: NodeJS.ProcessEnv) => Promise<RunResult>) & {
  roll: (args: string[]) => Promise<RunResult>;
  /** The synthesized stack's directory. */
  dir: string;
};
/** npm run diff's Salt preview of a plan (scripts/preview.js): what it printed, and its report. */
type Preview = RunResult & { report: any };
/** `npm run roll`'s roll (scripts/roll.js) with the CLI and arguments given, in the working directory. */
const ROLL = `const { roll, parseArgs } = require(${JSON.stringify(path.join(ROOT, "scripts", "roll.js"))});
process.exitCode = roll({ cli: process.argv[1], stackDir: process.cwd(), env: process.env, options: parseArgs(process.argv.slice(2)) });`;

/** An apply's outcome, with the chain's last line: on a failure, the reason. */
function outcome(result: RunResult): { status: number | null; stderr: string; last: string | undefined } {
  return { status: result.status, stderr: result.stderr, last: scriptLines(result.stdout).at(-1) };
}

const SUCCEEDED = { status: 0, stderr: "", last: NO_REBOOT };

const available = rehearsalAvailable();
(available.ok ? describe : describe.skip)(`L5: the deployment rehearsal${available.ok ? "" : ` (skipped: ${available.reason})`}`, () => {
  let rehearsal: Rehearsal;
  // Every Kubernetes machine the rehearsal booted, the rolled ones too, for the fake's records.
  const { servers, kubeObjects, readyNodes, voters, cordoned, isWorker, fakeRecords } = rehearsedCluster(() => rehearsal, MASTER);
  let synthEnv: NodeJS.ProcessEnv;
  const timeline: { tofu: string; atSeconds: number; seconds: number }[] = [];
  /** The apply that rolled the channel on 5 nodes, then ran orch.deploy. */
  let rolled: RunResult;
  /** `npm run roll` on 5 nodes: its own lines (stderr), and each apply's output (stdout). */
  let roll: RunResult;
  /** Each apply of the roll, by the node whose machine it replaced, in the roll's order. */
  const rollApplies = new Map<string, string>();
  /**
   * Each node's cloud labels and taints, as the cloud controller manager the fake models leaves
   * them (microk8s_core/cloud_controller.py), by node name.
   */
  const cloudInitialized = async () => {
    const listed = await rehearsal.cloud.host(MASTER).exec("microk8s kubectl get nodes -o json");
    return Object.fromEntries(
      JSON.parse(listed.stdout).items.map((node: any) => [
        node.metadata.name,
        {
          zone: node.metadata.labels["topology.kubernetes.io/zone"],
          region: node.metadata.labels["topology.kubernetes.io/region"],
          instanceType: node.metadata.labels["node.kubernetes.io/instance-type"],
          taints: node.spec.taints ?? [],
        },
      ]),
    );
  };
  /** What initialization gives the nodes of these hosts: their servers' zone and flavor, the cloud's region. */
  const serversAsLabels = async (hosts: string[]) =>
    Object.fromEntries(
      hosts.map((host) => {
        const server = rehearsal.double.nova.servers.all().find((each) => String(each.name).split(".")[0] === host) as any;
        const zone = server.availability_zone;
        return [host, { zone, region: "RegionOne", instanceType: server.flavor.name, taints: [] }];
      }),
    );
  /** The Nova servers by host name before the roll, and the objects the cluster held. */
  let beforeRoll: Map<string, string>;
  let objectsBeforeRoll: Record<string, any>;
  const measured: Record<string, unknown> = { timeline };
  /** Everything tofu printed, for the check that the root password never shows. */
  const printed: string[] = [];
  const started = Date.now();

  /** The cluster's application credential's secret, once the first apply made it. */
  let cloudSecret = "";
  /** Secrets of the credentials rotated away: in no output or log either. */
  const retiredSecrets: string[] = [];

  /** The external network's id, as the double seeded it. */
  function externalNetworkId(): string {
    return String((rehearsal.double.neutron.networks.all().find((n: any) => n["router:external"]) as any).id);
  }

  async function workspace(extra: NodeJS.ProcessEnv = {}, saltTree = SALT_TREE, pillarTree?: string): Promise<Tofu> {
    const dir = await synthToDir(fs.mkdtempSync(path.join(rehearsal.dir, "synth-")), { ...synthEnv, ...extra }, { saltTree, pillarTree });
    const env = {
      ...rehearsal.double.passwordEnv(),
      ...rehearsal.state.backendEnv("rehearsal"),
      ...rehearsal.agentEnv,
      ...synthEnv,
      TF_VAR_set_root_password: "true",
      TF_VAR_root_password: ROOT_PASSWORD,
      ...extra,
    };
    const run = async (label: string, running: Promise<RunResult & { stamped?: string }>) => {
      const t0 = Date.now();
      const result = await running;
      printed.push(result.stdout, result.stderr);
      // The timeline of every tofu run, for `npm run bench:rehearsal` to show where the time goes, and
      // beside the report each run's output, every line stamped with the second it came.
      if (REPORT) fs.writeFileSync(`${REPORT}.${timeline.length}-${label.split(" ")[0]}.txt`, `${result.stamped}${result.stderr}`);
      timeline.push({ tofu: label, atSeconds: Math.round((t0 - started) / 1000), seconds: Math.round((Date.now() - t0) / 1000) });
      return result;
    };
    const tofu: Tofu = Object.assign(
      (args: string[], more: NodeJS.ProcessEnv = {}) =>
        run(
          args.filter((arg) => !arg.startsWith("-")).join(" "),
          runTfAsync({ name: "tofu", path: tofuBinary() }, args, dir, { ...env, ...more }, "", Boolean(REPORT)),
        ),
      {
        dir,
        // `npm run roll` after its synth: scripts/roll.js's roll() in this stack's directory with
        // OpenTofu, in a process of its own (the double answers in this one). Its lines go to
        // stderr, each apply's output to stdout.
        roll: (args: string[]) =>
          run(
            "roll",
            runAsync(process.execPath, ["-e", ROLL, tofuBinary(), ...args], {
              cwd: dir,
              env: tfEnv({ ...env, TF_CLI_ARGS: "-no-color" }),
              stamp: Boolean(REPORT),
            }),
          ),
      },
    );
    const init = await tofu(["init", "-input=false"]);
    if (init.status !== 0) throw new Error(`tofu init failed:\n${init.stderr}`);
    return tofu;
  }

  /** A copy of the rehearsed Salt tree with `line` appended to core/motd.sls: an operator's edit of one SLS. */
  function editedSaltTree(line: string): string {
    const tree = fs.mkdtempSync(path.join(rehearsal.dir, "salt-"));
    fs.cpSync(SALT_TREE ?? path.join(ROOT, "salt"), tree, { recursive: true });
    fs.appendFileSync(path.join(tree, "core", "motd.sls"), `\n${line}\n`);
    // A user's own file for the file_transfer state, where docs/salt.md says to put it.
    fs.writeFileSync(path.join(tree, "file_transfer", "files", TRANSFER.source), TRANSFER.text);
    fs.writeFileSync(path.join(tree, "file_transfer", "files", TRANSFER.next.source), TRANSFER.next.text);
    return tree;
  }

  /** pillar/ with the domain's layer sending TRANSFER (or the file `source`) to the hosts it names, as a user would write it. */
  function transferPillar(source = TRANSFER.source): string {
    const tree = fs.mkdtempSync(path.join(rehearsal.dir, "pillar-"));
    fs.cpSync(path.join(ROOT, "pillar"), tree, { recursive: true });
    const layer = { file_transfer: { [TRANSFER.target]: { source, hosts: TRANSFER.hosts, mode: "0640" } } };
    fs.writeFileSync(path.join(tree, "environments", `${DOMAIN.replace(/\./g, "_")}.sls`), `#!yaml\n${YAML.stringify(layer)}`);
    return tree;
  }

  /**
   * Every host's state (support/rehearsal.ts hostState), by host name. `settled` brings the Salt
   * master's map of its roots' files up to date first, as its maintenance does every minute: after
   * an apply's new tree it may be a minute behind, and a preview updates it (preview.sh). Only the
   * state before a preview is settled: after it, the map must be as the preview left it.
   */
  async function hostStates(settled = false): Promise<Record<string, HostState>> {
    if (settled) {
      const updated = await rehearsal.cloud.host(SALT).exec("salt-run --out=quiet fileserver.update backend=roots");
      if (updated.status !== 0) throw new Error(`fileserver.update failed: ${updated.stderr}`);
    }
    const names = rehearsal.cloud.hostNames();
    return Object.fromEntries(await Promise.all(names.map(async (name) => [name, await hostState(rehearsal, name)])));
  }

  /** What differs on each host between two hostStates(), the hosts with no difference left out. */
  function changedHosts(before: Record<string, HostState>, after: Record<string, HostState>): Record<string, string[]> {
    return Object.fromEntries(
      Object.keys(before)
        .map((name) => [name, stateChanges(before[name], after[name])] as const)
        .filter(([, changes]) => changes.length > 0),
    );
  }

  /**
   * npm run diff's Salt preview of the next plan of `tofu`'s stack: the plan saved and shown as
   * cdktf.js does, then scripts/preview.js with the deployer's ssh-agent (tools/rehearsal/change.ts).
   */
  async function saltPreview(tofu: Tofu, planEnv: NodeJS.ProcessEnv = {}, previewEnv: NodeJS.ProcessEnv = {}): Promise<Preview> {
    const stack = { dir: tofu.dir, tofu };
    const preview = await previewChange(rehearsal, stack, await planChange(stack, planEnv), previewEnv);
    printed.push(preview.stdout, preview.stderr);
    return preview;
  }

  /** A preview's hosts, by the status its report gives them. */
  const byStatus = (preview: Preview) =>
    Object.entries<any>(preview.report.hosts).reduce<Record<string, string[]>>(
      (grouped, [host, { status }]) => ({ ...grouped, [status]: [...(grouped[status] ?? []), host].sort() }),
      {},
    );

  beforeAll(async () => {
    rehearsal = await startRehearsal();
    synthEnv = {
      TF_VAR_deploy_domain_name: DOMAIN,
      TF_VAR_deploy_ssh_public_key: rehearsal.publicKey,
      TF_VAR_microk8s_channel: FIRST_CHANNEL,
    };
  }, 60_000);

  afterAll(async () => {
    measured.wallSeconds = Math.round((Date.now() - started) / 1000);
    if (REPORT) fs.writeFileSync(REPORT, JSON.stringify(measured, null, 2));
    await rehearsal?.close();
  }, 120_000);

  afterEach(() => {
    expect(rehearsal.double.unhandled).toEqual([]);
    expect(rehearsal.cloud.errors).toEqual([]);
  });

  describe("the first apply, with 3 nodes", () => {
    let tofu: Tofu;
    let apply: RunResult;
    let report: RehearsalReport;

    beforeAll(async () => {
      tofu = await workspace();
      const t0 = Date.now();
      apply = await tofu(["apply", "-auto-approve", "-input=false"]);
      measured.firstApplySeconds = Math.round((Date.now() - t0) / 1000);
      if (apply.status !== 0) console.error(`the first apply failed; its last lines:\n${scriptLines(apply.stdout).slice(-20).join("\n")}`);
      measured.firstRun = highstates(apply.stdout);
      measured.hostMemoryMiB = await rehearsal.cloud.memoryMiB();
      // What npm run rehearse reports of the same apply (tools/rehearsal/report.ts).
      const outcome = applyOutcome(apply, (measured.firstApplySeconds as number) * 1000);
      const hosts = rehearsal.cloud.hostNames();
      report = await readReport(rehearsal, outcome, MASTER, { estimate: estimate(hosts), availableMiB: availableMiB() });
    }, 1_500_000);

    it("reports what npm run rehearse reports: each host's highstate, its memory within its role's estimate, 3 nodes Ready and 3 voters", () => {
      expect(report.apply).toEqual({ seconds: measured.firstApplySeconds, succeeded: true, last: NO_REBOOT });
      const hosts = [BASTION, MASTER, ...workers(3), SALT].sort();
      expect(Object.keys(report.hosts)).toEqual(hosts);
      const run = highstates(apply.stdout);
      for (const host of hosts) {
        const { highstate, memoryMiB } = report.hosts[host];
        expect([host, highstate]).toEqual([host, { states: run[host].states, changed: run[host].changed, failed: 0 }]);
        expect([host, memoryMiB, memoryMiB! <= HOST_MIB[roleOf(host)]]).toEqual([host, memoryMiB, true]);
      }
      expect(report.cluster).toEqual({ ready: ["k8s-master", "k8s-worker-0", "k8s-worker-1"], voters: 3, workers: [] });
      expect(report.memory.estimateMiB).toBe(estimate(hosts).mib);
      expect(reportLines(report)).toContain("cluster: 3 nodes Ready (k8s-master, k8s-worker-0, k8s-worker-1), 3 dqlite voters");
    });

    it("boots every planned machine as a host, and runs the seven steps in order", () => {
      expect(outcome(apply)).toEqual(SUCCEEDED);
      expect(rehearsal.cloud.hostNames()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort());
      expect(stepsRun(apply.stdout)).toEqual(STEPS);
      // No snap on the master yet: nothing to roll, orch.deploy installs the channel.
      expect(scriptLines(apply.stdout)).toContain(
        `Upgrade: microk8s_channel ${FIRST_CHANNEL}: no node runs microk8s yet; orch.deploy installs it`,
      );
    });

    it("finishes every highstate with no failed state, and the orchestration succeeds", () => {
      const results = highstates(apply.stdout);
      expect(Object.keys(results).sort()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort());
      for (const result of Object.values(results)) expect(result.line).toMatch(/, 0 failed$/);
      expect(scriptLines(apply.stdout).at(-2)).toMatch(/^Orchestrate: orchestration orch\.deploy succeeded in \d+ s/);
    });

    it("runs the Salt master with the configuration cloud-init wrote, restarting nothing: the reactor of the join protocol runs", async () => {
      // cloud-init wrote the salt_master state's file before salt-master started: the first
      // deploy finds nothing to change, so no restart (orchestrate.sh's line) and no minion that
      // rebuilds its channels after one.
      expect(scriptLines(apply.stdout).filter((line) => line.includes("Salt master configured"))).toEqual([]);
      // salt-run reactor.list asks the running reactor; one the master never loaded lists nothing.
      const result = await rehearsal.cloud.host(SALT).exec("salt-run --out=json reactor.list");
      expect(result.stdout).toMatch(/"kube-on-os\/microk8s\/join-token\/renew": \[\s*"salt:\/\/reactor\/microk8s-renew-join-token\.sls"/);
    });

    it("runs every minion with the options core.minion wrote: no socket monitor, no status.master every second", async () => {
      // With Salt's default zmq_monitor, a minion whose master restarted rebuilt its channels and
      // kept running status.master every second after. cloud-init wrote core.minion's file before
      // the minion started: no minion waited for a restart (orchestrate.sh's "not yet" lines).
      expect(scriptLines(apply.stdout).filter((line) => line.includes("kube_on_os.minion_options: not yet"))).toEqual([]);
      const hosts = [BASTION, MASTER, ...workers(3), SALT].sort();
      const written = fs.readFileSync(path.join(ROOT, "salt", "core", "files", "minion.conf"), "utf8");
      for (const host of hosts) {
        const file = path.join(`/proc/${rehearsal.cloud.host(host).pid}/root`, "etc", "salt", "minion.d", "kube-on-os.conf");
        expect([host, fs.readFileSync(file, "utf8")]).toEqual([host, written]);
      }
      const result = await rehearsal.cloud.host(SALT).exec("salt --out=json --static '*' schedule.list show_all=True return_yaml=False");
      const schedules = JSON.parse(result.stdout) as Record<string, Record<string, unknown>>;
      const alive = Object.entries(schedules).map(([minion, jobs]) => [
        minion,
        Object.keys(jobs).filter((name) => name.startsWith("__master_alive")),
      ]);
      expect(alive.sort()).toEqual(hosts.map((host) => [host, []]));
    });

    it("holds snapd's own refreshes of microk8s on every Kubernetes node: an auto-refresh restarts none", async () => {
      // snapd refreshes a snap within its track up to four times a day, on every node on its own,
      // restarting kubelite and k8s-dqlite (canonical/microk8s#1022, #3735): only the roll may.
      for (const host of [MASTER, ...workers(3)]) {
        const listed = (await rehearsal.cloud.host(host).exec("snap list microk8s")).stdout;
        expect([host, listed.trim().split(/\s+/).pop()]).toEqual([host, "classic,held"]);
        expect((await rehearsal.cloud.host(host).exec("microk8s fake-auto-refresh")).status).toBe(0);
        expect([host, (await rehearsal.cloud.host(host).exec("snap list microk8s")).stdout]).toEqual([host, listed]);
      }
    });

    it("installs exactly salt/ and pillar/ on the Salt master, with the pillar Terraform wrote, readable by root only", async () => {
      const srv = path.join(`/proc/${rehearsal.cloud.host(SALT).pid}/root`, "srv");
      expect(cleanCopy(path.join(srv, "salt")).hash).toBe(cleanCopy(SALT_TREE ?? path.join(ROOT, "salt")).hash);
      const pillar = fs.mkdtempSync(path.join(rehearsal.dir, "pillar-"));
      fs.cpSync(path.join(srv, "pillar"), pillar, { recursive: true });
      const written = YAML.parse(fs.readFileSync(path.join(pillar, "_from_terraform.sls"), "utf8"));
      fs.rmSync(path.join(pillar, "_from_terraform.sls"));
      fs.rmSync(path.join(pillar, "_cloud.sls"));
      expect(cleanCopy(pillar).hash).toBe(cleanCopy(path.join(ROOT, "pillar")).hash);
      const outputs = JSON.parse((await tofu(["output", "-json"])).stdout);
      expect(written.microk8s).toMatchObject({
        master: MASTER,
        allowed_csr_ip: outputs.master_floating_ip.value,
        nodes: [
          { id: MASTER, address: "10.1.0.10" },
          { id: id("k8s-worker-0"), address: "10.1.0.100" },
          { id: id("k8s-worker-1"), address: "10.1.0.101" },
        ],
      });
      expect(fs.statSync(path.join(srv, "pillar", "_from_terraform.sls"))).toMatchObject({ uid: 0, mode: 0o100640 });
      // The cloud pillar holds the cluster's application credential: root's alone.
      expect(fs.statSync(path.join(srv, "pillar", "_cloud.sls"))).toMatchObject({ uid: 0, mode: 0o100600 });
    });

    it("gives the cluster's application credential to the Kubernetes master alone, which makes it the cloud-config Secret", async () => {
      const credentials = rehearsal.double.keystone.applicationCredentials.all().filter((c) => c.seeded !== true) as any[];
      expect(credentials.map((c) => c.name)).toEqual([`${DOMAIN}-cloud-provider`]);
      cloudSecret = credentials[0].secret;
      // Asked for a non-secret key only: a job's return is kept in the Salt master's job cache.
      const key = "openstack:cloud:auth_url";
      const result = await rehearsal.cloud.host(SALT).exec(`salt --out=json --static '*' pillar.item ${key}`);
      const pillars = JSON.parse(result.stdout);
      const holders = Object.keys(pillars).filter((minion) => pillars[minion][key]);
      expect(holders).toEqual([MASTER]);
      const objects = JSON.parse(fs.readFileSync(`/proc/${rehearsal.cloud.host(MASTER).pid}/root${OBJECTS}`, "utf8"));
      const cloudConf = Buffer.from(objects["Secret/kube-system/cloud-config"].data["cloud.conf"], "base64").toString("utf8");
      const subnet = (name: string) => String((rehearsal.double.neutron.subnets.all().find((s: any) => s.name === name) as any).id);
      // The identity endpoint of the token's catalog: the double's own address.
      expect(cloudConf).toMatch(/^auth-url = "http:\/\/[0-9.]+:\d+\/identity[^"]*"$/m);
      expect(cloudConf.replace(/^auth-url = .*$/m, "auth-url = <catalog>")).toBe(
        [
          "[Global]",
          "auth-url = <catalog>",
          'region = "RegionOne"',
          `application-credential-id = "${credentials[0].id}"`,
          `application-credential-secret = "${credentials[0].secret}"`,
          "",
          "[Networking]",
          'address-sort-order = "10.1.0.0/16"',
          "",
          "[LoadBalancer]",
          "enabled = true",
          `floating-network-id = "${externalNetworkId()}"`,
          `subnet-id = "${subnet(`${DOMAIN}-public`)}"`,
          `member-subnet-id = "${subnet(`${DOMAIN}-private`)}"`,
          "create-monitor = true",
          "",
          "[BlockStorage]",
          "ignore-volume-az = false",
          "",
          "[Metadata]",
          'search-order = "configDrive,metadataService"',
          "",
        ].join("\n"),
      );
    });

    it("deploys the cloud controller manager and Cinder CSI from the pinned manifests, Cinder the default class, and it initializes every node", async () => {
      const objects = JSON.parse(fs.readFileSync(`/proc/${rehearsal.cloud.host(MASTER).pid}/root${OBJECTS}`, "utf8"));
      const shipped = path.join(ROOT, "salt", "microk8s", "files", "cloud-provider");
      const expected = fs
        .readdirSync(shipped)
        .flatMap((file) => YAML.parseAllDocuments(fs.readFileSync(path.join(shipped, file), "utf8")).map((doc) => doc.toJS()))
        // A `kind: List` (the roles and their bindings) is applied as its items.
        .flatMap((doc) => (doc?.kind === "List" ? doc.items : [doc]))
        .filter((doc) => doc && doc.kind)
        .map((doc) => `${doc.kind}/${doc.metadata.namespace ?? ""}/${doc.metadata.name}`);
      expect(expected.length).toBeGreaterThan(10);
      for (const key of expected) expect({ key, applied: key in objects }).toEqual({ key, applied: true });
      const daemonSet = objects["DaemonSet/kube-system/openstack-cloud-controller-manager"];
      expect(daemonSet.spec.template.spec.containers[0].image).toMatch(/openstack-cloud-controller-manager:v1\.35\.0$/);
      const defaults = Object.entries<any>(objects)
        .filter(
          ([key, o]) =>
            key.startsWith("StorageClass/") && o.metadata.annotations?.["storageclass.kubernetes.io/is-default-class"] === "true",
        )
        .map(([key]) => key);
      expect(defaults).toEqual(["StorageClass//cinder"]);
      const nodes = JSON.parse((await rehearsal.cloud.host(MASTER).exec("microk8s kubectl get nodes -o json")).stdout).items;
      const ids = servers();
      expect(Object.fromEntries(nodes.map((node: any) => [node.metadata.name, node.spec.providerID]))).toEqual(
        Object.fromEntries(["k8s-master", "k8s-worker-0", "k8s-worker-1"].map((host) => [host, `openstack:///${ids.get(host)}`])),
      );
      // The master too, which its kubelet registered before the cloud integration.
      expect(await cloudInitialized()).toEqual(await serversAsLabels(["k8s-master", "k8s-worker-0", "k8s-worker-1"]));
    });

    it("points the kubeconfig at the API load balancer: its command, run as the README says, gives a server on its floating IP", async () => {
      const outputs = JSON.parse((await tofu(["output", "-json"])).stdout);
      const loadBalancer = rehearsal.double.neutron.floatingips
        .all()
        .find((ip: any) => ip.description === `${DOMAIN} Kubernetes API`) as any;
      expect(outputs.api_address.value).toBe(loadBalancer.floating_ip_address);
      const dir = fs.mkdtempSync(path.join(rehearsal.dir, "kubeconfig-"));
      // The hosts' keys are new to this machine: an ssh that trusts them on first use, as a user's would after "yes".
      fs.mkdirSync(path.join(dir, "bin"));
      fs.writeFileSync(path.join(dir, "ssh.conf"), "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\nLogLevel ERROR\n");
      fs.writeFileSync(path.join(dir, "bin", "ssh"), `#!/bin/sh\nexec /usr/bin/ssh -F ${dir}/ssh.conf "$@"\n`, { mode: 0o755 });
      execFileSync("bash", ["-c", outputs.kubeconfig_command.value], {
        cwd: dir,
        env: { ...process.env, ...rehearsal.agentEnv, PATH: `${dir}/bin:${process.env.PATH}` },
        timeout: 60_000,
      });
      const kubeconfig = YAML.parse(fs.readFileSync(path.join(dir, "kubeconfig"), "utf8"));
      expect(kubeconfig.clusters.map((c: any) => c.cluster.server)).toEqual([`https://${loadBalancer.floating_ip_address}:16443`]);
    });

    it("gives every voter an API certificate naming every API address: a TLS handshake under each verifies against the cluster CA", async () => {
      // The load balancer spreads kubectl's connections over the three voters: each must present a
      // certificate valid for the master's floating IP and the load balancer's floating IP and VIP.
      const floatingIps = rehearsal.double.neutron.floatingips.all() as any[];
      const master = rehearsal.double.nova.servers.all().find((server) => server.name === MASTER) as any;
      const masterPorts = new Set(
        rehearsal.double.neutron.ports
          .all()
          .filter((port: any) => port.device_id === master.id)
          .map((port: any) => port.id),
      );
      const [loadBalancer] = rehearsal.double.octavia.loadBalancers.all() as any[];
      const addresses = [
        floatingIps.find((ip) => masterPorts.has(ip.port_id)).floating_ip_address,
        floatingIps.find((ip) => ip.description === `${DOMAIN} Kubernetes API`).floating_ip_address,
        loadBalancer.vip_address,
      ];
      const nodes = JSON.parse((await rehearsal.cloud.host(MASTER).exec("microk8s kubectl get nodes -o json")).stdout).items;
      const internalIp = (host: string) =>
        nodes
          .find((node: any) => node.metadata.name === host.split(".")[0])
          .status.addresses.find((address: any) => address.type === "InternalIP").address;
      const certs = "/var/snap/microk8s/current/certs";
      for (const host of [MASTER, ...workers(3)]) {
        expect([host, await isWorker(host)]).toEqual([host, false]);
        const sans = (await rehearsal.cloud.host(host).exec(`openssl x509 -in ${certs}/server.crt -noout -ext subjectAltName`)).stdout;
        const ips = [...sans.matchAll(/IP Address:([0-9.]+)/g)].map((match) => match[1]);
        expect([host, addresses.filter((address) => !ips.includes(address))]).toEqual([host, []]);
        // From the master, as the load balancer connects: the voter's private address, the
        // certificate checked against the cluster CA for each address a client names.
        for (const address of [...addresses, "192.0.2.1"]) {
          const handshake = await rehearsal.cloud
            .host(MASTER)
            .exec(
              `openssl s_client -connect ${internalIp(host)}:16443 -CAfile ${certs}/ca.crt -verify_ip ${address} -verify_return_error </dev/null`,
            );
          // 192.0.2.1 is no API address: the same handshake must fail, so the check can.
          expect([host, address, handshake.status === 0]).toEqual([host, address, address !== "192.0.2.1"]);
        }
      }
    });

    it("advertises each voter's private address as the kubernetes Service's endpoint, never the master's public one", async () => {
      // Without --advertise-address the dual-homed master's API server advertises its default
      // route's address, the public one, where api_allowed_cidrs may refuse in-cluster traffic.
      const privateSubnet = (rehearsal.double.neutron.subnets.all() as any[]).find((s) => s.name === `${DOMAIN}-private`).id;
      const privateAddress = (host: string) => {
        const server = rehearsal.double.nova.servers.all().find((each) => each.name === host) as any;
        const fixed = (rehearsal.double.neutron.ports.all() as any[])
          .filter((port) => port.device_id === server.id)
          .flatMap((port) => port.fixed_ips)
          .filter((ip: any) => ip.subnet_id === privateSubnet);
        return fixed.map((ip: any) => ip.ip_address);
      };
      const voters = [MASTER, ...workers(3)];
      const endpoints = JSON.parse(
        (await rehearsal.cloud.host(MASTER).exec("microk8s kubectl get endpoints kubernetes -n default -o json")).stdout,
      );
      const advertised = endpoints.subsets.flatMap((subset: any) => subset.addresses.map((address: any) => address.ip));
      expect(advertised).toEqual(voters.flatMap(privateAddress).sort());
      expect(advertised).toHaveLength(3);
    });

    it("sets root's console password on every host as a SHA-512 crypt hash of the ephemeral root_password", async () => {
      expect(scriptLines(apply.stdout)).toContain("Orchestrate: root password: set on 5 machines");
      for (const host of rehearsal.cloud.hostNames()) {
        const shadow = await rehearsal.cloud.host(host).exec("getent shadow root");
        const hash = shadow.stdout.split(":")[1];
        expect({ host, hash }).toEqual({ host, hash: expect.stringMatching(/^\$6\$[^$]+\$/) });
        const again = execFileSync("openssl", ["passwd", "-6", "-salt", hash.split("$")[2], "-stdin"], {
          input: ROOT_PASSWORD,
          encoding: "utf8",
        });
        expect({ host, hash: again.trim() }).toEqual({ host, hash });
      }
      // The plaintext passed through a directory only the deploy user can enter, and is gone.
      const secrets = await rehearsal.cloud
        .host(SALT)
        .exec("stat -c '%a %n' /home/*/.kube-on-os/secrets && ls -A /home/*/.kube-on-os/secrets");
      expect(secrets.stdout).toMatch(/^700 \/home\/[^/]+\/\.kube-on-os\/secrets\n$/);
    });

    it("keeps no key material in the state", () => {
      // The key pair's private_key attribute is there, empty: Nova made no key, the user's public one was given.
      expect(JSON.stringify(rehearsal.state.readState("rehearsal"))).not.toMatch(/PRIVATE KEY|"private_key":"[^"]/);
    });

    it("plans no changes on the next apply", async () => {
      expect((await tofu(["plan", "-detailed-exitcode", "-input=false"])).status).toBe(0);
    });

    it("previews the unchanged tree beside that plan: no changes on any host (npm run diff's Salt preview)", async () => {
      const preview = await saltPreview(tofu);
      expect({ status: preview.status, stderr: preview.stderr }).toEqual({ status: 0, stderr: "" });
      const hosts = [BASTION, MASTER, ...workers(3), SALT].sort();
      expect(byStatus(preview)).toEqual({ "no-changes": hosts });
      const lines = preview.stdout.split("\n").filter((line) => /^[a-z0-9.-]+: /.test(line));
      expect(lines.map((line) => line.replace(/\(\d+ states\)$/, "(N states)")).sort()).toEqual(
        hosts.map((host) => `${host}: no changes (N states)`),
      );
    });

    it("checks the host keys ssh_host_keys gives, and fails in one line naming the Salt master it cannot reach (a warning if asked)", async () => {
      const hostKey = async (host: string) =>
        (await rehearsal.cloud.host(host).exec("cat /etc/ssh/ssh_host_ed25519_key.pub")).stdout.trim();
      const [bastionKey, saltKey] = [await hostKey(BASTION), await hostKey(SALT)];
      const keys = (bastion: string) => ({ TF_VAR_ssh_host_keys: JSON.stringify({ bastion, salt_master: saltKey }) });
      const checked = await saltPreview(tofu, keys(bastionKey));
      expect({ status: checked.status, stderr: checked.stderr, report: checked.report.status }).toEqual({
        status: 0,
        stderr: "",
        report: "previewed",
      });
      // Another host's key for the bastion: ssh refuses it, and the preview names where it could not go.
      const refused = await saltPreview(tofu, keys(saltKey));
      const outputs = JSON.parse((await tofu(["output", "-json"])).stdout);
      const where = `the Salt master ${SALT} (${outputs.salt_preview.value.salt_master.address}) through the bastion ${outputs.bastion_floating_ip.value} as ubuntu`;
      expect({ status: refused.status, stdout: refused.stdout, report: refused.report }).toEqual({
        status: 1,
        stdout: `Salt preview: the candidate Salt tree and pillar in test mode on 5 hosts, through the Salt master ${SALT}; nothing changes on any of them\nSalt preview: cannot reach ${where}: Host key verification failed.\n`,
        report: { status: "unreachable", reason: `cannot reach ${where}: Host key verification failed.`, hosts: {} },
      });
      const warned = await saltPreview(tofu, keys(saltKey), { KUBE_ON_OS_SALT_PREVIEW: "warn" });
      expect({ status: warned.status, last: warned.stdout.trim().split("\n").at(-1) }).toEqual({
        status: 0,
        last: `Salt preview: warning: cannot reach ${where}: Host key verification failed. (KUBE_ON_OS_SALT_PREVIEW=warn)`,
      });
    });

    it("keeps sshd's hardening over a drop-in that weakens it", async () => {
      const bastion = rehearsal.cloud.host(BASTION);
      await bastion.exec("printf 'PasswordAuthentication yes\\nPermitRootLogin yes\\n' > /etc/ssh/sshd_config.d/00-weaker.conf");
      const effective = await bastion.exec("/usr/sbin/sshd -T | grep -E '^(passwordauthentication|permitrootlogin) '");
      expect(effective.stdout.split("\n").filter(Boolean).sort()).toEqual(["passwordauthentication no", "permitrootlogin no"]);
    });

    it("applies core.sshd where sshd is not running (no /run/sshd)", async () => {
      const salt = rehearsal.cloud.host(SALT);
      // A changed config is what makes Salt run its check (sshd -t), here with sshd stopped as
      // systemd leaves it: ssh.service's RuntimeDirectory /run/sshd gone with it.
      await rehearsal.cloud.host(BASTION).exec("echo '# local edit' >> /etc/ssh/sshd_config && rm -rf /run/sshd");
      const result = await salt.exec(`salt --out=json --static ${BASTION} state.apply core.sshd`, { timeoutMs: 300_000 });
      const states = JSON.parse(result.stdout)[BASTION];
      const failed = Object.values<any>(states).filter((state) => state.result !== true);
      expect(failed.map((state) => `${state.__id__}: ${state.comment}`)).toEqual([]);
    });
  });

  describe("an edit of one SLS file and of the pillar", () => {
    let apply: RunResult;
    /** The edit's Salt preview, before its apply, and every host's state around it. */
    let preview: Preview;
    let aroundPreview: [Record<string, HostState>, Record<string, HostState>];
    /** What the change did, beside its preview. */
    let change: ChangeReport;

    beforeAll(async () => {
      // A stranger's minion key waits on the Salt master, as a machine outside the plan would leave it.
      const master = rehearsal.cloud.host(SALT);
      const stranger = await master.exec(
        `salt-key --gen-keys=${STRANGER} --gen-keys-dir=/tmp && cp /tmp/${STRANGER}.pub /etc/salt/pki/master/minions_pre/${STRANGER}`,
      );
      if (stranger.status !== 0) throw new Error(`the stranger's key: ${stranger.stderr}`);
      // A kernel update on a worker asks for a reboot, as Ubuntu's notify-reboot-required does.
      const flagged = await rehearsal.cloud
        .host(id("k8s-worker-1"))
        .exec(
          "printf '*** System restart required ***\\n' > /run/reboot-required && echo linux-image-6.8.0-51-generic > /run/reboot-required.pkgs",
        );
      if (flagged.status !== 0) throw new Error(`/run/reboot-required: ${flagged.stderr}`);
      // microk8s_channel unset from here on, as a deployment left with no value of its own: the
      // cluster keeps the channel its nodes track.
      delete synthEnv.TF_VAR_microk8s_channel;
      // As npm run rehearse -- --from rehearses a change (tools/rehearsal/change.ts): its plan, the
      // plan's Salt preview, then its apply, the API probed meanwhile.
      const tofu = await workspace({}, editedSaltTree("# edited by the rehearsal"), transferPillar());
      const stack = { dir: tofu.dir, tofu };
      const planned = await planChange(stack);
      const before = await hostStates(true);
      preview = await previewChange(rehearsal, stack, planned);
      printed.push(preview.stdout, preview.stderr);
      aroundPreview = [before, await hostStates()];
      const applied = await applyChange(rehearsal, stack, planned, MASTER, [MASTER, ...workers(3)]);
      apply = applied.apply;
      change = changeReport(planned, preview, applied);
      measured.secondRun = highstates(apply.stdout);
    }, 1_500_000);

    it("previews the edit before its apply: the new file on exactly the hosts the pillar names, those the apply then changed", () => {
      expect({ status: preview.status, stderr: preview.stderr }).toEqual({ status: 0, stderr: "" });
      expect(byStatus(preview)).toEqual({
        changes: [...TRANSFERRED_TO].sort(),
        "no-changes": [MASTER, SALT, ...workers(3).filter((host) => !TRANSFERRED_TO.includes(host))].sort(),
      });
      for (const host of TRANSFERRED_TO) {
        const [state, ...others] = preview.report.hosts[host].changing;
        expect([host, others, state.function, state.result, state.changes]).toEqual([
          host,
          [],
          "file_transfer.transferred",
          null,
          { [TRANSFER.target]: expect.objectContaining({ newfile: TRANSFER.target }) },
        ]);
      }
      const changed = Object.entries(highstates(apply.stdout)).filter(([, result]) => result.changed > 0);
      expect(changed.map(([host]) => host).sort()).toEqual([...TRANSFERRED_TO].sort());
    });

    it("changes nothing on any host while it previews: files, Salt's caches and modules, daemons", () => {
      expect(changedHosts(...aroundPreview)).toEqual({});
    });

    it("reports what the change did beside its preview: no machine touched, the file on the hosts named, no node joined or left, the API answering", () => {
      expect(change.machines).toEqual({ created: [], replaced: [], destroyed: [] });
      expect(change.resources).toEqual({ add: 5, change: 0, destroy: 5 });
      expect(apply.stdout).toContain("Apply complete! Resources: 5 added, 0 changed, 5 destroyed.");
      expect(change.apply).toEqual({ seconds: expect.any(Number), succeeded: true, last: expect.stringMatching(/^RebootForUpdates: /) });
      const hosts = [BASTION, MASTER, ...workers(3), SALT].sort();
      const changes = (host: string) => (TRANSFERRED_TO.includes(host) ? 1 : 0);
      expect(change.salt).toEqual(Object.fromEntries(hosts.map((host) => [host, { changed: changes(host), failed: 0 }])));
      expect(change.membership).toEqual({ joined: [], removed: [] });
      expect(change.api.probes).toBeGreaterThan(3);
      expect(change.api).toEqual({ probes: change.api.probes, answered: change.api.probes, longestGapSeconds: 0 });
      // The preview and the apply agree, host by host.
      expect(change.preview).toEqual({
        outcome: "previewed",
        reason: null,
        hosts: Object.fromEntries(
          hosts.map((host) => [host, { previewed: changes(host) ? "changes" : "no-changes", changed: changes(host) }]),
        ),
      });
    });

    afterAll(async () => {
      await rehearsal.cloud.host(SALT).exec(`salt-key -y --delete=${STRANGER}`);
      await rehearsal.cloud.host(id("k8s-worker-1")).exec("rm -f /run/reboot-required /run/reboot-required.pkgs");
    });

    it("re-runs only the sync, the keys, the (empty) roll, the orchestration and the reboot step", () => {
      expect(outcome(apply)).toEqual({
        ...SUCCEEDED,
        last: `RebootForUpdates: reboot_for_updates is off: 1 of 3 Kubernetes nodes need a reboot for their updates: ${id("k8s-worker-1")}; set it to true to roll them`,
      });
      expect(apply.stdout).toContain("Apply complete! Resources: 5 added, 0 changed, 5 destroyed.");
      expect(stepsRun(apply.stdout)).toEqual(["SyncSaltTree", "AcceptMinionKeys", "Upgrade", "Orchestrate", "RebootForUpdates"]);
      expect(scriptLines(apply.stdout)).toContain(
        `Upgrade: microk8s_channel unset: the cluster keeps ${FIRST_CHANNEL}, the channel its nodes track; nothing to roll`,
      );
    });

    it("accepts no key it does not expect: the stranger's stays pending", async () => {
      expect(scriptLines(apply.stdout)).toContain(`AcceptMinionKeys: unexpected minion key left pending: ${STRANGER}`);
      const keys = JSON.parse((await rehearsal.cloud.host(SALT).exec("salt-key --list=all --out=json")).stdout);
      expect(keys.minions_pre).toEqual([STRANGER]);
      expect(keys.minions).not.toContain(STRANGER);
    });

    it("finds every host as the first run left it: every highstate changes nothing but the transferred file", () => {
      const results = highstates(apply.stdout);
      expect(Object.keys(results).sort()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort());
      const changed = Object.entries(results).map(([minion, result]) => [minion, result.changed, result.failed]);
      expect(changed).toEqual(Object.keys(results).map((minion) => [minion, TRANSFERRED_TO.includes(minion) ? 1 : 0, 0]));
    });

    it("transfers the pillar's file to exactly the hosts it names, and a second run changes nothing", async () => {
      for (const host of rehearsal.cloud.hostNames()) {
        const held = await rehearsal.cloud.host(host).exec(`stat -c '%a %U %G' ${TRANSFER.target} && cat ${TRANSFER.target}`);
        const named = TRANSFERRED_TO.includes(host);
        expect([host, held.status === 0 ? held.stdout : "none"]).toEqual([host, named ? `640 root root\n${TRANSFER.text}` : "none"]);
      }
      const again = await rehearsal.cloud.host(SALT).exec("salt --out=json --static '*' state.apply file_transfer");
      const results = Object.entries<any>(JSON.parse(again.stdout)).map(([minion, states]) => {
        const [state] = Object.values<any>(states);
        return [minion, state.result, state.changes];
      });
      expect(results.sort()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort().map((minion) => [minion, true, {}]));
    });

    it("previews a pillar edit that sends another file there: its diff on exactly those hosts, changing none and showing no secret", async () => {
      const tofu = await workspace({}, editedSaltTree("# edited by the rehearsal"), transferPillar(TRANSFER.next.source));
      const before = await hostStates(true);
      const rotated = await saltPreview(tofu);
      expect(changedHosts(before, await hostStates())).toEqual({});
      expect({ status: rotated.status, stderr: rotated.stderr }).toEqual({ status: 0, stderr: "" });
      expect(byStatus(rotated)).toEqual({
        changes: [...TRANSFERRED_TO].sort(),
        "no-changes": [MASTER, SALT, ...workers(3).filter((host) => !TRANSFERRED_TO.includes(host))].sort(),
      });
      // Each host's block: its line, then its states' lines, indented.
      const blocks = Object.fromEntries(rotated.stdout.split(/\n(?=\S)/).map((block) => [block.split(":")[0], block.split("\n")]));
      for (const host of TRANSFERRED_TO) {
        expect(blocks[host].map((line) => line.trim())).toEqual(
          expect.arrayContaining([`${TRANSFER.target}:`, "-rehearsal", "+rehearsal, rotated"]),
        );
      }
      expect(cloudSecret).not.toBe("");
      for (const secret of [ROOT_PASSWORD, cloudSecret]) expect(rotated.stdout + JSON.stringify(rotated.report)).not.toContain(secret);
    });
  });

  describe("scaling to 5 nodes", () => {
    let apply: RunResult;

    beforeAll(async () => {
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "5" });
      apply = await tofu(["apply", "-auto-approve", "-input=false"]);
    }, 1_500_000);

    it("boots the two new workers and fails nothing on the hosts that were there", () => {
      expect(outcome(apply)).toEqual(SUCCEEDED);
      expect(rehearsal.cloud.hostNames()).toEqual([BASTION, MASTER, ...workers(5), SALT].sort());
      const results = highstates(apply.stdout);
      expect(Object.keys(results).sort()).toEqual([BASTION, MASTER, ...workers(5), SALT].sort());
      expect(Object.entries(results).filter(([, result]) => result.failed > 0)).toEqual([]);
    });

    it("joins the new nodes as workers past the three voters, every node Ready and initialized by the cloud controller manager", async () => {
      expect(await readyNodes()).toEqual(["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"]);
      expect(await cloudInitialized()).toEqual(
        await serversAsLabels(["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"]),
      );
      expect(await voters()).toBe(3);
      for (const worker of workers(5).slice(2)) expect(await isWorker(worker)).toBe(true);
      for (const voter of workers(5).slice(0, 2)) expect(await isWorker(voter)).toBe(false);
    });

    it("installs the channel the cluster tracks on the new nodes, microk8s_channel being unset", async () => {
      for (const worker of workers(5).slice(2)) {
        const snap = await rehearsal.cloud.host(worker).exec("snap list microk8s");
        expect(snap.stdout.split("\n")[1].split(/\s+/)[3]).toBe(FIRST_CHANNEL);
      }
    });
  });

  describe(`rolling microk8s_channel from ${FIRST_CHANNEL} to ${NEXT_CHANNEL} on 5 nodes, one minor at a time`, () => {
    let apply: RunResult;

    beforeAll(async () => {
      // A voter's status lists no dqlite member twice (microk8s#2190), as a transient dqlite
      // failure does: its highstate in the orchestration after the roll reads it again, and
      // nothing leaves or rejoins.
      const faulted = await rehearsal.cloud
        .host(id("k8s-worker-0"))
        .exec(`echo '{"status_dqlite_empty": 2}' > /var/snap/microk8s/current/fake/faults.json`);
      if (faulted.status !== 0) throw new Error(`injecting the fault: ${faulted.stderr}`);
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "5", TF_VAR_microk8s_channel: NEXT_CHANNEL });
      const t0 = Date.now();
      apply = await tofu(["apply", "-auto-approve", "-input=false"]);
      rolled = apply;
      measured.upgradeApplySeconds = Math.round((Date.now() - t0) / 1000);
      measured.upgrade = scriptLines(apply.stdout).filter((line) => line.startsWith("Upgrade: "));
      // From here on the cluster runs the new channel: going back would be refused as a downgrade.
      synthEnv.TF_VAR_microk8s_channel = NEXT_CHANNEL;
    }, 1_500_000);

    it("drains, refreshes, waits for and uncordons one node at a time, control plane first, before orch.deploy", async () => {
      expect(outcome(apply)).toEqual(SUCCEEDED);
      const lines = scriptLines(apply.stdout);
      const order = [MASTER, ...workers(5)];
      const steps = lines.filter((line) => / nodes to 1\.\d+ /.test(line));
      expect(steps).toEqual([
        `Upgrade: microk8s_channel ${NEXT_CHANNEL}: rolling 5 of 5 nodes to 1.30 one minor at a time, in 2 steps: ${ROLL_STEPS.join(", ")}`,
        ...ROLL_STEPS.map(
          (step, i) =>
            `Upgrade: microk8s_channel ${NEXT_CHANNEL}: rolling 5 of 5 nodes to ${step.split("/")[0]} (step ${i + 1} of 2), one at a time: ${order.join(", ")}`,
        ),
      ]);
      const rolls = lines.filter((line) => /^Upgrade: orchestration orch\.upgrade (succeeded|failed)/.test(line));
      expect(rolls).toHaveLength(ROLL_STEPS.length);
      for (const roll of rolls) expect(roll).toMatch(/^Upgrade: orchestration orch\.upgrade succeeded in \d+ s/);
      // Each node's snap refresh (microk8s.upgrade) returns before the next node is drained, and
      // every node reaches a minor before any goes on: per-host lines in the roll's order, one
      // per node and minor, none failed.
      const refreshes = lines.flatMap((line) => /^Upgrade: \[([^\]]+)\] state\.sls: .*, 0 failed/.exec(line)?.[1] ?? []);
      expect(refreshes).toEqual(ROLL_STEPS.flatMap(() => order));
    });

    it("leaves every node Ready and schedulable at 1.30, with its 3 voters", async () => {
      const nodes = JSON.parse((await rehearsal.cloud.host(MASTER).exec("microk8s kubectl get nodes -o json")).stdout).items.sort(
        (a: any, b: any) => a.metadata.name.localeCompare(b.metadata.name),
      );
      expect(
        nodes.map((node: any) => [
          node.metadata.name,
          node.status.nodeInfo.kubeletVersion.split(".").slice(0, 2).join("."),
          !!node.spec.unschedulable,
        ]),
      ).toEqual(["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"].map((name) => [name, "v1.30", false]));
      expect(await readyNodes()).toEqual(["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"]);
      expect(await voters()).toBe(3);
    });
  });

  describe("the orchestration after the roll, on 5 nodes", () => {
    let apply: RunResult;

    beforeAll(() => {
      // The roll's apply went on to orch.deploy, a re-apply of every highstate.
      apply = rolled;
    });

    it("fails and changes nothing on any host, the --worker nodes included", () => {
      expect(outcome(apply)).toEqual(SUCCEEDED);
      const results = highstates(apply.stdout);
      expect(Object.keys(results).sort()).toEqual([BASTION, MASTER, ...workers(5), SALT].sort());
      expect(Object.entries(results).filter(([, result]) => result.changed > 0 || result.failed > 0)).toEqual([]);
    });

    it("rides out a transient empty member list: the voter stays, no member is removed", async () => {
      const faults = await rehearsal.cloud.host(id("k8s-worker-0")).exec("cat /var/snap/microk8s/current/fake/faults.json");
      // Both empty readings were spent (the fake removes a fault at 0).
      expect(JSON.parse(faults.stdout || "{}")).toEqual({});
      expect(await voters()).toBe(3);
      expect(await isWorker(id("k8s-worker-0"))).toBe(false);
      expect(await readyNodes()).toEqual(["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"]);
    });
  });

  describe("rolling a --worker node, a voter and the master onto new machines (npm run roll -- --nodes), on 5 nodes", () => {
    beforeAll(async () => {
      beforeRoll = servers();
      objectsBeforeRoll = await kubeObjects(WORKLOADS);
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "5" });
      const t0 = Date.now();
      // Given out of order: the roll puts them in its own.
      roll = await tofu.roll(["--nodes", ["k8s-master", "k8s-worker-1", "k8s-worker-3"].join(","), "--auto-approve"]);
      measured.rollSeconds = Math.round((Date.now() - t0) / 1000);
      for (const [i, output] of roll.stdout
        .split(/^Apply complete! Resources: .*$/m)
        .slice(0, -1)
        .entries()) {
        rollApplies.set(ROLL_ORDER[i], output);
      }
    }, 3_000_000);

    it("replaces the worker, then the voter, the master last: one apply each, each of them on a new machine", () => {
      // A failed roll shows its last lines here (toMatchObject would hide them): first the chain's
      // last line, the cause (CI's log may keep only the top of a long diff), then where it was.
      const lines = scriptLines(roll.stdout);
      const last = roll.status === 0 ? [] : [lines.at(-1), ...roll.stderr.trimEnd().split("\n").slice(-3), ...lines.slice(-15, -1)];
      expect({ status: roll.status, last }).toEqual({ status: 0, last: [] });
      expect(roll.stderr).toContain(`kube-on-os: roll: 3 Kubernetes nodes, one at a time: ${ROLL_ORDER.join(", ")}`);
      expect(roll.stderr).toContain("kube-on-os: roll: 3 nodes on new machines");
      expect([...rollApplies.keys()]).toEqual(ROLL_ORDER);
      for (const [host, output] of rollApplies) {
        // Each apply deletes one machine, this node's, and its chain ends with every node Ready.
        expect([host, [...output.matchAll(/^openstack_compute_instance_v2\.\S+: Destruction complete/gm)].length]).toEqual([host, 1]);
        expect([host, outcome({ status: 0, stdout: output, stderr: "" }).last]).toEqual([host, NO_REBOOT]);
        const orchestrated = scriptLines(output).filter((line) => /^Orchestrate: orchestration orch\.deploy succeeded /.test(line));
        expect([host, orchestrated.length]).toEqual([host, 1]);
        // Only this node's machine changed: orch.deploy highstates the new machine and the master
        // that issues its token, no other host; a new master takes the whole run.
        const highstated = Object.keys(highstates(output)).sort();
        const whole = [BASTION, MASTER, ...workers(5), SALT].sort();
        expect([host, highstated]).toEqual([host, host === "k8s-master" ? whole : [MASTER, id(host)].sort()]);
      }
      const after = servers();
      for (const host of ROLL_ORDER) expect([host, after.get(host)]).not.toEqual([host, beforeRoll.get(host)]);
      for (const host of [...KEPT, "bastion", "salt"]) expect([host, after.get(host)]).toEqual([host, beforeRoll.get(host)]);
    });

    it("keeps the cluster: its 3 voters, its --worker nodes, every node Ready, and the objects it held", async () => {
      expect(await readyNodes()).toEqual(["k8s-master", "k8s-worker-0", "k8s-worker-1", "k8s-worker-2", "k8s-worker-3"]);
      expect(await voters()).toBe(3);
      for (const host of ["k8s-master", "k8s-worker-0", "k8s-worker-1"]) expect([host, await isWorker(id(host))]).toEqual([host, false]);
      for (const host of ["k8s-worker-2", "k8s-worker-3"]) expect([host, await isWorker(id(host))]).toEqual([host, true]);
      // The workloads, their Secret and the default class, as the cluster's database held them.
      expect(await kubeObjects(WORKLOADS)).toEqual(objectsBeforeRoll);
    });
  });

  // The roll's applies but the last, each a -replace of one machine: a --worker node, then a
  // voter other than the master.
  describe("replacing a worker's machine (-replace)", () => {
    const replaced = ROLL_ORDER.slice(0, -1);

    it("accepts the new machine's key with no manual step, restarting its minion", () => {
      for (const host of replaced) {
        const lines = scriptLines(rollApplies.get(host) ?? "");
        expect(lines).toContainEqual(
          expect.stringMatching(new RegExp(`^AcceptMinionKeys: deleted the minion key of ${id(host)}: its machine `)),
        );
        expect(lines).toContain(`AcceptMinionKeys: accepted minion key: ${id(host)}`);
        expect(lines).toContain(
          `AcceptMinionKeys: restarting salt-minion on ${id(host)}: a minion whose key was denied returns nothing until it restarts`,
        );
        expect(lines).toContain("AcceptMinionKeys: all 7 minions answer test.ping");
      }
    });

    it("rejoins the cluster: the orchestration succeeds and the node is Ready again", () => {
      for (const host of replaced) {
        // orch.deploy's cluster check passed with this node Ready on its new machine.
        const lines = scriptLines(rollApplies.get(host) ?? "");
        expect([host, lines.filter((line) => /^Orchestrate: orchestration orch\.deploy succeeded /.test(line)).length]).toEqual([host, 1]);
        expect([host, highstates(rollApplies.get(host) ?? "")[id(host)]?.failed]).toEqual([host, 0]);
      }
    });

    it("drains the node before its machine goes, and puts it back in service once the new one is Ready", async () => {
      for (const host of replaced) {
        const lines = (rollApplies.get(host) ?? "").split("\n");
        const drained = lines.findIndex((line) =>
          new RegExp(`\\(remote-exec\\): drained node ${host} \\(10\\.1\\.0\\.\\d+\\) on ${MASTER} before its machine is deleted$`).test(
            line,
          ),
        );
        const destroyed = lines.findIndex((line) => /^openstack_compute_instance_v2\.\S+: Destruction complete/.test(line));
        expect([host, drained > -1 && drained < destroyed]).toEqual([host, true]);
      }
      // No node left cordoned: orch.deploy uncordons each once its new machine is Ready.
      expect(await cordoned()).toEqual([]);
    });
  });

  // The roll's last apply.
  describe("rebuilding the Kubernetes master (-replace)", () => {
    it("joins the existing cluster through a voter instead of starting a new one", async () => {
      expect(scriptLines(rollApplies.get("k8s-master") ?? "")).toContain(`AcceptMinionKeys: accepted minion key: ${MASTER}`);
      expect(await voters()).toBe(3);
      expect(await isWorker(MASTER)).toBe(false);
      // One cluster: the rebuilt master has the voters' CA (a control-plane join copies it).
      const ca = async (host: string) =>
        (await rehearsal.cloud.host(host).exec("sha256sum /var/snap/microk8s/current/certs/ca.crt")).stdout.split(" ")[0];
      expect(await ca(MASTER)).toMatch(/^[0-9a-f]{64}$/);
      expect(await ca(MASTER)).toBe(await ca(id("k8s-worker-0")));
      expect(await ca(id("k8s-worker-1"))).toBe(await ca(id("k8s-worker-0")));
    });

    it("was drained by the next voter before its machine went, and is back in service", async () => {
      expect(scriptLines(rollApplies.get("k8s-master") ?? "")).toContain(
        `MasterDrain: drained node k8s-master (10.1.0.10) on ${id("k8s-worker-0")} before its machine is deleted`,
      );
      expect(await cordoned()).toEqual([]);
    });

    it("issues the join tokens again once it is back", async () => {
      const issuer = await rehearsal.cloud.host(SALT).exec(`salt --out=json --static ${id("k8s-worker-1")} microk8s.issuer`);
      expect(JSON.parse(issuer.stdout)).toEqual({ [id("k8s-worker-1")]: MASTER });
    });

    it("kept the quorum throughout: no fake microk8s read or wrote the cluster's database without a majority of its voters", () => {
      const logs = fakeRecords("quorum.log");
      // The three first machines, the two added, and the three the roll put in their place.
      expect(Object.keys(logs).length).toBe(8);
      expect(Object.entries(logs).filter(([, log]) => log !== "")).toEqual([]);
    });

    it("never removed a voter while its node was Ready", () => {
      expect(Object.entries(fakeRecords("voter-removals.log")).filter(([, log]) => log !== "")).toEqual([]);
    });
  });

  // The same apply rotates the cluster's application credential (-replace), as docs/deploying.md
  // says to.
  describe("scaling back to 3 nodes", () => {
    let apply: RunResult;
    let credential: string;
    let before: Record<string, any>;

    beforeAll(async () => {
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "3" });
      const state = await tofu(["state", "list"]);
      credential =
        state.stdout
          .split("\n")
          .find((line) => /^openstack_identity_application_credential_v3\.CloudIntegration_Credential_[0-9A-F]{8}(\[0\])?$/.test(line)) ??
        "";
      before = await kubeObjects(WORKLOADS);
      apply = await tofu(["apply", "-auto-approve", "-input=false", `-replace=${credential}`]);
    }, 1_500_000);

    it("removes the departed nodes from the cluster and their keys, then their machines", async () => {
      expect(outcome(apply)).toEqual(SUCCEEDED);
      const lines = scriptLines(apply.stdout);
      for (const [index, worker] of [
        [2, id("k8s-worker-2")],
        [3, id("k8s-worker-3")],
      ] as const) {
        expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^NodeMembership\\[${index}\\]: removed node ${worker} `)));
        expect(lines).toContain(`NodeMembership[${index}]: deleted minion key: ${worker}`);
      }
      expect(rehearsal.cloud.hostNames()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort());
      expect(await readyNodes()).toEqual(["k8s-master", "k8s-worker-0", "k8s-worker-1"]);
      const keys = await rehearsal.cloud.host(SALT).exec("salt-key --list=all --out=json");
      expect(JSON.parse(keys.stdout).minions.sort()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort());
    });

    it("rotates the application credential: the Secret gets the new one, and the controller manager's and Cinder CSI's pods, which read it only at start, roll", async () => {
      expect(credential).not.toBe("");
      const after = await kubeObjects(WORKLOADS);
      const conf = (objects: Record<string, any>) =>
        Buffer.from(objects["Secret/kube-system/cloud-config"].data["cloud.conf"], "base64").toString();
      const credentialId = (text: string) => /^application-credential-id = "([^"]+)"$/m.exec(text)?.[1];
      const live = rehearsal.double.keystone.applicationCredentials.all().map((c: any) => c.id);
      expect(credentialId(conf(after))).not.toBe(credentialId(conf(before)));
      expect(live).toContain(credentialId(conf(after)));
      expect(live).not.toContain(credentialId(conf(before)));
      retiredSecrets.push(cloudSecret);
      cloudSecret = (rehearsal.double.keystone.applicationCredentials.all() as any[]).find(
        (c) => c.id === credentialId(conf(after)),
      ).secret;
      const checksum = crypto.createHash("sha256").update(conf(after)).digest("hex");
      for (const ref of WORKLOADS.filter((ref) => /^(DaemonSet|Deployment)\//.test(ref))) {
        // A new pod template, its generation one more: the controller replaces every pod.
        expect([ref, after[ref].spec.template.metadata.annotations["kube-on-os/cloud-conf-sha256"]]).toEqual([ref, checksum]);
        expect([ref, after[ref].metadata.generation]).toEqual([ref, before[ref].metadata.generation + 1]);
      }
    });
  });

  describe("scaling to 2 nodes", () => {
    it("is refused at plan time: the cluster keeps its 3 voters, and nothing changes", async () => {
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "2" });
      const plan = await tofu(["plan", "-input=false"]);
      expect(plan.status).toBe(1);
      expect(plan.stderr.replace(/\s+/g, " ")).toContain(
        "num_kube_nodes: the cluster's control plane has 3 dqlite voters (the first 3 nodes) and must keep them;",
      );
      expect(await voters()).toBe(3);
      expect(rehearsal.cloud.hostNames()).toEqual([BASTION, MASTER, ...workers(3), SALT].sort());
    });
  });

  describe("destroy", () => {
    // For `npm run bench:rehearsal`: what the Salt master published over the whole rehearsal, from its
    // job cache (Salt keeps a day of jobs): each function's jobs, and the minions they named.
    beforeAll(async () => {
      if (!REPORT) return;
      const listed = await rehearsal.cloud.host(SALT).exec("salt-run --out=json jobs.list_jobs");
      if (listed.status !== 0) throw new Error(`salt-run jobs.list_jobs failed: ${listed.stderr}`);
      const jobs: Record<string, { jobs: number; targets: number }> = {};
      for (const job of Object.values<any>(JSON.parse(listed.stdout))) {
        const counted = (jobs[job.Function] ??= { jobs: 0, targets: 0 });
        counted.jobs += 1;
        counted.targets += Array.isArray(job.Target) ? job.Target.length : 1;
      }
      measured.saltJobs = Object.fromEntries(Object.entries(jobs).sort(([, a], [, b]) => b.targets - a.targets));
      // And the seconds each state function took, summed over the hosts' state runs.
      const script = fs.readFileSync(path.join(__dirname, "doubles", "rehearsal", "state-seconds.py"), "utf8");
      const seconds = await rehearsal.cloud.host(SALT).exec("/opt/saltstack/salt/bin/python3 -", { input: script });
      if (seconds.status !== 0) throw new Error(`state-seconds.py failed: ${seconds.stderr}`);
      measured.stateSeconds = JSON.parse(seconds.stdout);
    }, 120_000);

    it("never showed root_password (not in any output, the state, a plan, the hosts' files or logs) nor the cluster's credential (in no output or log)", async () => {
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "3" });
      await tofu(["plan", "-input=false", "-out=plan.cache"]);
      printed.push((await tofu(["show", "-json", "plan.cache"])).stdout);
      expect(printed.length).toBeGreaterThan(20);
      expect(printed.filter((text) => text.includes(ROOT_PASSWORD))).toEqual([]);
      // Nor the cluster's application credential, which the Salt master's pillar and the
      // cluster's Secret hold, but no output and no log.
      expect(cloudSecret).not.toBe("");
      // (A saved plan's JSON, `show -json plan.cache`, carries the state's values, the sensitive
      // ones too, as Terraform documents: it is a file for programs, not an output.)
      const shown = printed.filter((text) => !text.startsWith('{"format_version"'));
      for (const secret of [cloudSecret, ...retiredSecrets]) expect(shown.filter((text) => text.includes(secret)).length).toBe(0);
      // Besides /srv/pillar, the Salt master keeps each minion's pillar in its minion data cache
      // (root only), and holds it for the Kubernetes master alone.
      const cached = await rehearsal.cloud.host(SALT).exec(`grep -rlF -- '${cloudSecret}' /var/cache/salt/master/minions`);
      expect(cached.stdout).toBe(`/var/cache/salt/master/minions/${MASTER}/data.p\n`);
      for (const host of [SALT, MASTER]) {
        for (const secret of [cloudSecret, ...retiredSecrets]) {
          const logs = await rehearsal.cloud
            .host(host)
            .exec(`grep -rlF --exclude-dir=minions -- '${secret}' /var/log /var/cache/salt /tmp /home /root`);
          expect({ host, files: logs.stdout }).toEqual({ host, files: "" });
        }
      }
      expect(JSON.stringify(rehearsal.state.readState("rehearsal"))).not.toContain(ROOT_PASSWORD);
      // What each host wrote (its overlay's upper layer, the Salt volume), and the rehearsal's
      // own files (workspaces, the cloud's seeds and logs), but not the volumes' raw images.
      const grep = (dir: string): string[] =>
        fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
          const file = path.join(dir, entry.name);
          if (entry.isDirectory()) return grep(file);
          return entry.isFile() && !file.endsWith(".img") && fs.readFileSync(file).includes(ROOT_PASSWORD) ? [file] : [];
        });
      expect(grep(rehearsal.dir)).toEqual([]);
      const onVolume = await rehearsal.cloud.host(SALT).exec(`grep -rlF '${ROOT_PASSWORD}' /srv /var/log /var/cache/salt /tmp /home /root`);
      expect(onVolume.stdout).toBe("");
    });

    it("removes every machine and leaves the double as seeded", async () => {
      const tofu = await workspace({ TF_VAR_num_kube_nodes: "3" });
      const destroy = await tofu(["destroy", "-auto-approve", "-input=false"]);
      expect({ status: destroy.status, stderr: destroy.stderr }).toEqual({ status: 0, stderr: "" });
      await rehearsal.cloud.settled();
      expect(rehearsal.cloud.hostNames()).toEqual([]);
      expect(rehearsal.double.resourceCount()).toBe(0);
    });
  });
});
