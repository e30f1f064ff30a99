#!/usr/bin/env node
// The end of `npm test` (scripts/test.sh): one report for both runners.
//
//   node scripts/test/report.js RESULTS_DIR [--subset] [--table] [--add-passing]
//
// RESULTS_DIR holds jest.json (jest --json), and what __tests__/harness/timing.py and
// scripts/test/cpu-meter.js wrote: pytest-outcomes.json and suites/*.json (each suite's wall and
// CPU time); and steps, scripts/test.sh's marks ("name ms" per line).
//
// It prints:
// - the time report: the total, each step, and the 10 slowest suites with their wall and CPU
//   time (--table: every suite, as the Markdown table of docs/development.md);
// - the test-name check: every name in __tests__/test-names/passing.txt must have passed in this run. A
//   test renamed or removed on purpose is changed in that file in the same commit; one that
//   disappears silently fails the run. --subset checks only the files this run ran (npm run
//   test:quick). Names of a suite that skipped itself are excused only where the machine says
//   why (KOO_SKIP_NAMESPACE_TESTS=1, no Terraform on PATH), and listed;
// - the totals line, `totals: N passed, N failed, N skipped`.
//
// --add-passing adds every test that passed in this run and is not listed yet to passing.txt
// (a new test is required from then on); it never removes one.
//
// Exits 1 when a test failed, a runner left no results, or a required name did not pass.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..", "..");
const NAMES_FILE = path.join(ROOT, "__tests__", "test-names", "passing.txt");

/** A jest test's name: its file, then its describe blocks and title, joined by " › ". */
function jestName(file, assertion) {
  const relative = path.relative(ROOT, file);
  return [relative, ...assertion.ancestorTitles, assertion.title].join(" › ").replace(/\n/g, "\\n");
}

const RANK = { passed: 0, skipped: 1, failed: 2 };

/**
 * Every test of the run by name, with its outcome: passed, failed or skipped. Two tests of one
 * name (an it.each with a repeated case) count as one, which passed only if both did.
 */
function outcomes(results) {
  const found = new Map();
  const record = (name, status) => {
    if (!found.has(name) || RANK[status] > RANK[found.get(name)]) found.set(name, status);
  };
  const runs = { jest: false, pytest: false };
  const jestFile = path.join(results, "jest.json");
  if (fs.existsSync(jestFile)) {
    runs.jest = true;
    const jest = JSON.parse(fs.readFileSync(jestFile, "utf8"));
    for (const suite of jest.testResults) {
      // A suite that could not run (a syntax error, a failing beforeAll outside any test) is one failure.
      if (suite.status === "failed" && suite.assertionResults.length === 0) {
        record(`${path.relative(ROOT, suite.name)} › (the suite did not run)`, "failed");
      }
      for (const assertion of suite.assertionResults) {
        const status = assertion.status === "passed" ? "passed" : assertion.status === "failed" ? "failed" : "skipped";
        record(jestName(suite.name, assertion), status);
      }
    }
  }
  const pytestFile = path.join(results, "pytest-outcomes.json");
  if (fs.existsSync(pytestFile)) {
    runs.pytest = true;
    for (const [nodeid, status] of Object.entries(JSON.parse(fs.readFileSync(pytestFile, "utf8")))) record(nodeid, status);
  }
  return { found, runs };
}

/** The file a test name belongs to: a jest name's first part, a pytest node id's path. */
function fileOf(name) {
  return name.split(" › ")[0].split("::")[0];
}

