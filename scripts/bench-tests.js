#!/usr/bin/env node
// `npm run bench:tests`: where the suite's time goes. Runs `npm test` (scripts/test.sh) keeping its
// results, then prints every suite's wall time, CPU time (its whole process tree: scripts/test/
// cpu-meter.js) and waiting (wall less CPU), slowest first, as the Markdown table of
// docs/development.md ("Where the time goes").
//
//   npm run bench:tests                  the suites as npm test runs them, side by side
//   npm run bench:tests -- --serial      one suite at a time (jest in band, then pytest without
//                                        workers): each suite's own cost, undisturbed
//   npm run bench:tests -- --serial --write
//                                        also writes each jest suite's wall time to
//                                        scripts/test/suite-seconds.json, the order
//                                        npm test starts them in (longest first)
//
// A benchmark, not a test: it asserts nothing, and exits with npm test's status.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { suites } = require("./test/report");

const root = path.resolve(__dirname, "..");
const args = process.argv.slice(2);
const unknown = args.filter((a) => !["--serial", "--write"].includes(a));
if (unknown.length > 0 || (args.includes("--write") && !args.includes("--serial"))) {
  console.error("usage: npm run bench:tests [-- --serial [--write]]");
  process.exit(2);
}
const serial = args.includes("--serial");

const results = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-bench-tests-"));
const test = spawnSync("bash", [path.join(root, "scripts", "test.sh")], {
  cwd: root,
  stdio: "inherit",
  env: { ...process.env, KOO_TEST_RESULTS: results, ...(serial ? { KOO_TEST_SERIAL: "1" } : {}) },
});
console.log(`\n## ${serial ? "One suite at a time" : "As npm test runs them"} (npm run bench:tests${serial ? " -- --serial" : ""})\n`);
spawnSync("node", [path.join(root, "scripts", "test", "report.js"), results, "--table"], { stdio: "inherit" });

if (args.includes("--write")) {
  const seconds = {};
  for (const record of suites(results)) if (record.runner === "jest") seconds[record.suite] = Math.round(record.wallMs / 1000);
  const sorted = Object.fromEntries(Object.entries(seconds).sort(([a, x], [b, y]) => y - x || a.localeCompare(b)));
  fs.writeFileSync(path.join(root, "scripts", "test", "suite-seconds.json"), `${JSON.stringify(sorted, null, 2)}\n`);
  console.log(`\nwrote scripts/test/suite-seconds.json (${Object.keys(sorted).length} suites)`);
}
fs.rmSync(results, { recursive: true, force: true });
process.exit(test.status ?? 1);
