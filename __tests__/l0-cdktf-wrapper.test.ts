/**
 * scripts/cdktf.js, behind `npm run diff|deploy|destroy|output`: which Terraform-compatible CLI it
 * runs, and the one-line refusals. The laptop suite runs the whole path; these cases are the
 * choices a laptop can present.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { tfClis } from "./support/tofu";

const WRAPPER = path.join(__dirname, "..", "scripts", "cdktf.js");

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
}

/** A directory holding only links to the given programs (and the basics a shell script uses). */
function binDir(programs: Record<string, string>): string {
  const dir = tempDir("bin");
  const basics = Object.fromEntries(
    ["bash", "dirname", "awk"].map((name) => [name, spawnSync("which", [name], { encoding: "utf8" }).stdout.trim()]),
  );
  for (const [name, target] of Object.entries({ node: process.execPath, ...basics, ...programs })) {
    fs.symlinkSync(target, path.join(dir, name));
  }
  return dir;
}

/** `npm run output` through the wrapper, with exactly `env` (no inherited PATH). */
function output(env: NodeJS.ProcessEnv): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [WRAPPER, "output"], {
    cwd: tempDir("project"),
    encoding: "utf8",
    env: { HOME: tempDir("home"), KUBE_ON_OS_CACHE: tempDir("empty-cache"), ...env },
  });
  return { status: result.status, stderr: result.stderr };
}

const tofu = tfClis().find((cli) => cli.name === "tofu")!;
const terraform = tfClis().find((cli) => cli.name === "terraform");

describe("scripts/cdktf.js chooses the CLI", () => {
  it("runs tofu when it is on PATH", () => {
    const { stderr } = output({ PATH: binDir({ tofu: tofu.path }) });
    expect(stderr.split("\n")[0]).toMatch(
      /^kube-on-os: using OpenTofu \d+\.\d+\.\d+ \(.*\/tofu, tofu on PATH; set TERRAFORM_BINARY_NAME to choose\)$/,
    );
  });

  (terraform ? it : it.skip)("runs terraform when it is the only one on PATH", () => {
    const { stderr } = output({ PATH: binDir({ terraform: terraform!.path }) });
    expect(stderr.split("\n")[0]).toMatch(/^kube-on-os: using Terraform \d+\.\d+\.\d+ \(.*\/terraform, terraform on PATH;/);
  });

  (terraform ? it : it.skip)("runs TERRAFORM_BINARY_NAME over the order", () => {
    const { stderr } = output({ PATH: binDir({ tofu: tofu.path, terraform: terraform!.path }), TERRAFORM_BINARY_NAME: "terraform" });
    expect(stderr.split("\n")[0]).toMatch(/^kube-on-os: using Terraform .*, TERRAFORM_BINARY_NAME;/);
  });

  it("finds the toolchain's OpenTofu for TERRAFORM_BINARY_NAME=tofu and when nothing is on PATH", () => {
    const cache = process.env.KOO_TOFU!.replace(/\/tofu\/[^/]+\/bin\/tofu$/, "");
    const named = output({ PATH: binDir({}), KUBE_ON_OS_CACHE: cache, TERRAFORM_BINARY_NAME: "tofu" });
    expect(named.stderr.split("\n")[0]).toContain(`(${process.env.KOO_TOFU}, TERRAFORM_BINARY_NAME;`);
    const fallback = output({ PATH: binDir({}), KUBE_ON_OS_CACHE: cache });
    expect(fallback.stderr.split("\n")[0]).toContain(`(${process.env.KOO_TOFU}, the toolchain's OpenTofu;`);
  });

  it("stops with one line when there is no CLI at all", () => {
    const { status, stderr } = output({ PATH: binDir({}) });
    expect(status).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      "kube-on-os: neither OpenTofu (>= 1.11.0) nor Terraform (>= 1.10.0) is on PATH; install one, or run `npm run toolchain` to build the project's OpenTofu",
    ]);
  });

  it("stops with one line when TERRAFORM_BINARY_NAME names nothing", () => {
    const { status, stderr } = output({ PATH: binDir({ tofu: tofu.path }), TERRAFORM_BINARY_NAME: "terraform-1.99" });
    expect(status).toBe(1);
    expect(stderr.trim().split("\n")).toEqual(['kube-on-os: TERRAFORM_BINARY_NAME="terraform-1.99" is not an executable on PATH']);
  });

  it("refuses a Terraform older than ephemeral variables, naming both versions", () => {
    // Terraform 1.9 as far as the version question goes: its `version -json` and `version` output.
    const old = path.join(tempDir("old"), "terraform");
    fs.writeFileSync(
      old,
      '#!/bin/bash\nif [ "$2" = -json ]; then echo \'{"terraform_version":"1.9.8","platform":"linux_amd64"}\'; else echo "Terraform v1.9.8"; fi\n',
      { mode: 0o755 },
    );
    const { status, stderr } = output({ PATH: binDir({ terraform: old }) });
    expect(status).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^kube-on-os: .*\/terraform is Terraform 1\.9\.8; the stack needs Terraform >= 1\.10\.0 \(set TERRAFORM_BINARY_NAME to another\)$/,
      ),
    ]);
  });
});