function required() {
  return fs
    .readFileSync(NAMES_FILE, "utf8")
    .split("\n")
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** Adds the tests that passed and are not required yet to passing.txt, keeping its order sorted. */
function addPassing(found) {
  const lines = fs.readFileSync(NAMES_FILE, "utf8").split("\n").filter(Boolean);
  const header = lines.filter((line) => line.startsWith("#"));
  const listed = new Set(lines.filter((line) => !line.startsWith("#")));
  const passed = [...found].filter(([name, status]) => status === "passed" && !listed.has(name)).map(([name]) => name);
  // Results of another checkout name their files outside this one: none of them is added.
  const added = passed.filter((name) => !name.startsWith(".."));
  if (added.length < passed.length) console.log(`test names: ${passed.length - added.length} outside ${ROOT} not added`);
  const names = [...listed, ...added].sort();
  fs.writeFileSync(NAMES_FILE, `${[...header, ...names].join("\n")}\n`);
  console.log(`test names: added ${added.length} to __tests__/test-names/passing.txt`);
}

/** The required names this run did not pass, less those excused; and the excused, with the reason. */
function checkNames(found, { subset }) {
  const ran = new Set([...found.keys()].map(fileOf));
  const skippedFiles = new Set([...found].filter(([, status]) => status === "skipped").map(([name]) => fileOf(name)));
  const reasons = [
    ...(process.env.KOO_SKIP_NAMESPACE_TESTS === "1" ? ["KOO_SKIP_NAMESPACE_TESTS=1"] : []),
    ...(process.env.KOO_TERRAFORM ? [] : ["no Terraform on PATH"]),
  ];
  const lost = [];
  const excused = [];
  let checked = 0;
  for (const name of required()) {
    if (subset && !ran.has(fileOf(name))) continue;
    checked += 1;
    if (found.get(name) === "passed") continue;
    if (found.get(name) !== "failed" && reasons.length > 0 && skippedFiles.has(fileOf(name))) excused.push(name);
    else lost.push(`${name} (${found.get(name) ?? "not run"})`);
  }
  return { lost, excused, reasons, checked };
}

function seconds(ms) {
  return ms === undefined || ms === null ? "-" : `${Math.round(ms / 1000)} s`;
}

function minutes(ms) {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s`;
}

/** The suites' records, one per suite (a pytest file run by several workers is summed). */
function suites(results) {
  const dir = path.join(results, "suites");
  const bySuite = new Map();
  for (const file of fs.existsSync(dir) ? fs.readdirSync(dir) : []) {
    const record = JSON.parse(fs.readFileSync(path.join(dir, file), "utf8"));
    const key = `${record.runner} ${record.suite}`;
    const seen = bySuite.get(key);
    if (!seen) bySuite.set(key, { ...record });
    else {
      seen.wallMs += record.wallMs;
      seen.cpuMs = seen.cpuMs === undefined || record.cpuMs === undefined ? undefined : seen.cpuMs + record.cpuMs;
    }
  }
  return [...bySuite.values()].sort((a, b) => b.wallMs - a.wallMs);
}

/** The run's steps from scripts/test.sh's marks ("name ms" per line): each lasts until the next mark. */
function steps(results) {
  const file = path.join(results, "steps");
  if (!fs.existsSync(file)) return [];
  const marks = fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => line.split(" "));
  return marks.slice(0, -1).map(([name, start], i) => ({ name, start: Number(start), end: Number(marks[i + 1][1]) }));
}

function timeReport(results, { table }) {
  const run = steps(results);
  const all = suites(results);
  const lines = [];
  if (run.length > 0) {
    const total = run.at(-1).end - run[0].start;
    lines.push(`time: ${minutes(total)} in all (${run.map((s) => `${s.name} ${seconds(s.end - s.start)}`).join(", ")})`);
  }
  if (all.length === 0) return lines;
  const sources = [...new Set(all.map((s) => s.cpuSource))].join(", ");
  const cpu = all.reduce((sum, s) => sum + (s.cpuMs ?? 0), 0);
  lines.push(`suites: ${all.length}, their CPU time ${minutes(cpu)} (${sources})`);
  const shown = table ? all : all.slice(0, 10);
  if (table) {
    lines.push("", "| suite | wall | CPU | waiting |", "|---|---:|---:|---:|");
    for (const s of shown) {
      const waiting = s.cpuMs === undefined ? undefined : Math.max(0, s.wallMs - s.cpuMs);
      lines.push(`| \`${s.suite}\` | ${seconds(s.wallMs)} | ${seconds(s.cpuMs)} | ${seconds(waiting)} |`);
    }
    return lines;
  }
  lines.push(`the ${shown.length} slowest suites:`, "    wall      CPU  suite");
  for (const s of shown) lines.push(`${seconds(s.wallMs).padStart(8)} ${seconds(s.cpuMs).padStart(8)}  ${s.suite}`);
  return lines;
}

function main() {
  const args = process.argv.slice(2);
  const results = args.find((a) => !a.startsWith("--"));
  if (!results) {
    console.error("usage: node scripts/test/report.js RESULTS_DIR [--subset] [--table] [--add-passing]");
    process.exit(2);
  }
  const subset = args.includes("--subset");
  const { found, runs } = outcomes(results);
  if (args.includes("--add-passing")) addPassing(found);
  for (const line of timeReport(results, { table: args.includes("--table") })) console.log(line);

  const { lost, excused, reasons, checked } = checkNames(found, { subset });
  const of = `${checked}${subset ? " required in the files run" : " in __tests__/test-names/passing.txt"}`;
  if (lost.length > 0) {
    console.log(`test names: ${lost.length} of the ${of} did not pass:`);
    for (const name of lost) console.log(`  ${name}`);
  } else {
    console.log(`test names: all ${checked - excused.length} of the ${of} passed`);
  }
  if (excused.length > 0) console.log(`test names: ${excused.length} not run on this machine (${reasons.join(", ")})`);

  const counts = { passed: 0, failed: 0, skipped: 0 };
  for (const status of found.values()) counts[status] += 1;
  const missingRunner = Object.entries(runs).filter(([, ran]) => !ran);
  counts.failed += missingRunner.length;
  for (const [runner] of missingRunner) console.log(`${runner}: no results`);
  console.log(`totals: ${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped`);
  process.exit(counts.failed > 0 || lost.length > 0 ? 1 : 0);
}

if (require.main === module) main();

module.exports = { jestName, checkNames, outcomes, fileOf, suites };
