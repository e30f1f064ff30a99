/**
 * L3: the upgrade matrix. Each earlier version's stack, exactly as that version's own code
 * synthesized it (__tests__/fixtures/upgrade/<commit>.json, made by scripts/upgrade-fixtures.sh),
 * is applied once against one OpenStack API double; today's stack is then planned from the same
 * state on OpenTofu and on Terraform, as a user who pulls main and runs `npm run diff` would. No
 * instance, volume or volume attachment may be replaced or destroyed (docs/provisioning.md,
 * "Upgrading a running cluster"). A version that differs from an earlier one only in its chain
 * deploys that one's stack here, and that one's result stands for both (SAME_STACK_AS).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { isDeepStrictEqual } from "node:util";
import { NOBLE_IMAGE, OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { synthStack } from "./support/synth";
import { initOffline, RunResult, runTf, runTfAsync, TfCli, tfClis } from "./support/tofu";
import { ADDED_SINCE_A4E49BC, changesOf, MACHINE_TYPES, planOf, plannedChanges, taggingOf } from "./support/upgrade";
import { Workspace, workspace } from "./support/workspace";

const FIXTURES = path.join(__dirname, "fixtures", "upgrade");

/** The earlier versions, oldest first (versions.txt: "<commit> <date>"). */
const VERSIONS = fs
  .readFileSync(path.join(FIXTURES, "versions.txt"), "utf8")
  .trim()
  .split("\n")
  .map((line) => line.split(" ")[0]);

/** Newer builds of the default image, under its name, as clouds publish them: one per CLI's test. */
const NEWER_NOBLE = {
  tofu: { id: "9a4c6e1f-2b3d-4f5a-8c7e-1d2f3a4b5c6d", name: NOBLE_IMAGE.name },
  terraform: { id: "3e5b7d9f-4a6c-4e8b-9d1f-5c7e9a1b3d5f", name: NOBLE_IMAGE.name },
};

let double: OpenStackDouble;
let state: StateServer;
/** Every directory the suite makes, removed at its end. */
const scratch: string[] = [];

function scratchDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  scratch.push(dir);
  return dir;
}

beforeAll(async () => {
  double = await startOpenStackDouble({ settled: true });
  state = await startStateServer({ username: "gitlab-ci-token", password: "state-password-7c2e" });
  // One project holds a deployment of every version side by side.
  Object.assign(double.nova.quotas, { instances: -1, cores: -1, ram: -1, server_groups: -1, server_group_members: -1 });
  for (const quotas of [double.neutron.quotas, double.cinder.quotas, double.octavia.quotas] as Record<string, number>[]) {
    for (const quota of Object.keys(quotas)) quotas[quota] = -1;
  }
});

afterAll(async () => {
  await double?.close();
  await state?.close();
  for (const dir of scratch) fs.rmSync(dir, { recursive: true, force: true });
});

afterEach(() => {
  expect(double.unhandled).toEqual([]);
});

/** A deployment of its own in the shared double: its domain names every machine and resource. */
function deploymentEnv(deployment: string): NodeJS.ProcessEnv {
  return { TF_VAR_deploy_domain_name: `${deployment}.kube-on-os`, TF_VAR_run_provisioners: "false" };
}

/** Today's stack for `deployment`, synthesized and initialised against a fresh state (support/workspace.ts). */
function todaysWorkspace(cli: TfCli, deployment: string, extra: NodeJS.ProcessEnv = {}): Promise<Workspace> {
  const env = { ...deploymentEnv(deployment), ...extra };
  return workspace(double, state, env, env, cli);
}

async function mustRun(run: (args: string[]) => Promise<RunResult>, args: string[]): Promise<RunResult> {
  const result = await run(args);
  if (result.status !== 0) throw new Error(`${args.join(" ")} failed (${result.status}):\n${result.stderr}${result.stdout}`);
  return result;
}

/** The stack `version` synthesized (its fixture). */
function fixture(version: string): any {
  return JSON.parse(fs.readFileSync(path.join(FIXTURES, `${version}.json`), "utf8"));
}