const node = (host: string, voter: boolean, address: string) => ({ host, fqdn: `${host}.lab.example`, voter, address });
// kube_node_machines as the stack outputs it: the master, the default pool's workers, the pools'.
const machines = [
  node("k8s-master", true, "openstack_compute_instance_v2.M"),
  node("k8s-worker-0", true, "openstack_compute_instance_v2.W[0]"),
  node("k8s-worker-1", true, "openstack_compute_instance_v2.W[1]"),
  node("k8s-worker-2", false, "openstack_compute_instance_v2.W[2]"),
  node("pool-gpu-0", false, 'openstack_compute_instance_v2.P["pool-gpu-0"]'),
];

describe("npm run roll (scripts/roll.js) chooses the nodes and their order", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { rollOrder, parseArgs } = require("../scripts/roll.js");
  const hosts = (nodes: { host: string }[]) => nodes.map((n) => n.host);

  it("rolls the workers first, then the other voters one by one, the master last", () => {
    expect(hosts(rollOrder(machines))).toEqual(["k8s-worker-2", "pool-gpu-0", "k8s-worker-0", "k8s-worker-1", "k8s-master"]);
  });

  it("keeps that order for the nodes asked for, and starts again where it stopped", () => {
    expect(hosts(rollOrder(machines, { nodes: ["k8s-master", "pool-gpu-0"] }))).toEqual(["pool-gpu-0", "k8s-master"]);
    expect(hosts(rollOrder(machines, { from: "k8s-worker-1" }))).toEqual(["k8s-worker-1", "k8s-master"]);
    expect(() => rollOrder(machines, { nodes: ["k8s-worker-2"], from: "k8s-master" })).toThrow(
      "--from k8s-master: not among the nodes to roll",
    );
  });

  it("refuses, in one line naming the node, a node the deployment does not have and a voter of fewer than 3", () => {
    expect(() => rollOrder(machines, { nodes: ["k8s-worker-9"] })).toThrow(
      "k8s-worker-9 is not a Kubernetes node of this deployment (its nodes: k8s-master, k8s-worker-0, k8s-worker-1, k8s-worker-2, pool-gpu-0)",
    );
    const small = [node("k8s-master", true, "M"), node("k8s-worker-0", true, "W[0]"), node("pool-gpu-0", false, "P")];
    expect(() => rollOrder(small)).toThrow(
      "k8s-worker-0 is one of 2 dqlite voters: below 3 its replacement could lose the cluster's database; " +
        "roll the workers only (--nodes), or raise num_kube_nodes to 3 first",
    );
    expect(hosts(rollOrder(small, { nodes: ["pool-gpu-0"] }))).toEqual(["pool-gpu-0"]);
  });

  it("takes --nodes, --from and --auto-approve, and refuses anything else", () => {
    expect(parseArgs(["--nodes", "a,b", "--from=b", "--auto-approve"])).toEqual({ nodes: ["a", "b"], from: "b", autoApprove: true });
    expect(() => parseArgs(["--nodes"])).toThrow("--nodes needs a value");
    expect(() => parseArgs(["-replace=x"])).toThrow('unknown argument "-replace=x" (use --nodes HOST,..., --from HOST, --auto-approve)');
  });
});

