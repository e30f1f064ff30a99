#!/usr/bin/env node
// The Salt preview beside a plan (issue 38): what the candidate Salt tree and pillar would change
// on each host that the plan keeps, in Salt's test mode, on the running cluster. `npm run diff`
// runs it after its plan (scripts/cdktf.js), the pipeline's plan job after its own
// (scripts/ci/tofu.sh salt-preview).
//
//   node scripts/preview.js --plan PLAN.json --stack DIR [--report FILE]
//
// PLAN.json is `show -json` of a saved plan; DIR the synthesized stack the plan was made from,
// whose assets are the candidate: the Salt tree, pillar/ and provisioners/ the apply would upload.
// The pillar Terraform writes comes from the plan's salt_preview output, a value the plan does
// not know yet (a new machine's server id) written "(known after apply)"; the cloud pillar
// (_cloud.sls, the credential) stays the live one on the master.
//
// Through the bastion, as the provisioning chain logs in (the deployer's ssh-agent; each host's
// key checked when ssh_host_keys gives one), the candidate goes to a directory of the login
// user's on the Salt master, and provisioners/preview.sh runs it in the master's koo-preview
// environment and removes it, whatever happens. Hosts the plan creates or replaces get a full
// highstate, and are not asked.
//
// Prints one line per host and what would change below it, and writes the same as JSON to
// --report. Exits 0 once the preview ran (a host that did not answer or would fail is named), or
// when there is nothing to preview: run_provisioners=false, no cluster yet, or a cluster applied
// before previews existed. Exits 1 when the Salt master cannot be reached or the preview could
// not run, unless KUBE_ON_OS_SALT_PREVIEW=warn; KUBE_ON_OS_SALT_PREVIEW=off skips it.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

/** What a value the plan does not know yet is written as, in the candidate pillar. */
const UNKNOWN = "(known after apply)";
/** The step that uploads the Salt tree and pillar, and the one that uploads provisioners/ to the master. */
const SYNC_STEP = /^SaltProvisioner_SyncSaltTree_[0-9A-F]{8}$/;
const SCRIPTS_STEP = /^SaltProvisioner_WaitForSaltMaster_[0-9A-F]{8}$/;
/** Where the preview's files go on the Salt master, in the login user's home (beside the chain's .kube-on-os/bin). */
const REMOTE = ".kube-on-os/preview";
/** Seconds each minion has to answer the preview (preview.sh --timeout). */
const SALT_TIMEOUT = 600;

class PreviewError extends Error {}

/** `value` with every part `unknown` marks (a plan's after_unknown) replaced by UNKNOWN. */
function known(value, unknown) {
  if (unknown === true) return UNKNOWN;
  if (Array.isArray(value)) return value.map((each, i) => known(each, Array.isArray(unknown) ? unknown[i] : undefined));
  if (value !== null && typeof value === "object") {
    const keys = new Set([...Object.keys(value), ...(unknown && typeof unknown === "object" ? Object.keys(unknown) : [])]);
    return Object.fromEntries([...keys].map((key) => [key, known(value[key] ?? null, unknown?.[key])]));
  }
  return value;
}

/** An output's planned value, UNKNOWN where the plan does not know it; undefined without the output. */
function planned(plan, name) {
  const change = plan.output_changes?.[name];
  return change === undefined ? undefined : known(change.after, change.after_unknown);
}

/**
 * What a plan says about the Salt preview: whether the chain runs, the running cluster's Salt
 * master and minions (the prior state's outputs), the candidate minions and pillar, and the
 * machines the plan creates or replaces.
 */
