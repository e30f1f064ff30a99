// `npm run repair`: replaces the Kubernetes nodes whose machines have failed, without a person
// naming them (issue 39; docs/decisions.md, "Nodes heal by a command that rolls them"). A node is
// unhealthy when its server is gone, in ERROR or SHUTOFF, as a plan's refresh reads them, or when
// Kubernetes has had it NotReady for --not-ready-for seconds or more (default 300) on a server
// that runs, as a voter reports through the Salt master (microk8s.node_health).
// The unhealthy nodes are rolled onto new machines by `npm run roll`'s code (scripts/roll.js): one
// apply each, drained first, the workers before the voters, the master last.
//
//   npm run repair [-- [--max N] [--not-ready-for SECONDS] [--dry-run] [--auto-approve]]
//
// The limits are those of Cluster API's MachineHealthCheck: when more than --max nodes (default 1)
// are unhealthy, the cause is wider than a machine (the cloud, its network) and nothing is
// replaced; never a dqlite voter while another voter is unhealthy or NotReady, so the other two
// keep the quorum. --dry-run says what it would replace and replaces nothing.
"use strict";

const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { masterFailure, onMaster, PreviewError, readPlan } = require("./preview");
const { lastLines, nodeMachines, roll, rollOrder, RollError, stackCli } = require("./roll");

class RepairError extends Error {}

/** What a server's refreshed power_state (the provider's lower-cased Nova status) says of its node. */
const FAILED_STATES = { error: "its server is in ERROR", shutoff: "its server is SHUTOFF" };
/**
 * Seconds a node may be NotReady on a running server before it is replaced: the 5 minutes of
 * Cluster API's MachineHealthCheck examples (Ready Unknown or False, `timeout: 300s`), which is
 * also when Kubernetes starts evicting the pods of an unreachable node (the NoExecute taint's
 * default toleration, 300 s).
 */
const NOT_READY_FOR = 300;
/** Seconds Salt waits for each voter asked for Kubernetes' view (then find_job's 10 s). */
const VIEW_TIMEOUT = 20;

/** `{ max, notReadyFor, dryRun, autoApprove }` from the repair's arguments; a RepairError names what is wrong. */
function parseRepairArgs(args) {
  const options = { max: 1, notReadyFor: NOT_READY_FOR, dryRun: false, autoApprove: false };
  const usage = "use --max N, --not-ready-for SECONDS, --dry-run, --auto-approve";
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    if (flag === "--max") {
      const given = inline ?? args[++i];
      if (given === undefined || !/^[1-9][0-9]{0,2}$/.test(given))
        throw new RepairError(`--max needs a whole number of nodes from 1 to 999, got ${JSON.stringify(given ?? "")}`);
      options.max = Number(given);
    } else if (flag === "--not-ready-for") {
      const given = inline ?? args[++i];
      if (given === undefined || !/^[1-9][0-9]{0,5}$/.test(given) || Number(given) > 86400)
        throw new RepairError(`--not-ready-for needs a whole number of seconds from 1 to 86400, got ${JSON.stringify(given ?? "")}`);
      options.notReadyFor = Number(given);
    } else if (flag === "--dry-run" && inline === undefined) options.dryRun = true;
    else if (flag === "--auto-approve" && inline === undefined) options.autoApprove = true;
    else throw new RepairError(`unknown argument ${JSON.stringify(args[i])} (${usage})`);
  }
  return options;
}

/**
 * Kubernetes' view of the nodes: `{ from, nodes }`, `nodes` a Map from node name to
 * microk8s.node_health's entry as the first of `voters` (minion ids, the master first) to answer
 * reports it, each asked in turn through the Salt master (a voter whose machine is dead would
 * hold a joint call to Salt's timeout); or `{ unavailable }`, a line saying why there is none.
 * `read` is preview's readPlan of the repair's plan.
 */
