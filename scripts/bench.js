#!/usr/bin/env node
// `npm run bench`: median wall time of synthesizing the stack, through `npm run synth` (cdktf CLI
// + ts-node) and directly from the compiled JavaScript. A benchmark, not a test: it asserts nothing.
"use strict";

const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

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
  console.log(`${label.padEnd(36)} median ${median(samples).toFixed(2)} s  (${runs} runs: ${samples.map((s) => s.toFixed(2)).join(" ")})`);
}

const outdir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-bench-"));
try {
  // Compiled into the project's build/ so that node_modules resolves; the output goes elsewhere.
  execFileSync(path.join(root, "node_modules", ".bin", "tsc"), [], { cwd: root, stdio: "inherit" });
  time("npm run synth", "npm", ["run", "--silent", "synth", "--", "--output", path.join(outdir, "npm")], { cwd: root });
  time("direct synth (node build/main.js)", "node", [path.join(root, "build", "main.js")], { cwd: outdir });
} finally {
  fs.rmSync(outdir, { recursive: true, force: true });
}