function readPlan(plan) {
  const priorOutputs = plan.prior_state?.values?.outputs ?? {};
  const priorResources = plan.prior_state?.values?.root_module?.resources ?? [];
  // The machines the plan creates, a replacement among them, by name (= minion id).
  const created = new Set(
    (plan.resource_changes ?? [])
      .filter((resource) => resource.type === "openstack_compute_instance_v2" && resource.change.actions.includes("create"))
      .map((resource) => resource.change.after?.name),
  );
  const preview = planned(plan, "salt_preview");
  // Whether the apply would run the chain: its steps are planned (count 1) when run_provisioners
  // is true. The plan's `variables` holds a TF_VAR_ value as it was given, "false" a string.
  const steps = plan.planned_values?.root_module?.resources ?? [];
  return {
    runProvisioners: steps.some((resource) => resource.type === "null_resource" && SYNC_STEP.test(resource.name)),
    hasCluster: priorResources.length > 0,
    live: priorOutputs.salt_preview?.value,
    liveMinions: priorOutputs.minion_ids?.value ?? [],
    minions: planned(plan, "minion_ids") ?? [],
    pillar: preview?.pillar,
    // A map: the plan keeps it parsed, a TF_VAR_ value too.
    hostKeys: plan.variables?.ssh_host_keys?.value ?? {},
    created,
  };
}

/**
 * What to do: `{ skip: line }` when there is nothing to preview, else the hosts to ask (kept:
 * there now and after the apply), the new ones (created or replaced) and the removed ones.
 */
function previewPlan(read) {
  if (!read.runProvisioners) return { skip: "run_provisioners is false: the apply runs no Salt, so there is nothing to preview" };
  if (!read.hasCluster) return { skip: "no cluster yet: every machine is new and gets a full highstate" };
  if (read.live === undefined) {
    return {
      skip: "the cluster was applied before Salt previews existed (its state has no salt_preview output): the next apply makes them possible",
    };
  }
  if (read.pillar === undefined) throw new PreviewError("the plan has no salt_preview output: synthesize this version again");
  const live = new Set(read.liveMinions);
  const fresh = read.minions.filter((id) => read.created.has(id) || !live.has(id));
  return {
    ask: read.minions.filter((id) => !fresh.includes(id)),
    fresh,
    removed: read.liveMinions.filter((id) => !read.minions.includes(id)),
  };
}

/** The synthesized asset directory a chain step's file provisioner uploads to `destination`. */
function assetOf(stackDir, stack, step, destination) {
  const key = Object.keys(stack.resource?.null_resource ?? {}).find((name) => step.test(name));
  const upload = key && stack.resource.null_resource[key].provisioner.find((each) => each.file?.destination === destination);
  if (!upload) throw new PreviewError(`${path.join(stackDir, "cdk.tf.json")} has no upload to ${destination}: synthesize again`);
  const dir = path.join(stackDir, upload.file.source.replace(/\/$/, ""));
  if (!fs.existsSync(dir)) throw new PreviewError(`${dir} is missing: synthesize again`);
  return dir;
}

/** The shell script the master runs from the uploaded directory: preview.sh as root, its report on stdout, then nothing left. */
const RUN = `set -u
d=$(dirname "$0")
trap 'sudo rm -rf -- "$d"' EXIT
status=0
sudo bash "$d/bin/preview.sh" --timeout "$1" "$d/stage" "$d/report.json" "\${@:2}" >&2 || status=$?
sudo cat "$d/report.json" 2>/dev/null || true
exit "$status"
`;

