#!/usr/bin/env node
// `npm run bench`: median wall times of synthesizing the stack, through `npm run synth` (the cdktf
// CLI running cdktf.json's app) beside a trivial one-output cdktf app through the same CLI, and
// directly (the app's command, and the compiled JavaScript), of `tofu plan` against the OpenStack API
// double at 3 and at 100 nodes, in one pool and in two pools over three zones (with the resources
// that plan counts), and at the cluster's cap of 256 nodes, and of a deploy (apply) and a destroy of the default stack against
// the double, on OpenTofu and on Terraform (when on PATH), without the provisioning chain, which
// needs machines to log in to. A benchmark, not a test: it asserts nothing.
"use strict";

const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { toolchainEnv } = require("./stack-graph");

const root = path.resolve(__dirname, "..");
/** The double's availability zones, which the two-pool plan spreads over. */
const ZONES = ["az1", "az2", "az3"];
/**
 * The plans measured: one pool at 3 and 100 nodes, 100 nodes in two pools over three zones, and
 * the cluster's cap (MAX_NODES) in one pool and over three pools.
 */
const PLANS = [
  ["num_kube_nodes=3", { TF_VAR_num_kube_nodes: "3" }],
  ["num_kube_nodes=100", { TF_VAR_num_kube_nodes: "100" }],
  [
    "2 pools, 100 nodes over 3 zones (3 + web 97)",
    {
      TF_VAR_num_kube_nodes: "3",
      TF_VAR_kube_node_availability_zones: JSON.stringify(ZONES),
      TF_VAR_node_pools: JSON.stringify({ web: { count: 97, availability_zones: ZONES } }),
    },
  ],
  ["num_kube_nodes=256, the cap", { TF_VAR_num_kube_nodes: "256" }],
  [
    "3 pools, 256 nodes, the cap (6 + a 200 + b 50)",
    {
      TF_VAR_num_kube_nodes: "6",
      TF_VAR_kube_node_availability_zones: JSON.stringify(ZONES),
      TF_VAR_node_pools: JSON.stringify({ a: { count: 200, availability_zones: ZONES }, b: { count: 50 } }),
    },
  ],
];
const runs = Number(process.env.BENCH_RUNS ?? 5);

function median(values) {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}

function time(label, command, args, options) {
  const samples = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    const result = spawnSync(command, args, { stdio: "ignore", env: { ...process.env, CHECKPOINT_DISABLE: "1" }, ...options });
    if (result.status !== 0) throw new Error(`${label} failed (exit ${result.status})`);
    samples.push(Number(process.hrtime.bigint() - started) / 1e9);
  }
  report(label, samples);
}

function report(label, samples) {
  console.log(
    `${label.padEnd(40)} median ${median(samples).toFixed(2)} s  (${samples.length} runs: ${samples.map((s) => s.toFixed(2)).join(" ")})`,
  );
}

/** Median `tofu plan` time of the stack against the OpenStack API double, per num_kube_nodes. */
async function benchPlans(outdir, env) {
  require("./register-ts");
  const { startOpenStackDouble } = require(path.join(root, "__tests__", "doubles", "openstack", "server"));
  const { spawn } = require("node:child_process");
  const double = await startOpenStackDouble({ availabilityZones: ZONES });
  // A project with room for 256 nodes: the upstream default quotas allow 4.
  Object.assign(double.nova.quotas, { instances: -1, cores: -1, ram: -1, server_group_members: -1 });
  const stackDir = path.join(outdir, "plan", "cdktf.out", "stacks", "kube-on-os");
  const tofuEnv = { ...env, ...double.passwordEnv(), TF_IN_AUTOMATION: "1" };
  const run = (binary, args, extra = {}) =>
    new Promise((resolve, reject) => {
      const child = spawn(binary, [...args, "-no-color"], { cwd: stackDir, env: { ...tofuEnv, ...extra }, stdio: "ignore" });
      child.on("close", (status) => (status === 0 ? resolve() : reject(new Error(`${binary} ${args[0]} exited ${status}`))));
    });
  const tofu = (args, extra) => run(env.KOO_TOFU, args, extra);
  const timed = async (action) => {
    const started = process.hrtime.bigint();
    await action();
    return Number(process.hrtime.bigint() - started) / 1e9;
  };
  try {
    execFileSync("node", [path.join(root, "build", "main.js")], {
      cwd: path.join(outdir, "plan"),
      env: { ...env, KUBE_ON_OS_BACKEND: "local" },
    });
    await tofu(["init", "-input=false"]);
    for (const [label, vars] of PLANS) {
      const samples = [];
      for (let i = 0; i < runs; i++) {
        const started = process.hrtime.bigint();
        await tofu(["plan", "-input=false", "-lock=false"], vars);
        samples.push(Number(process.hrtime.bigint() - started) / 1e9);
      }
      report(`tofu plan, ${label}`, samples);
    }
    // What the two-pool plan creates, by resource type.
    await tofu(["plan", "-input=false", "-lock=false", "-out=pools.plan"], PLANS[2][1]);
    const shown = spawnSync(env.KOO_TOFU, ["show", "-json", "pools.plan"], { cwd: stackDir, env: tofuEnv, encoding: "utf8" });
    const counts = {};
    for (const change of JSON.parse(shown.stdout).resource_changes) {
      if (change.mode === "managed") counts[change.type] = (counts[change.type] ?? 0) + 1;
    }
    const total = Object.values(counts).reduce((a, b) => a + b, 0);
    console.log(`resources planned, ${PLANS[2][0]}: ${total}`);
    for (const [type, count] of Object.entries(counts).sort()) console.log(`  ${type.padEnd(44)} ${count}`);
    const clis = [["tofu", env.KOO_TOFU], ...(env.KOO_TERRAFORM ? [["terraform", env.KOO_TERRAFORM]] : [])];
    for (const [name, binary] of clis) {
      const noChain = { TF_VAR_run_provisioners: "false" };
      fs.rmSync(path.join(stackDir, ".terraform"), { recursive: true, force: true });
      fs.rmSync(path.join(stackDir, ".terraform.lock.hcl"), { force: true });
      await run(binary, ["init", "-input=false"]);
      const deploys = [];
      const destroys = [];
      for (let i = 0; i < runs; i++) {
        deploys.push(await timed(() => run(binary, ["apply", "-auto-approve", "-input=false"], noChain)));
        destroys.push(await timed(() => run(binary, ["destroy", "-auto-approve", "-input=false"], noChain)));
      }
      report(`${name} apply (deploy), default stack`, deploys);
      report(`${name} destroy, default stack`, destroys);
    }
    if (!env.KOO_TERRAFORM) console.log("terraform: none >= the minimum on PATH, not measured");
  } finally {
    await double.close();
  }
}