/**
 * What `version` deploys without the provisioning chain, as the matrix applies it
 * (run_provisioners = false): its fixture less the steps whose count that variable sets to 0. Two
 * versions that differ only in their chain (a landing that changed only salt/ or provisioners/)
 * deploy the very same resources here.
 */
function withoutChain(version: string): any {
  const json = fixture(version);
  for (const type of ["null_resource", "terraform_data"]) {
    for (const [name, step] of Object.entries<any>(json.resource[type] ?? {})) {
      if (/^\$\{var\.run_provisioners \? .* : 0\}$/.test(String(step.count))) delete json.resource[type][name];
    }
  }
  return json;
}

/**
 * For a version whose stack without the chain is an earlier version's, that earlier version: its
 * deployment and plan stand for both, and the matrix applies each distinct stack once.
 */
const SAME_STACK_AS: Record<string, string> = {};
for (const [index, version] of VERSIONS.entries()) {
  const stack = withoutChain(version);
  const earlier = VERSIONS.slice(0, index).find((other) => !SAME_STACK_AS[other] && isDeepStrictEqual(withoutChain(other), stack));
  if (earlier) SAME_STACK_AS[version] = earlier;
}

/** The fixture in a directory of its own, its state in the state server like the pipeline's. */
function oldStackDir(version: string): string {
  const json = fixture(version);
  json.terraform.backend = { http: { lock_method: "POST", unlock_method: "DELETE" } };
  const dir = scratchDir(`kube-on-os-upgrade-${version}-`);
  fs.writeFileSync(path.join(dir, "cdk.tf.json"), JSON.stringify(json, null, 2));
  return dir;
}

/**
 * What today's stack plans for a deployment of each version: every version's fixture comes with
 * it, and CHANGELOG.md says the same to users.
 */
const PLANNED: Record<string, string[]> = {
  dc03610: ADDED_SINCE_A4E49BC,
  aa9f996: ADDED_SINCE_A4E49BC,
  "5d1b2ac": ADDED_SINCE_A4E49BC,
  d16dae6: ADDED_SINCE_A4E49BC,
  a4e49bc: ADDED_SINCE_A4E49BC,
  // The last landing before the machines kept their cloud-init, keypair and boot volume.
  "52e716f": [],
  // microk8s_channel unset by default (issue 33).
  d4814a2: [],
  // The quota check with what the project uses (the quota_usage variable).
  "1f0d499": [],
  // The drain records and `npm run roll` (the chain is left out here: no change).
  "8aaeaf3": [],
  // New machines start Salt with its options (their cloud-init writes them).
  ddcbeec: [],
  // snapd's refreshes held, forget_member by the members (Salt only: the chain alone changes).
  "600dfd0": [],
  // Every voter's certificate and the cloud-config checksum (Salt only: the chain alone changes).
  "41386fe": [],
  // The minions' loader options (new machines' cloud-init writes them; Salt does on running ones).
  "40f2d10": [],
  // orch.deploy of the new machines alone after a replacement (Salt only: the chain alone changes).
  "91cd1cd": [],
  // The provisioners' shared file write and Salt roots (a refactoring: the chain alone changes).
  "77ee009": [],
  // The roll waits on snapd's refresh change (Salt only: the chain alone changes).
  "2695ec6": [],
  // Drains delete unmanaged pods (Salt only: the chain alone changes).
  "4fe7df1": [],
  // The cloud controller manager initializes every node (Salt only: the chain alone changes).
  "4a204c8": [],
  // The plan reads keypair_name and the boot volume types (data sources only: nothing to add).
  "813c638": [],
  // Minions take their options before the Salt master restarts (Salt only: the chain alone changes).
  b2beac6: [],
  // A cluster has 256 nodes at most (validation only: nothing to add).
  "941f98a": [],
  // The file_transfer state (Salt only: the chain alone changes).
  "81b5318": [],
  // The code reorganized (issue 36): the same resources; new Salt tree and scripts, so the chain.
  "26ca896": [],
  // orch.minions waits 120 s for its minions' returns (Salt only: the chain alone changes).
  "62296c0": [],
  // The sync clears the master's cached file list (provisioners only: the chain alone changes).
  "04dbac9": [],
  // Every minion asks again when denied (Salt only: the chain alone changes; user_data is built once).
  "4d23409": [],
  // The Salt master's preview environment (Salt only: the chain alone changes; user_data is built once).
  adab621: [],
  // preview.sh on the Salt master (provisioners only: the chain alone changes).
  a94b501: [],
  // The Salt preview beside the plan: the salt_preview output, the pillar's data a local of its own.
  "25ff643": [],
  // The preview puts the master's map of the roots' files back (provisioners only: the chain alone changes).
  "8d76604": [],
};

