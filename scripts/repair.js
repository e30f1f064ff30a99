// `npm run repair`: replaces the Kubernetes nodes whose machines have failed, without a person
// naming them (issue 39; docs/decisions.md, "Nodes heal by a command that rolls them"). A node is
// unhealthy when its server is gone, in ERROR or SHUTOFF, as a plan's refresh reads them.
// The unhealthy nodes are rolled onto new machines by `npm run roll`'s code (scripts/roll.js): one
// apply each, drained first, the workers before the voters, the master last.
//
//   npm run repair [-- [--max N] [--dry-run] [--auto-approve]]
//
// The limits are those of Cluster API's MachineHealthCheck: when more than --max nodes (default 1)
// are unhealthy, the cause is wider than a machine (the cloud, its network) and nothing is
// replaced; never more than one dqlite voter in a run, so the other two keep the quorum.
// --dry-run says what it would replace and replaces nothing.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { lastLines, nodeMachines, roll, rollOrder, RollError, stackCli } = require("./roll");

class RepairError extends Error {}

/** What a server's refreshed power_state (the provider's lower-cased Nova status) says of its node. */
const FAILED_STATES = { error: "its server is in ERROR", shutoff: "its server is SHUTOFF" };

/** `{ max, dryRun, autoApprove }` from the repair's arguments; a RepairError names what is wrong. */
function parseRepairArgs(args) {
  const options = { max: 1, dryRun: false, autoApprove: false };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag === "--max") {
      const given = inline ?? args[++i];
      if (given === undefined || !/^[1-9][0-9]{0,2}$/.test(given))
        throw new RepairError(`--max needs a whole number of nodes from 1 to 999, got ${JSON.stringify(given ?? "")}`);
      options.max = Number(given);
    } else if (flag === "--dry-run" && inline === undefined) options.dryRun = true;
    else if (flag === "--auto-approve" && inline === undefined) options.autoApprove = true;
    else throw new RepairError(`unknown argument ${JSON.stringify(args[i])} (use --max N, --dry-run, --auto-approve)`);
  }
  return options;
}

/**
 * Each node of kube_node_machines with `problem`, what is wrong with its machine (undefined when
 * nothing is), from `show -json` of a plan: a server its refresh found deleted is in the plan's
 * resource_drift as a delete; a failed one keeps its power_state in the prior state, which is
 * the state as refreshed.
 */
function nodeHealth(machines, shown) {
  const gone = new Set(
    (shown.resource_drift ?? []).filter((drift) => drift.change?.actions?.join() === "delete").map((drift) => drift.address),
  );
  const states = new Map(
    (shown.prior_state?.values?.root_module?.resources ?? []).map((resource) => [resource.address, resource.values?.power_state]),
  );
  return machines.map((node) => {
    if (gone.has(node.address)) return { ...node, problem: "its server is gone" };
    if (!states.has(node.address)) return { ...node, state: "has no server in the state yet: npm run deploy creates it" };
    const state = states.get(node.address);
    return { ...node, problem: FAILED_STATES[state], state: `its server is ${String(state).toUpperCase()}` };
  });
}

/**
 * The unhealthy nodes to replace, in the roll's order, or a RepairError that says why none may
 * be: more than `max` unhealthy, or more than one of them a dqlite voter.
 */
function repairPlan(health, { max }) {
  const unhealthy = health.filter((node) => node.problem !== undefined);
  if (unhealthy.length === 0) return [];
  const named = unhealthy.map((node) => `${node.host} (${node.problem})`).join(", ");
  if (unhealthy.length > max) {
    throw new RepairError(
      `${unhealthy.length} nodes are unhealthy, more than --max ${max}: ${named}; a failure this wide is the cloud's or its ` +
        `network's, not a machine's, so nothing is replaced (npm run roll -- --nodes replaces them by hand)`,
    );
  }
  const voters = unhealthy.filter((node) => node.voter);
  if (voters.length > 1) {
    throw new RepairError(
      `${voters.length} of the dqlite voters are unhealthy (${voters.map((node) => node.host).join(", ")}): without a majority ` +
        `of voters the cluster's database has lost its quorum, which a new machine cannot restore; nothing is replaced`,
    );
  }
  return rollOrder(health, { nodes: unhealthy.map((node) => node.host) });
}

/** What `step` returns; the roll's refusals it meets are the repair's. */
function repairing(step) {
  try {
    return step();
  } catch (error) {
    if (error instanceof RollError) throw new RepairError(error.message);
    throw error;
  }
}

/**
 * Repairs the deployment in `stackDir` with `cli`, as `options` (parseRepairArgs's) say: reads
 * its nodes and their servers' states after a refresh, then rolls the unhealthy ones. Returns the
 * exit status: 0 when every node is healthy or was replaced (or --dry-run), the roll's when it
 * fails; throws a RepairError, one line, when it may not repair.
 */
function repair({ cli, stackDir, env, options, log = (line) => console.error(`kube-on-os: ${line}`) }) {
  const run = stackCli(cli, stackDir, env);
  const machines = repairing(() => nodeMachines(cli, run, "repair"));
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-repair-"));
  let shown;
  try {
    // A plan, never applied: its refresh reads every server, and its resource_drift names a
    // server deleted out of band (nodeHealth).
    const planFile = path.join(dir, "repair.plan");
    const plan = run(["plan", "-input=false", `-out=${planFile}`]);
    if (plan.status !== 0) throw new RepairError(`reading the servers' states failed (${cli} plan): ${lastLines(plan)}`);
    const show = run(["show", "-json", planFile]);
    if (show.status !== 0) throw new RepairError(`${cli} show -json failed: ${lastLines(show)}`);
    shown = JSON.parse(show.stdout);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  const health = nodeHealth(machines, shown);
  for (const node of health) log(`repair: ${node.host}: ${node.problem ?? node.state}`);
  const chosen = repairing(() => repairPlan(health, options));
  if (chosen.length === 0) {
    log(`repair: all ${health.length} Kubernetes nodes are healthy; nothing to replace`);
    return 0;
  }
  const hosts = chosen.map((node) => node.host);
  if (options.dryRun) {
    log(`repair: would replace ${hosts.join(", ")} (npm run roll -- --nodes ${hosts.join(",")}); --dry-run replaces nothing`);
    return 0;
  }
  log(`repair: replacing ${hosts.join(", ")}, one at a time`);
  return roll({ cli, stackDir, env, machines, options: { nodes: hosts, from: undefined, autoApprove: options.autoApprove }, log });
}

module.exports = { repair, repairPlan, nodeHealth, parseRepairArgs, RepairError };
