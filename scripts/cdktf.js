#!/usr/bin/env node
// Runs the cdktf CLI for `npm run synth|diff|deploy|destroy`, as a laptop user needs it:
//
// - TF_VAR_*: cdktf removes every TF_VAR_ variable from the app's environment before synth,
//   because it means them for Terraform only. kube-on-os validates them at synth time and records
//   them as the variables' defaults, so they are handed over under one other name, which main.ts
//   reads.
// - Which CLI: cdktf runs $TERRAFORM_BINARY_NAME, `terraform` unless set. Here it is
//   TERRAFORM_BINARY_NAME when set, else the first of `tofu` and `terraform` on PATH, else the
//   OpenTofu that the project's toolchain built (`npm run toolchain`). Whichever it is must be recent
//   enough for the stack (ephemeral variables); one line says which one runs.
// - `output`: the chosen CLI's own `output` in the synthesized stack's directory, so that
//   `npm run --silent output -- -raw kubeconfig_command` prints one output as it is.
// - A provider mirror: on first init, cdktf runs `providers lock -platform=linux_amd64`, which
//   always asks the origin registry, whatever the CLI configuration says. When that configuration
//   installs providers from a mirror, the lock step would fail offline, so it is skipped
//   (`--skip-provider-lock`): `init` has written the lock file from the mirror already.
// - Quotas: `diff` and `deploy` synthesize first, then read what the project already uses of its
//   quotas and what this deployment holds (scripts/quota-usage.js), and plan with it as
//   TF_VAR_quota_usage, so that the plan compares the deployment's needs with what is free.
// - `roll`: synthesizes, then replaces the Kubernetes nodes' machines one apply at a time with the
//   chosen CLI (scripts/roll.js).
// - `repair`: synthesizes, then rolls the nodes whose servers are gone, in ERROR or SHUTOFF, or
//   that Kubernetes has had NotReady past --not-ready-for on a running server, within its limits
//   (scripts/repair.js).
// - `diff`: after the plan, the Salt preview (scripts/preview.js): what the candidate Salt tree
//   and pillar would change on each host the plan keeps, from the plan cdktf saved (`plan`, in the
//   stack's directory); its report is salt-preview.json beside it.
// - Node.js: package.json's engines names the maintained LTS lines, which the project is tested on.
//   On an older line, past its end of life, every command but `output` says so in one line and goes
//   on, as npm does with engines: a refusal would leave a running cluster's user stuck until they
//   can move their machine to a new Node.js.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { preview, PreviewError } = require("./preview");
const { quotaUsage } = require("./quota-usage");
const { parseArgs, roll, RollError } = require("./roll");
const { parseRepairArgs, repair, RepairError } = require("./repair");

const ROOT = path.join(__dirname, "..");
// Must match FORWARDED_TF_VARS in config/forward.ts (__tests__/l0-main.test.ts runs both ends).
const FORWARDED_TF_VARS = "KUBE_ON_OS_FORWARDED_TF_VARS";
// The oldest releases with ephemeral input variables (root_password).
const MIN_VERSION = { terraform: "1.10.0", tofu: "1.11.0" };
// The commands that run Terraform; synth and get do not.
const RUNS_TERRAFORM = new Set(["diff", "plan", "deploy", "apply", "destroy"]);
// The commands that plan a change to the cluster, whose quotas are checked against what is free.
const PLANS = new Set(["diff", "deploy"]);

function fail(message) {
  console.error(`kube-on-os: ${message}`);
  process.exit(1);
}

/** The release lines package.json's engines names (`^22.13.0 || ^24.0.0 || ^26.0.0`: 22, 24, 26). */
function supportedNodeLines() {
  const engines = require("../package.json").engines.node;
  return [...engines.matchAll(/\^(\d+)\./g)].map((match) => Number(match[1]));
}

/** One line when this Node.js is older than every maintained LTS line: past its end of life. */
function warnOldNode() {
  const lines = supportedNodeLines();
  const version = process.version.replace(/^v/, "");
  if (Number(version.split(".")[0]) >= Math.min(...lines)) return;
  const named = `${lines.slice(0, -1).join(", ")} and ${lines.at(-1)}`;
  console.error(`kube-on-os: Node.js ${version} is past its end of life; kube-on-os is tested on Node.js ${named}: move to one of them`);
}