function kubernetesView({ read, voters, env }) {
  if (!read.runProvisioners) return { unavailable: "run_provisioners is false: no Salt runs on the machines to ask" };
  if (read.live === undefined) {
    return { unavailable: "the state has no salt_preview output (a cluster applied before it existed): npm run deploy once adds it" };
  }
  if (voters.length === 0) return { unavailable: "no dqlite voter's server runs to ask" };
  const silent = [];
  for (const id of voters) {
    const command = `sudo salt --out=json --static --timeout=${VIEW_TIMEOUT} ${id} microk8s.node_health`;
    let ran;
    try {
      ran = onMaster({ live: read.live, hostKeys: read.hostKeys, command, env });
    } catch (error) {
      if (error instanceof PreviewError) return { unavailable: error.message };
      throw error;
    }
    let answer;
    try {
      answer = JSON.parse(ran.stdout)[id];
    } catch {
      // No JSON: the master was not reached, or its Salt did not run.
      return { unavailable: masterFailure(read.live, ran).line };
    }
    if (Array.isArray(answer)) return { from: id, nodes: new Map(answer.map((node) => [node.name, node])) };
    silent.push(`${id}: ${String(answer ?? "no answer").split("\n")[0]}`);
  }
  return { unavailable: `no dqlite voter answered microk8s.node_health (${silent.join("; ")})` };
}

/**
 * What Kubernetes (`view`, kubernetesView's) says of `node` (a nodeHealth entry whose server
 * runs): `{ problem }` once it has been NotReady for `notReadyFor` seconds or more, else
 * `{ state }`; `notReady` whenever it is not Ready, for the voters' rule.
 */
function judgeNode(node, view, notReadyFor) {
  const known = view.nodes.get(node.host);
  if (known === undefined) return { state: `${node.state}; Kubernetes has no node ${node.host} (npm run deploy joins it)` };
  if (known.ready) return { state: `${node.state}, Ready` };
  const how = known.unreachable ? "its kubelet stopped reporting" : "its kubelet reports it not Ready";
  const seconds = known.not_ready_seconds;
  if (seconds === null || seconds === undefined) {
    return { notReady: true, state: `${node.state}, NotReady (${how}) since a time Kubernetes does not give: not judged` };
  }
  if (seconds >= notReadyFor) return { notReady: true, problem: `NotReady for ${seconds} s (${how}), its server running` };
  return { notReady: true, state: `${node.state}, NotReady for ${seconds} s (${how}), under --not-ready-for ${notReadyFor}` };
}

/** `health` (nodeHealth's) with Kubernetes' judgement (judgeNode) of each node whose server runs. */
function withKubernetes(health, view, notReadyFor) {
  return health.map((node) => (node.runs ? { ...node, ...judgeNode(node, view, notReadyFor) } : node));
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
    return {
      ...node,
      problem: FAILED_STATES[state],
      runs: FAILED_STATES[state] === undefined,
      state: `its server is ${String(state).toUpperCase()}`,
    };
  });
}

/**
 * The unhealthy nodes to replace, in the roll's order, or a RepairError that says why none may
 * be: more than `max` unhealthy, or an unhealthy dqlite voter while another voter is unhealthy
 * or NotReady.
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
  const down = health.filter((node) => node.voter && (node.problem !== undefined || node.notReady));
  if (down.some((node) => node.problem !== undefined) && down.length > 1) {
    throw new RepairError(
      `${down.length} of the dqlite voters are unhealthy or NotReady (${down.map((node) => node.host).join(", ")}): ` +
        `replacing one would leave fewer than a majority of voters, and without one the cluster's database has lost its quorum, ` +
        `which a new machine cannot restore; nothing is replaced`,
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
  let health = nodeHealth(machines, shown);
  const voters = health.filter((node) => node.runs && node.voter && node.fqdn).map((node) => node.fqdn);
  const view = kubernetesView({ read: readPlan(shown), voters, env });
  if (view.unavailable) {
    log(`repair: Kubernetes' view: ${view.unavailable}; the nodes whose servers run are judged by their servers alone`);
  } else {
    log(`repair: Kubernetes' view, from ${view.from}: ${view.nodes.size} nodes`);
    health = withKubernetes(health, view, options.notReadyFor);
  }
  for (const node of health) log(`repair: ${node.host}: ${node.problem ?? node.state}`);
  const chosen = repairing(() => repairPlan(health, options));
  if (chosen.length === 0) {
    const waiting = health.filter((node) => node.notReady).map((node) => node.host);
    if (waiting.length > 0) {
      const are = waiting.length === 1 ? "is" : "are";
      log(`repair: nothing to replace yet: ${waiting.join(", ")} ${are} NotReady, under --not-ready-for ${options.notReadyFor}`);
    } else log(`repair: all ${health.length} Kubernetes nodes are healthy; nothing to replace`);
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

module.exports = { repair, repairPlan, nodeHealth, withKubernetes, kubernetesView, parseRepairArgs, RepairError, NOT_READY_FOR };
