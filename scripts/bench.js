#!/usr/bin/env node
// `npm run bench`: median wall times of synthesizing the stack, through `npm run synth` (cdktf CLI
// + ts-node) and directly from the compiled JavaScript, and of `tofu plan` against the OpenStack
// API double at 3 and at 100 nodes. A benchmark, not a test: it asserts nothing.
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
    `${label.padEnd(36)} median ${median(samples).toFixed(2)} s  (${samples.length} runs: ${samples.map((s) => s.toFixed(2)).join(" ")})`,
  );
}

/** Median `tofu plan` time of the stack against the OpenStack API double, per num_kube_nodes. */
async function benchPlans(outdir, env) {
  require("ts-node").register({ transpileOnly: true, project: path.join(root, "tsconfig.json") });
  const { startOpenStackDouble } = require(path.join(root, "test", "openstack-double", "server"));
  const { spawn } = require("node:child_process");
  const double = await startOpenStackDouble();
  const stackDir = path.join(outdir, "plan", "cdktf.out", "stacks", "kube-on-os");
  const tofuEnv = { ...env, ...double.passwordEnv(), TF_IN_AUTOMATION: "1" };
  const tofu = (args, extra = {}) =>
    new Promise((resolve, reject) => {
      const child = spawn(env.KOO_TOFU, [...args, "-no-color"], { cwd: stackDir, env: { ...tofuEnv, ...extra }, stdio: "ignore" });
      child.on("close", (status) => (status === 0 ? resolve() : reject(new Error(`tofu ${args[0]} exited ${status}`))));
    });
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
