// `npm run roll`: replaces the Kubernetes nodes' machines one at a time, each with its own apply
// (`-replace=<its machine>`), for a new image or anything else that only a new machine gets
// (docs/provisioning.md, "Re-applying, scaling, rebuilding"). In each apply the node's drain record drains it
// before its machine is deleted (provisioners/drain-node.sh), the chain accepts the new machine's
// key and orch.deploy joins it and checks that every node is Ready before it uncordons it; only
// then does the next apply start. The order: the workers (the default pool's, then the pools'),
// then the other dqlite voters, the Kubernetes master last, so that never two voters are out and
// a new image meets a worker first.
//
//   npm run roll [-- [--nodes HOST,...] [--from HOST] [--auto-approve]]
//
// --nodes rolls only those nodes (in the same order); --from starts at that node, to go on after a
// failed apply; --auto-approve approves each apply. The nodes and their machines' addresses come
// from the stack's kube_node_machines output, so the deployment must have been applied with this
// version first.
"use strict";

const { spawnSync } = require("node:child_process");

// microk8s HA: three dqlite voters (facts/cluster-size.ts CONTROL_PLANE_SIZE).
const HA_VOTERS = 3;

class RollError extends Error {}

/** `{ nodes, from, autoApprove }` from the roll's arguments; a RollError names what is wrong. */
function parseArgs(args) {
  const options = { nodes: undefined, from: undefined, autoApprove: false };
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = args[i].split(/=(.*)/s, 2);
    const value = () => {
      const given = inline ?? args[++i];
      if (given === undefined || given === "") throw new RollError(`${flag} needs a value`);
      return given;
    };
    if (flag === "--nodes")
      options.nodes = value()
        .split(",")
        .map((host) => host.trim());
    else if (flag === "--from") options.from = value();
    else if (flag === "--auto-approve" && inline === undefined) options.autoApprove = true;
    else throw new RollError(`unknown argument ${JSON.stringify(args[i])} (use --nodes HOST,..., --from HOST, --auto-approve)`);
  }
  return options;
}

/**
 * The nodes of kube_node_machines (the master first) in the order they are replaced: the workers,
 * then the other voters, the master last; only `nodes` when given, from `from` on when given.
 * Refuses a voter of a control plane below three voters: its replacement could lose the
 * cluster's database (dqlite keeps a single copy with one voter and a spare).
 */
function rollOrder(machines, { nodes, from } = {}) {
  if (!Array.isArray(machines) || machines.length === 0) throw new RollError("the deployment has no Kubernetes nodes to roll");
  const [master, ...others] = machines;
  const order = [...others.filter((node) => !node.voter), ...others.filter((node) => node.voter), master];
  const hosts = order.map((node) => node.host);
  const unknown = (host) =>
    new RollError(`${host} is not a Kubernetes node of this deployment (its nodes: ${[...hosts].sort().join(", ")})`);
  let chosen = order;
  if (nodes !== undefined) {
    for (const host of nodes) if (!hosts.includes(host)) throw unknown(host);
    chosen = order.filter((node) => nodes.includes(node.host));
  }
  if (from !== undefined) {
    const start = chosen.findIndex((node) => node.host === from);
    if (start < 0) throw hosts.includes(from) ? new RollError(`--from ${from}: not among the nodes to roll`) : unknown(from);
    chosen = chosen.slice(start);
  }
  const voters = machines.filter((node) => node.voter).length;
  const lone = chosen.find((node) => node.voter && voters < HA_VOTERS);
  if (lone) {
    throw new RollError(
      `${lone.host} is one of ${voters} dqlite voter${voters === 1 ? "" : "s"}: below ${HA_VOTERS} its replacement could ` +
        `lose the cluster's database; roll the workers only (--nodes), or raise num_kube_nodes to ${HA_VOTERS} first`,
    );
  }
  return chosen;
}

/** `run(args, stdio)`: `cli` in the stack's directory; what it prints is returned unless stdio is "inherit". */
function stackCli(cli, stackDir, env) {
  return (cliArgs, stdio = "pipe") =>
    spawnSync(cli, [`-chdir=${stackDir}`, ...cliArgs], { encoding: "utf8", env, stdio, maxBuffer: 512 * 1024 * 1024 });
}

/** A failed command's last three lines, on one line. */
function lastLines(result) {
  return (result.stderr || result.stdout).trim().split("\n").slice(-3).join(" ");
}

/**
 * The deployment's Kubernetes nodes (its kube_node_machines output, the master first), once
 * `run` (stackCli's) has initialised the stack; `command` is the npm script that needs them.
 */
function nodeMachines(cli, run, command) {
  const init = run(["init", "-input=false"]);
  if (init.status !== 0) throw new RollError(`${cli} init failed: ${lastLines(init)}`);
  const output = run(["output", "-json", "kube_node_machines"]);
  if (output.status !== 0) {
    throw new RollError(`the state has no kube_node_machines output: apply this version once (npm run deploy), then ${command}`);
  }
  return JSON.parse(output.stdout);
}

/**
 * Rolls the nodes with `cli` in the synthesized stack's directory, as `options` (parseArgs's)
 * say, printing one line before each apply: `machines` when given (read by nodeMachines, which
 * initialised the stack), else read and initialised here. Returns the exit status: 0 when every
 * apply succeeded, else the failed one's after a line that says how to go on.
 */
function roll({ cli, stackDir, env, options, machines, log = (line) => console.error(`kube-on-os: ${line}`) }) {
  const run = stackCli(cli, stackDir, env);
  const order = rollOrder(machines ?? nodeMachines(cli, run, "roll"), options);
  log(`roll: ${order.length} Kubernetes node${order.length === 1 ? "" : "s"}, one at a time: ${order.map((n) => n.host).join(", ")}`);
  for (const [i, node] of order.entries()) {
    const step = `roll ${i + 1}/${order.length}`;
    log(
      `${step}: ${node.host}${node.voter ? " (a dqlite voter)" : ""}: drained, its machine replaced, rejoined (-replace=${node.address})`,
    );
    const apply = run(["apply", ...(options.autoApprove ? ["-auto-approve", "-input=false"] : []), `-replace=${node.address}`], "inherit");
    if (apply.status !== 0) {
      log(
        `roll stopped at ${node.host} (${i + 1} of ${order.length}): its apply failed; ` +
          `once the cause is fixed, \`npm run roll -- --from ${node.host}\` goes on from it`,
      );
      return apply.status ?? 1;
    }
    log(`${step}: ${node.host} is back on a new machine`);
  }
  log(`roll: ${order.length} node${order.length === 1 ? "" : "s"} on new machines`);
  return 0;
}

module.exports = { roll, rollOrder, parseArgs, nodeMachines, stackCli, lastLines, RollError };