function onPath(name) {
  if (name.includes("/")) return fs.existsSync(name) ? path.resolve(name) : undefined;
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    const candidate = path.join(dir || ".", name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** The toolchain's OpenTofu, from the one place that knows its path (scripts/toolchain/paths.sh). */
function toolchainTofu() {
  const result = spawnSync("bash", ["-c", 'source "$1/scripts/toolchain/paths.sh" && echo "$(koo_tofu_dir)/bin/tofu"', "-", ROOT], {
    encoding: "utf8",
  });
  const tofu = result.stdout.trim();
  return result.status === 0 && fs.existsSync(tofu) ? tofu : undefined;
}

/** `{ kind, version }` of a Terraform-compatible CLI, from its `version -json`. */
function identify(binary) {
  const result = spawnSync(binary, ["version", "-json"], { encoding: "utf8", env: { ...process.env, CHECKPOINT_DISABLE: "1" } });
  let version;
  try {
    version = JSON.parse(result.stdout).terraform_version;
  } catch {
    return undefined;
  }
  // Both report `terraform_version`; only OpenTofu's text form starts with its name.
  const text = spawnSync(binary, ["version"], { encoding: "utf8", env: { ...process.env, CHECKPOINT_DISABLE: "1" } });
  return { kind: /^OpenTofu /.test(text.stdout) ? "tofu" : "terraform", version };
}

function atLeast(version, minimum) {
  const parse = (v) => v.split(/[.-]/, 3).map(Number);
  const [a, b] = [parse(version), parse(minimum)];
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] > b[i];
  return true;
}

function chooseCli() {
  const asked = process.env.TERRAFORM_BINARY_NAME;
  const candidates = asked
    ? [{ binary: onPath(asked) ?? (asked === "tofu" ? toolchainTofu() : undefined), why: "TERRAFORM_BINARY_NAME" }]
    : [
        { binary: onPath("tofu"), why: "tofu on PATH" },
        { binary: onPath("terraform"), why: "terraform on PATH" },
        { binary: toolchainTofu(), why: "the toolchain's OpenTofu" },
      ];
  if (asked && !candidates[0].binary) fail(`TERRAFORM_BINARY_NAME=${JSON.stringify(asked)} is not an executable on PATH`);
  const found = candidates.filter((c) => c.binary);
  if (found.length === 0) {
    fail(
      `neither OpenTofu (>= ${MIN_VERSION.tofu}) nor Terraform (>= ${MIN_VERSION.terraform}) is on PATH; ` +
        "install one, or run `npm run toolchain` to build the project's OpenTofu",
    );
  }
  const { binary, why } = found[0];
  const cli = identify(binary);
  if (!cli) fail(`${binary} (${why}) did not report its version; is it OpenTofu or Terraform?`);
  const name = cli.kind === "tofu" ? "OpenTofu" : "Terraform";
  if (!atLeast(cli.version, MIN_VERSION[cli.kind])) {
    fail(`${binary} is ${name} ${cli.version}; the stack needs ${name} >= ${MIN_VERSION[cli.kind]} (set TERRAFORM_BINARY_NAME to another)`);
  }
  console.error(`kube-on-os: using ${name} ${cli.version} (${binary}, ${why}; set TERRAFORM_BINARY_NAME to choose)`);
  return { binary, ...cli };
}

/** The CLI configuration file the chosen CLI reads, as its documentation gives the order. */
function cliConfigFile(kind) {
  const configured = process.env.TF_CLI_CONFIG_FILE;
  if (configured) return configured;
  const home = os.homedir();
  const files = kind === "tofu" ? [".tofurc", ".terraformrc"] : [".terraformrc"];
  return files.map((f) => path.join(home, f)).find((f) => fs.existsSync(f));
}

/** Whether that configuration installs providers from a filesystem or network mirror. */
function usesProviderMirror(kind) {
  const file = cliConfigFile(kind);
  if (!file || !fs.existsSync(file)) return false;
  const text = fs.readFileSync(file, "utf8").replace(/#.*$|\/\/.*$/gm, "");
  return /provider_installation\s*{[\s\S]*\b(filesystem_mirror|network_mirror)\s*{/.test(text);
}

/** The synthesized stack's directory: cdktf.out/stacks/<the one stack>. */
function stackDir() {
  const stacks = path.join(ROOT, "cdktf.out", "stacks");
  const names = fs.existsSync(stacks) ? fs.readdirSync(stacks) : [];
  if (names.length !== 1) fail(`expected one synthesized stack in ${stacks}, found ${names.length}; run \`npm run deploy\` first`);
  return path.join(stacks, names[0]);
}

const args = process.argv.slice(2);
if (args[0] !== "output") warnOldNode();

if (args[0] === "output") {
  const cli = chooseCli();
  const result = spawnSync(cli.binary, [`-chdir=${stackDir()}`, ...args], {
    stdio: "inherit",
    env: { CHECKPOINT_DISABLE: "1", ...process.env },
  });
  process.exit(result.status ?? 1);
}

const env = { CHECKPOINT_DISABLE: "1", ...process.env };
env[FORWARDED_TF_VARS] = JSON.stringify(Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith("TF_VAR_"))));

if (RUNS_TERRAFORM.has(args[0])) {
  const cli = chooseCli();
  env.TERRAFORM_BINARY_NAME = cli.binary;
  if (usesProviderMirror(cli.kind) && !args.includes("--skip-provider-lock")) {
    console.error(`kube-on-os: providers come from the mirror in ${cliConfigFile(cli.kind)}: --skip-provider-lock`);
    args.push("--skip-provider-lock");
  }
}

function cdktf(cdktfArgs) {
  const result = spawnSync(path.join(ROOT, "node_modules", ".bin", "cdktf"), cdktfArgs, { stdio: "inherit", env });
  if (result.error) fail(`could not run cdktf (${result.error.message}); run \`npm ci\` first`);
  return result.status ?? 1;
}

/**
 * `npm run roll` and `npm run repair`: their arguments checked, the stack synthesized, then the
 * command run with the chosen CLI; one line for any of their errors.
 */
function replaceNodes(name, parse, run) {
  const refused = (error) => {
    if (error instanceof RollError || error instanceof RepairError) fail(`${name}: ${error.message}`);
    throw error;
  };
  let options;
  try {
    options = parse(args.slice(1));
  } catch (error) {
    refused(error);
  }
  const cli = chooseCli();
  env.TERRAFORM_BINARY_NAME = cli.binary;
  const synth = cdktf(["synth"]);
  if (synth !== 0) process.exit(synth);
  if (process.stdout.isTTY) process.stdout.write("\n");
  try {
    process.exit(run({ cli: cli.binary, stackDir: stackDir(), env, options }));
  } catch (error) {
    refused(error);
  }
}

async function main() {
  if (args[0] === "roll") replaceNodes("roll", parseArgs, roll);
  if (args[0] === "repair") replaceNodes("repair", parseRepairArgs, repair);
  if (PLANS.has(args[0]) && !args.includes("--skip-synth")) {
    // Synthesize first, so that what the project uses of its quotas can be read before the plan
    // (scripts/quota-usage.js), against the synthesized stack's state.
    const synth = cdktf(["synth"]);
    if (synth !== 0) process.exit(synth);
    // At a terminal, cdktf leaves its last line open.
    if (process.stdout.isTTY) process.stdout.write("\n");
    const usage = await quotaUsage(stackDir(), env.TERRAFORM_BINARY_NAME, env);
    if (usage) env.TF_VAR_quota_usage = usage;
    args.push("--skip-synth");
  }
  const status = cdktf(args);
  process.exit(status === 0 && args[0] === "diff" ? saltPreview() : status);
}

/** `npm run diff`'s Salt preview of the plan cdktf saved; its exit status. */
function saltPreview() {
  const dir = stackDir();
  if (!fs.existsSync(path.join(dir, "plan"))) fail(`Salt preview: ${path.join(dir, "plan")} is missing: cdktf saved no plan`);
  const shown = spawnSync(env.TERRAFORM_BINARY_NAME, [`-chdir=${dir}`, "show", "-json", "plan"], {
    encoding: "utf8",
    env,
    maxBuffer: 512 * 1024 * 1024,
  });
  if (shown.status !== 0) fail(`Salt preview: show -json plan failed: ${shown.stderr.trim().split("\n").at(-1)}`);
  const report = path.join(dir, "salt-preview.json");
  try {
    const status = preview({ plan: JSON.parse(shown.stdout), stackDir: dir, report, env });
    console.log(`Salt preview: the report is ${path.relative(process.cwd(), report)}`);
    return status;
  } catch (error) {
    if (error instanceof PreviewError) fail(`Salt preview: ${error.message}`);
    throw error;
  }
}

main();
