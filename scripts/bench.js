#!/usr/bin/env node
// `npm run bench`: median wall times of synthesizing the stack, through `npm run synth` (cdktf CLI
// + ts-node) and directly from the compiled JavaScript, of `tofu plan` against the OpenStack API
// double at 3 and at 100 nodes, and of a deploy (apply) and a destroy of the default stack against
// the double, on OpenTofu and on Terraform (when on PATH), without the provisioning chain, which
// needs machines to log in to. A benchmark, not a test: it asserts nothing.
"use strict";

const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { toolchainEnv } = require("./stack-graph");

const root = path.resolve(__dirname, "..");
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
  require("ts-node").register({ transpileOnly: true, project: path.join(root, "tsconfig.json") });
  const { startOpenStackDouble } = require(path.join(root, "test", "openstack-double", "server"));
  const { spawn } = require("node:child_process");
  const double = await startOpenStackDouble();
  // A project with room for 100 nodes: the upstream default quotas allow 4.
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
    for (const nodes of ["3", "100"]) {
      const samples = [];
      for (let i = 0; i < runs; i++) {
        const started = process.hrtime.bigint();
        await tofu(["plan", "-input=false", "-lock=false"], { TF_VAR_num_kube_nodes: nodes });
        samples.push(Number(process.hrtime.bigint() - started) / 1e9);
      }
      report(`tofu plan, num_kube_nodes=${nodes}`, samples);
    }
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

async function main() {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-bench-"));
  try {
    const env = toolchainEnv(["terraform"]);
    // Compiled into the project's build/ so that node_modules resolves; the output goes elsewhere.
    execFileSync(path.join(root, "node_modules", ".bin", "tsc"), [], { cwd: root, stdio: "inherit" });
    time("npm run synth", "npm", ["run", "--silent", "synth", "--", "--output", path.join(outdir, "npm")], { cwd: root });
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