it("keeps one fixture per version listed, and says what today's stack plans for each", () => {
  const fixtures = fs.readdirSync(FIXTURES).filter((file) => file.endsWith(".json"));
  expect(fixtures.sort()).toEqual(VERSIONS.map((version) => `${version}.json`).sort());
  expect(Object.keys(PLANNED).sort()).toEqual([...VERSIONS].sort());
});

/**
 * Variable defaults that changed since an earlier version, and why a running cluster made with
 * the old one sees no change. Any other changed default fails the test below: a default whose
 * change would act on running machines must reach new deployments only (issue 33).
 */
const CHANGED_DEFAULTS: Record<string, string> = {
  base_image: "machines keep the image they were built with (constructs/machine.ts, BUILT_ONCE)",
  microk8s_channel:
    "null keeps the channel the nodes track (kube_on_os.microk8s_channel, upgrade.sh); a new cluster's is Salt's new_cluster_channel",
};

it("keeps every variable an earlier version had, with its default, but those CHANGED_DEFAULTS explains", async () => {
  const today = (await synthStack({})).variable;
  for (const version of VERSIONS) {
    const old = fixture(version).variable;
    expect({ version, gone: Object.keys(old).filter((name) => !(name in today)) }).toEqual({ version, gone: [] });
    const changed = Object.keys(old).filter((name) => !isDeepStrictEqual(old[name].default, today[name].default));
    expect({ version, changed: changed.filter((name) => !(name in CHANGED_DEFAULTS)) }).toEqual({ version, changed: [] });
  }
});

/**
 * Versions that some CLI could never apply, so no deployment of theirs exists to upgrade on it,
 * with the line the apply fails with.
 */
const NEVER_APPLIED: Record<string, string> = {
  // Terraform evaluates both sides of || (fixed by 4793aa9, before aa9f996).
  "dc03610 terraform": 'Call to function "coalesce" failed: no non-null, non-empty-string arguments.',
};

