#!/usr/bin/env node
// `npm run bench:rehearsal`: the deployment rehearsal (__tests__/l5-rehearsal.test.ts) on its own, then
// what it measured: the journey's wall time, each apply's, the memory of every host, and the states
// each highstate applied and changed. `npm test` runs the same suite; this is its benchmark.
// Needs root and network namespaces, as the rehearsal does; it installs the toolchain first.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-rehearse-")), "report.json");
for (const installer of ["toolchain.sh", "toolchain/debian-root.sh"]) {
  const result = spawnSync("bash", [path.join(root, "scripts", installer)], { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
const started = Date.now();
const jest = spawnSync(
  "bash",
  ["-c", `source "${root}/scripts/toolchain/env.sh" && exec npx --no-install jest --ci --runInBand __tests__/l5-rehearsal.test.ts`],
  { cwd: root, stdio: "inherit", env: { ...process.env, KOO_REHEARSAL_REPORT: report } },
);
const seconds = Math.round((Date.now() - started) / 1000);
if (fs.existsSync(report)) {
  const measured = JSON.parse(fs.readFileSync(report, "utf8"));
  console.log(`rehearsal: ${seconds} s in all (target: under 900 s on 2 cores)`);
  for (const [key, value] of Object.entries(measured)) console.log(`  ${key}: ${JSON.stringify(value)}`);
  console.log(`  each tofu run's output: ${path.dirname(report)}`);
} else {
  console.log(`rehearsal: ${seconds} s; no measurements (skipped, or it failed before its first apply)`);
}
process.exit(jest.status ?? 1);