describe("npm run repair (scripts/repair.js) chooses the nodes to replace, within its limits", () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { nodeHealth, withKubernetes, kubernetesView, repairPlan, parseRepairArgs, NOT_READY_FOR } = require("../scripts/repair.js");
  /** `show -json` of a plan, as OpenTofu and Terraform write it, with these power states and these servers deleted. */
  const shown = (states: Record<string, string>, deleted: string[] = []) => ({
    resource_drift: deleted.map((address) => ({ address, change: { actions: ["delete"] } })),
    prior_state: {
      values: {
        root_module: {
          resources: machines
            .filter((m) => !deleted.includes(m.address))
            .map((m) => ({ address: m.address, values: { power_state: states[m.host] ?? "active" } })),
        },
      },
    },
  });
  const plan = (states: Record<string, string>, deleted: string[] = [], max = 1) =>
    repairPlan(nodeHealth(machines, shown(states, deleted)), { max }).map(
      (n: { host: string; problem: string }) => `${n.host}: ${n.problem}`,
    );

  it("finds a node whose server is gone, in ERROR or SHUTOFF, and leaves the others", () => {
    expect(
      nodeHealth(machines, shown({ "k8s-worker-2": "error", "k8s-worker-0": "shutoff" }, [machines[4].address])).map((n: any) => [
        n.host,
        n.problem ?? n.state,
      ]),
    ).toEqual([
      ["k8s-master", "its server is ACTIVE"],
      ["k8s-worker-0", "its server is SHUTOFF"],
      ["k8s-worker-1", "its server is ACTIVE"],
      ["k8s-worker-2", "its server is in ERROR"],
      ["pool-gpu-0", "its server is gone"],
    ]);
    expect(plan({})).toEqual([]);
    expect(plan({ "k8s-worker-2": "error" })).toEqual(["k8s-worker-2: its server is in ERROR"]);
    expect(plan({ "k8s-master": "shutoff" })).toEqual(["k8s-master: its server is SHUTOFF"]);
  });

  it("replaces up to --max nodes in the roll's order, the workers first; more than --max unhealthy, none", () => {
    expect(plan({ "k8s-master": "error" }, [machines[4].address], 2)).toEqual([
      "pool-gpu-0: its server is gone",
      "k8s-master: its server is in ERROR",
    ]);
    expect(() => plan({ "k8s-worker-2": "error" }, [machines[4].address])).toThrow(
      "2 nodes are unhealthy, more than --max 1: k8s-worker-2 (its server is in ERROR), pool-gpu-0 (its server is gone); " +
        "a failure this wide is the cloud's or its network's, not a machine's, so nothing is replaced (npm run roll -- --nodes replaces them by hand)",
    );
  });

  it("never replaces two voters in one run: the other two keep the quorum", () => {
    expect(() => plan({ "k8s-master": "error", "k8s-worker-1": "shutoff" }, [], 3)).toThrow(
      "2 of the dqlite voters are unhealthy or NotReady (k8s-master, k8s-worker-1): replacing one would leave fewer than a majority of voters, " +
        "and without one the cluster's database has lost its quorum, which a new machine cannot restore; nothing is replaced",
    );
  });

  /** Kubernetes' view (microk8s.node_health through a voter) where `notReady` gives these nodes' NotReady seconds (null: no time). */
  const view = (notReady: Record<string, number | null>, unreachable = true) => ({
    from: "k8s-master.example.org",
    nodes: new Map(
      machines.map((m) => [
        m.host,
        {
          name: m.host,
          ready: !(m.host in notReady),
          unreachable: m.host in notReady && unreachable,
          not_ready_seconds: m.host in notReady ? notReady[m.host] : 0,
        },
      ]),
    ),
  });
  const judged = (states: Record<string, string>, notReady: Record<string, number | null>, unreachable = true) =>
    withKubernetes(nodeHealth(machines, shown(states)), view(notReady, unreachable), NOT_READY_FOR);

  it("finds a node NotReady for --not-ready-for seconds on a running server, and waits for one under it", () => {
    expect(NOT_READY_FOR).toBe(300);
    const health = judged(
      { "k8s-worker-0": "shutoff" },
      { "k8s-worker-0": 999, "k8s-worker-2": 300, "pool-gpu-0": 299, "k8s-master": null },
    );
    expect(health.map((n: any) => [n.host, n.problem ?? n.state])).toEqual([
      ["k8s-master", "its server is ACTIVE, NotReady (its kubelet stopped reporting) since a time Kubernetes does not give: not judged"],
      // The server's own failure is the reason given; Kubernetes is not asked about it.
      ["k8s-worker-0", "its server is SHUTOFF"],
      ["k8s-worker-1", "its server is ACTIVE, Ready"],
      ["k8s-worker-2", "NotReady for 300 s (its kubelet stopped reporting), its server running"],
      ["pool-gpu-0", "its server is ACTIVE, NotReady for 299 s (its kubelet stopped reporting), under --not-ready-for 300"],
    ]);
    expect(
      withKubernetes(nodeHealth(machines, shown({})), view({ "k8s-worker-2": 301 }, false), 300)
        .map((n: any) => n.problem)
        .filter(Boolean),
    ).toEqual(["NotReady for 301 s (its kubelet reports it not Ready), its server running"]);
    // A node Kubernetes does not know (a machine not joined yet) is the deploy's, not the repair's.
    const unknown = { from: "x", nodes: new Map() };
    expect(withKubernetes(nodeHealth(machines, shown({})), unknown, 300)[3]).toMatchObject({
      problem: undefined,
      state: "its server is ACTIVE; Kubernetes has no node k8s-worker-2 (npm run deploy joins it)",
    });
    expect(repairPlan(judged({}, { "k8s-worker-2": 400 }), { max: 1 }).map((n: any) => n.host)).toEqual(["k8s-worker-2"]);
  });

  it("never replaces a voter while another voter is NotReady, even under the bound: the two left would not be a majority", () => {
    expect(() => repairPlan(judged({ "k8s-master": "error" }, { "k8s-worker-1": 20 }), { max: 1 })).toThrow(
      "2 of the dqlite voters are unhealthy or NotReady (k8s-master, k8s-worker-1): replacing one",
    );
    expect(() => repairPlan(judged({}, { "k8s-worker-0": 400, "k8s-master": null }), { max: 1 })).toThrow(
      "2 of the dqlite voters are unhealthy or NotReady (k8s-master, k8s-worker-0): replacing one",
    );
    // A worker is replaced all the same, and a voter NotReady alone waits without blocking anything.
    expect(repairPlan(judged({ "k8s-worker-2": "error" }, { "k8s-worker-1": 20 }), { max: 1 }).map((n: any) => n.host)).toEqual([
      "k8s-worker-2",
    ]);
  });

  it("says in one line why Kubernetes' view is missing", () => {
    const live = { bastion: "127.0.0.1", user: "debian", salt_master: { id: "salt.lab.example", address: "127.0.0.1" } };
    const read = { runProvisioners: true, live, hostKeys: {} };
    const view = (over: object, voters = ["k8s-master.lab.example"], env: NodeJS.ProcessEnv = process.env) =>
      kubernetesView({ read: { ...read, ...over }, voters, env }).unavailable;
    expect(view({ runProvisioners: false })).toBe("run_provisioners is false: no Salt runs on the machines to ask");
    expect(view({ live: undefined })).toBe(
      "the state has no salt_preview output (a cluster applied before it existed): npm run deploy once adds it",
    );
    expect(view({}, [])).toBe("no dqlite voter's server runs to ask");
    expect(view({}, undefined, { PATH: "/nonexistent" })).toMatch(/^could not run ssh \(.*ENOENT.*\): install an OpenSSH client$/);
  });

  it("takes --max, --not-ready-for, --dry-run and --auto-approve, and refuses anything else", () => {
    const defaults = { max: 1, notReadyFor: 300, dryRun: false, autoApprove: false };
    expect(parseRepairArgs([])).toEqual(defaults);
    expect(parseRepairArgs(["--max", "3", "--dry-run", "--auto-approve"])).toEqual({
      ...defaults,
      max: 3,
      dryRun: true,
      autoApprove: true,
    });
    expect(parseRepairArgs(["--max=2", "--not-ready-for=600"])).toEqual({ ...defaults, max: 2, notReadyFor: 600 });
    expect(() => parseRepairArgs(["--max", "0"])).toThrow('--max needs a whole number of nodes from 1 to 999, got "0"');
    for (const bad of ["0", "5m", "86401", "-1"]) {
      expect(() => parseRepairArgs(["--not-ready-for", bad])).toThrow(
        `--not-ready-for needs a whole number of seconds from 1 to 86400, got ${JSON.stringify(bad)}`,
      );
    }
    expect(() => parseRepairArgs(["--nodes", "a"])).toThrow(
      'unknown argument "--nodes" (use --max N, --not-ready-for SECONDS, --dry-run, --auto-approve)',
    );
  });
});