/**
 * A cdktf app that does next to nothing (one stack, one output, plain JavaScript) with the
 * project's node_modules: what `cdktf synth` costs whatever the app.
 */
function trivialApp(dir) {
  fs.mkdirSync(dir);
  fs.symlinkSync(path.join(root, "node_modules"), path.join(dir, "node_modules"));
  fs.writeFileSync(
    path.join(dir, "cdktf.json"),
    JSON.stringify({ language: "typescript", app: "node main.js", sendCrashReports: "false" }),
  );
  fs.writeFileSync(
    path.join(dir, "main.js"),
    'const { App, TerraformOutput, TerraformStack } = require("cdktf");\n' +
      'const app = new App();\nnew TerraformOutput(new TerraformStack(app, "trivial"), "answer", { value: 42 });\napp.synth();\n',
  );
  return dir;
}

/** `npm run synth` against the trivial app under the same cdktf CLI, run alternately (drift hits both). */
function benchSynth(outdir) {
  const trivial = trivialApp(path.join(outdir, "trivial"));
  const cdktf = path.join(root, "node_modules", ".bin", "cdktf");
  const ours = [];
  const theirs = [];
  const timed = (command, args, cwd) => {
    const started = process.hrtime.bigint();
    const result = spawnSync(command, args, { cwd, stdio: "ignore", env: { ...process.env, CHECKPOINT_DISABLE: "1", CI: "1" } });
    if (result.status !== 0) throw new Error(`${command} ${args.join(" ")} failed (exit ${result.status})`);
    return Number(process.hrtime.bigint() - started) / 1e9;
  };
  // One of each first: the app's transpile cache (scripts/register-ts.js) fills, as after `npm ci`.
  timed("npm", ["run", "--silent", "synth", "--", "--output", path.join(outdir, "npm")], root);
  for (let i = 0; i < runs; i++) {
    ours.push(timed("npm", ["run", "--silent", "synth", "--", "--output", path.join(outdir, "npm")], root));
    theirs.push(timed(cdktf, ["synth"], trivial));
  }
  report("npm run synth", ours);
  report("cdktf synth, a trivial one-output app", theirs);
  console.log(`npm run synth / trivial app: ${(median(ours) / median(theirs)).toFixed(2)} (target: at most 1.3)`);
}

async function main() {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-bench-"));
  try {
    const env = toolchainEnv(["terraform"]);
    // Compiled into the project's build/ so that node_modules resolves; the output goes elsewhere.
    execFileSync(path.join(root, "node_modules", ".bin", "tsc"), [], { cwd: root, stdio: "inherit" });
    benchSynth(outdir);
    // cdktf runs the app in the project's directory; here its files are named from elsewhere.
    const [command, ...args] = JSON.parse(fs.readFileSync(path.join(root, "cdktf.json"), "utf8")).app.split(" ");
    const fromRoot = args.map((arg) => (arg.startsWith("./") || arg.endsWith(".ts") ? path.join(root, arg) : arg));
    time("direct synth (cdktf.json's app)", command, fromRoot, { cwd: outdir });
    time("direct synth (node build/main.js)", "node", [path.join(root, "build", "main.js")], { cwd: outdir });
    fs.mkdirSync(path.join(outdir, "plan"));
    await benchPlans(outdir, env);
  } finally {
    fs.rmSync(outdir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(`bench: ${error.message}`);
  process.exit(1);
});