describe.each(VERSIONS)("upgrading a deployment made by %s", (version) => {
  const sameStackAs = SAME_STACK_AS[version];
  if (sameStackAs) {
    describe.each(tfClis())("on $name", (cli) => {
      it(`deploys without the chain the very stack ${sameStackAs} deploys, valid on this CLI: that upgrade stands for this one`, () => {
        expect(withoutChain(version)).toEqual(withoutChain(sameStackAs));
        expect(PLANNED[version]).toEqual(PLANNED[sameStackAs]);
        expect(NEVER_APPLIED[`${version} ${cli.name}`]).toBe(NEVER_APPLIED[`${sameStackAs} ${cli.name}`]);
        // Its chain too is a configuration the CLI takes, though it deploys nothing here.
        const dir = oldStackDir(version);
        initOffline(dir, cli);
        const validated = runTf(cli, ["validate"], dir);
        expect(validated.stderr).toBe("");
        expect(validated.status).toBe(0);
      });
    });
    return;
  }
  describe.each(tfClis())("on $name", (cli) => {
    const deployment = `${version}-${cli.name}`;
    const neverApplied = NEVER_APPLIED[`${version} ${cli.name}`];
    let installed: RunResult;
    let today: Workspace;
    let plan: any;
    let planned: string[];

    beforeAll(async () => {
      // Each CLI has its deployment: a state written by OpenTofu names its providers on
      // registry.opentofu.org, which Terraform does not take as its own.
      today = await todaysWorkspace(cli, deployment);
      // The old stack in a directory of its own, on today's state and environment.
      const dir = oldStackDir(version);
      const old = (args: string[]) => runTfAsync(cli, args, dir, today.env);
      await mustRun(old, ["init", "-input=false"]);
      installed = await old(["apply", "-auto-approve", "-input=false"]);
      if (neverApplied) return;
      plan = await planOf((args) => today.tofu(args));
      planned = changesOf(plan);
    }, 600_000);

    if (neverApplied) {
      it("could not be applied on this CLI: no deployment of it exists to upgrade", () => {
        expect(installed.status).toBe(1);
        expect(installed.stderr.replace(/\s+/g, " ")).toContain(neverApplied);
      });
      return;
    }

    it("starts from a deployment of that version", () => {
      expect(installed.stderr).toBe("");
      expect(installed.status).toBe(0);
    });

    it("replaces and destroys no instance, volume or volume attachment", () => {
      const lost = planned.filter(
        (change) => MACHINE_TYPES.some((type) => change.startsWith(`${type}.`)) && / (delete|create\+delete|delete\+create)$/.test(change),
      );
      expect(lost).toEqual([]);
    });

    it("plans what today's version adds and nothing else (CHANGELOG.md)", () => {
      expect(planned).toEqual(PLANNED[version]);
    });

    it("gives every resource that takes tags the cluster's tag, in place, changing nothing else on those it only tags", () => {
      // changesOf() leaves the updates of tags alone out (support/upgrade.ts, tagsOnly).
      const clusterTag = `kube-on-os:${deploymentEnv(deployment).TF_VAR_deploy_domain_name}`.slice(0, 60);
      const untagged = (plan.resource_changes as any[])
        .filter((change) => change.change.after !== null && "tags" in change.change.after)
        .filter((change) => !(change.change.after.tags ?? []).includes(clusterTag))
        .map((change) => change.address);
      expect(untagged).toEqual([]);
      // A server, a network and a security group among them: the tag was new to every one.
      expect(taggingOf(plan).join("\n")).toMatch(
        /openstack_compute_instance_v2\.Master update[^]*openstack_networking_network_v2\.[^]*openstack_networking_secgroup_v2\./,
      );
    });

    if (version === VERSIONS[0] || (cli.name === "terraform" && version === VERSIONS[1])) {
      // The oldest deployment each CLI has.
      it("applies the upgrade, and then plans no changes", async () => {
        const upgrade = await today.tofu(["apply", "-auto-approve", "-input=false"]);
        expect(upgrade.stderr).toBe("");
        // The three ports that gain the nodes' group, and every resource that gains the cluster's tag.
        expect(upgrade.stdout).toContain(
          `Resources: ${PLANNED[version].length - 3} added, ${3 + taggingOf(plan).length} changed, 0 destroyed.`,
        );
        const replan = await today.tofu(["plan", "-detailed-exitcode", "-input=false"]);
        expect(replan.stderr).toBe("");
        expect(replan.status).toBe(0);
      });
    }
  });
});

describe.each(tfClis())("a running cluster with boot volumes, on $name", (cli) => {
  const deployment = `boot-volumes-${cli.name}`;
  let ws: Workspace;

  beforeAll(async () => {
    ws = await todaysWorkspace(cli, deployment, { TF_VAR_kube_node_boot_volume_size: "20" });
    await mustRun((args) => ws.tofu(args), ["apply", "-auto-approve", "-input=false"]);
  }, 600_000);

  it("replaces no node when the cloud publishes a newer build of its image: the image is in the boot volume", async () => {
    // Every Kubernetes node boots from a volume of its own (its /dev/vda), made from the image.
    const nodes = double.nova.servers
      .all()
      .filter((s) => /^k8s-.*\./.test(String(s.name)) && String(s.name).endsWith(`.${deployment}.kube-on-os`));
    const bootVolumes = double.cinder.volumes
      .all()
      .filter((v) =>
        (v.attachments as { device: string; server_id: string }[]).some(
          (a) => a.device === "/dev/vda" && nodes.some((n) => n.id === a.server_id),
        ),
      );
    expect(bootVolumes).toHaveLength(3);
    // A build newer than the one the cluster's volumes were made from, under the name base_image looks up.
    const newer = NEWER_NOBLE[cli.name];
    double.glance.seedImage(newer.id, newer.name);
    const planned = await plannedChanges((args) => ws.tofu(args));
    expect(planned).toEqual([]);
  });
});