/** A gzipped tar of what the master needs: the candidate in stage/ as preview.sh takes it, provisioners/ in bin/, RUN. */
function candidateArchive(stackDir, pillar) {
  const stack = JSON.parse(fs.readFileSync(path.join(stackDir, "cdk.tf.json"), "utf8"));
  const stage = ".kube-on-os/stage";
  const sources = {
    "stage/salt": assetOf(stackDir, stack, SYNC_STEP, `${stage}/salt`),
    "stage/pillar": assetOf(stackDir, stack, SYNC_STEP, `${stage}/pillar`),
    bin: assetOf(stackDir, stack, SCRIPTS_STEP, ".kube-on-os/bin"),
  };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-preview-"));
  try {
    for (const [target, source] of Object.entries(sources)) fs.cpSync(source, path.join(dir, target), { recursive: true });
    // As Terraform writes it (constructs/provisioning/pillar.ts): the data-only renderer line, then
    // the data (JSON is YAML, and every string stays one).
    fs.writeFileSync(path.join(dir, "stage", "_from_terraform.sls"), `#!yaml\n${JSON.stringify(pillar, null, 2)}\n`);
    fs.writeFileSync(path.join(dir, "run.sh"), RUN);
    const tar = spawnSync("tar", ["-czf", "-", "-C", dir, "."], { maxBuffer: 256 * 1024 * 1024 });
    if (tar.status !== 0) throw new PreviewError(`tar failed: ${String(tar.stderr).trim()}`);
    return tar.stdout;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** ssh options for a host whose key is `key` (ssh_host_keys), checked as the chain checks it; none given, none checked. */
function hostKeyOptions(dir, name, address, key) {
  if (!key) return ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"];
  // The host's own key or the CA that signed it, as Terraform's connection host_key takes either.
  const file = path.join(dir, `known_hosts.${name}`);
  fs.writeFileSync(file, `${address} ${key}\n@cert-authority ${address} ${key}\n`);
  return ["-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${file}`, "-o", "GlobalKnownHostsFile=/dev/null"];
}

/**
 * Runs `command` on the Salt master through the bastion, as the chain logs in (the deployer's
 * ssh-agent and nothing of ~/.ssh/config), `input` on its stdin: `{ status, stdout, said }`,
 * `said` being its stderr's lines. `live` is the prior state's salt_preview output, `hostKeys`
 * ssh_host_keys.
 */
function onMaster({ live, hostKeys, command, input, env }) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-ssh-"));
  try {
    const common = [
      "-F",
      "/dev/null",
      "-o",
      "BatchMode=yes",
      "-o",
      "ConnectTimeout=30",
      "-o",
      "ServerAliveInterval=15",
      "-o",
      "LogLevel=ERROR",
    ];
    const jump = [
      "ssh",
      ...common,
      ...hostKeyOptions(dir, "bastion", live.bastion, hostKeys.bastion),
      "-W",
      "%h:%p",
      `${live.user}@${live.bastion}`,
    ];
    const ssh = spawnSync(
      "ssh",
      [
        ...common,
        ...hostKeyOptions(dir, "salt_master", live.salt_master.address, hostKeys.salt_master),
        "-o",
        `ProxyCommand=${jump.join(" ")}`,
        `${live.user}@${live.salt_master.address}`,
        command,
      ],
      { input: input ?? "", env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
    );
    if (ssh.error) throw new PreviewError(`could not run ssh (${ssh.error.message}): install an OpenSSH client`);
    return { status: ssh.status, stdout: ssh.stdout, said: ssh.stderr.split("\n").filter((line) => line.trim() !== "") };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Why an `onMaster` run that printed nothing usable failed, in one line naming the Salt master
 * and how it was reached: its last line, but for ssh's lines on the connection the failure
 * closed; `unreachable` when ssh itself failed (status 255).
 */
function masterFailure(live, ran) {
  const where = `the Salt master ${live.salt_master.id} (${live.salt_master.address}) through the bastion ${live.bastion} as ${live.user}`;
  const closed = /^(kex_exchange_identification|ssh_exchange_identification|Connection closed by)/;
  const why =
    ran.said
      .filter((line) => !closed.test(line.trim()))
      .at(-1)
      ?.trim() ?? `exit status ${ran.status}`;
  const unreachable = ran.status === 255;
  return { unreachable, line: unreachable ? `cannot reach ${where}: ${why}` : `failed on ${where}: ${why}` };
}

/**
 * Runs the preview on the Salt master: `{ status, report, said }`, `report` being preview.sh's
 * JSON (undefined when it wrote none) and `said` its lines.
 */
function runOnMaster({ live, hostKeys, archive, minions, env }) {
  const command = `sudo rm -rf -- ${REMOTE} && install -d -m 0700 ${REMOTE} && tar -xzf - -C ${REMOTE} && exec bash ${REMOTE}/run.sh ${SALT_TIMEOUT} ${minions.join(" ")}`;
  const ran = onMaster({ live, hostKeys, command, input: archive, env });
  let report;
  try {
    report = JSON.parse(ran.stdout);
  } catch {
    report = undefined;
  }
  return { ...ran, report };
}

/**
 * The preview of `plan` (parsed `show -json`) made from `stackDir`: prints its lines with `log`,
 * writes the report to `report` when given, and returns the exit status.
 */
function preview({ plan, stackDir, report, env = process.env, log = (line) => console.log(line) }) {
  const mode = env.KUBE_ON_OS_SALT_PREVIEW ?? "on";
  if (!["on", "warn", "off"].includes(mode)) {
    throw new PreviewError(`KUBE_ON_OS_SALT_PREVIEW must be on, warn or off (got ${JSON.stringify(mode)})`);
  }
  const write = (result) => {
    if (report) fs.writeFileSync(report, `${JSON.stringify(result, null, 2)}\n`);
  };
  const say = (line) => log(`Salt preview: ${line}`);
  if (mode === "off") {
    say("skipped (KUBE_ON_OS_SALT_PREVIEW=off)");
    write({ status: "skipped", hosts: {} });
    return 0;
  }
  const read = readPlan(plan);
  const decided = previewPlan(read);
  if (decided.skip) {
    say(decided.skip);
    write({ status: "nothing-to-preview", reason: decided.skip, hosts: {} });
    return 0;
  }
  const hosts = {};
  const { live } = read;
  let status = "previewed";
  let exit = 0;
  if (decided.ask.length > 0) {
    say(
      `the candidate Salt tree and pillar in test mode on ${decided.ask.length} host${decided.ask.length === 1 ? "" : "s"}, ` +
        `through the Salt master ${live.salt_master.id}; nothing changes on any of them`,
    );
    const ran = runOnMaster({ live, hostKeys: read.hostKeys, archive: candidateArchive(stackDir, read.pillar), minions: decided.ask, env });
    if (ran.report === undefined) {
      const { unreachable, line } = masterFailure(live, ran);
      status = unreachable ? "unreachable" : "failed";
      if (mode === "warn") {
        say(`warning: ${line} (KUBE_ON_OS_SALT_PREVIEW=warn)`);
      } else {
        say(line);
        exit = 1;
      }
      write({ status, reason: line, hosts: {} });
      return exit;
    }
    for (const line of ran.said) log(line);
    Object.assign(hosts, ran.report.hosts);
  }
  for (const id of decided.fresh) {
    log(`${id}: new machine: full highstate`);
    hosts[id] = { status: "new-machine" };
  }
  for (const id of decided.removed) {
    log(`${id}: removed: the apply destroys its machine`);
    hosts[id] = { status: "removed" };
  }
  write({ status, hosts });
  return exit;
}

function main(argv) {
  const options = {};
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (!["--plan", "--stack", "--report"].includes(flag) || value === undefined) {
      throw new PreviewError(
        `usage: preview.js --plan PLAN.json --stack DIR [--report FILE] (got ${JSON.stringify(argv.slice(i).join(" "))})`,
      );
    }
    options[flag.slice(2)] = value;
  }
  if (!options.plan || !options.stack) throw new PreviewError("usage: preview.js --plan PLAN.json --stack DIR [--report FILE]");
  let plan;
  try {
    plan = JSON.parse(fs.readFileSync(options.plan === "-" ? 0 : options.plan, "utf8"));
  } catch (error) {
    throw new PreviewError(`cannot read the plan ${options.plan}: ${error.message}`);
  }
  return preview({ plan, stackDir: options.stack, report: options.report });
}

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof PreviewError)) throw error;
    console.error(`kube-on-os: Salt preview: ${error.message}`);
    process.exitCode = 1;
  }
}

module.exports = { preview, readPlan, previewPlan, known, onMaster, masterFailure, PreviewError, UNKNOWN };
