// The stack's dependency graph as `tofu graph` reports it, shared by scripts/graph.js (docs/graph.svg)
// and scripts/provisioner-steps.js: synthesize, initialise offline, read tofu's DOT, and reduce it to
// the nodes that matter (resources, or only provisioners).
"use strict";

const { execFileSync, spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const ROOT = path.resolve(__dirname, "..");
const STACK_NAME = "kube-on-os";

/** Resource types that only run provisioners; each one is a step some later step may wait for. */
const PROVISIONER_TYPES = new Set(["terraform_data", "null_resource"]);

class GraphError extends Error {}

/**
 * Installs the named toolchain pieces (no-ops once cached) and returns the environment
 * scripts/toolchain/env.sh sets up: the pinned tofu first on PATH, pointed at the offline mirror.
 */
function toolchainEnv(installers) {
  for (const installer of installers) {
    const result = spawnSync("bash", [path.join(ROOT, "scripts", "toolchain", `${installer}.sh`)], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    if (result.status !== 0) throw new GraphError(`the toolchain's ${installer}.sh failed (see above)`);
  }
  const printed = execFileSync("bash", ["-c", `source "${ROOT}/scripts/toolchain/env.sh" && env -0`], { encoding: "utf8" });
  return Object.fromEntries(
    printed
      .split("\0")
      .filter(Boolean)
      .map((entry) => [entry.slice(0, entry.indexOf("=")), entry.slice(entry.indexOf("=") + 1)]),
  );
}

/**
 * Synthesizes the stack into a new temporary directory by running the app command of cdktf.json,
 * as `cdktf synth` does, and returns the stack's directory. The app reads TF_VAR_* from `env`
 * itself (main.ts), so `env` decides the configuration.
 */
function synthStack(env) {
  const outdir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-graph-"));
  const { app } = JSON.parse(fs.readFileSync(path.join(ROOT, "cdktf.json"), "utf8"));
  const result = spawnSync(app, { shell: true, cwd: ROOT, encoding: "utf8", env: { ...env, CDKTF_OUTDIR: outdir } });
  if (result.status !== 0) {
    fs.rmSync(outdir, { recursive: true, force: true });
    // main.ts prints a configuration mistake as one line; pass it on as it is.
    throw new GraphError(`synth failed: ${(result.stderr || result.stdout || String(result.error)).trim()}`);
  }
  return { dir: path.join(outdir, "stacks", STACK_NAME), cleanup: () => fs.rmSync(outdir, { recursive: true, force: true }) };
}

/** A throwaway copy of a Terraform configuration directory, so that `tofu init` leaves it untouched. */
function copyConfig(dir) {
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) throw new GraphError(`${dir} is not a directory`);
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-graph-"));
  fs.cpSync(dir, copy, { recursive: true, filter: (source) => !/^\.terraform(\.lock\.hcl)?$/.test(path.basename(source)) });
  return { dir: copy, cleanup: () => fs.rmSync(copy, { recursive: true, force: true }) };
}

/**
 * `tofu graph` of the configuration in `dir` (changed in place: an override file and .terraform/).
 * The graph type is `plan`, tofu's default: the dependencies the next apply follows.
 */
function tofuGraph(dir, env) {
  // An override file replaces whatever backend the stack declares (GitLab's http state in
  // production): `tofu graph` needs an initialised backend, and a local one needs no server.
  fs.writeFileSync(path.join(dir, "kube_on_os_graph_override.tf.json"), `${JSON.stringify({ terraform: { backend: { local: {} } } })}\n`);
  const tofu = (args) => {
    const result = spawnSync(env.KOO_TOFU, [...args, "-no-color"], { cwd: dir, encoding: "utf8", env: { ...env, TF_IN_AUTOMATION: "1" } });
    if (result.status !== 0)
      throw new GraphError(`tofu ${args[0]} failed:\n${(result.stderr || result.stdout || String(result.error)).trim()}`);
    return result.stdout;
  };
  tofu(["init", "-input=false"]);
  return tofu(["graph", "-type=plan"]);
}

// A DOT parser of our own rather than a library: no DOT parser is among the project's
// dependencies, and tofu writes one fixed, line-based subset of DOT (internal/dag's writer): one
// statement per line, every id a Go-quoted string. Anything else is rejected, not skipped, so a
// change in tofu's output fails loudly instead of losing edges.
const QUOTED = String.raw`"((?:[^"\\]|\\.)*)"`;
const ATTRIBUTES = String.raw`(?:\s*\[.*\])?`;
const EDGE = new RegExp(`^${QUOTED}\\s*->\\s*${QUOTED}${ATTRIBUTES};?$`);
const NODE = new RegExp(`^${QUOTED}${ATTRIBUTES};?$`);
const IGNORED = [/^$/, /^(strict\s+)?digraph\b[^{]*\{$/, /^subgraph\b[^{]*\{$/, /^\}$/, /^[A-Za-z_]+\s*=\s*"[^"]*";?$/];

const unquote = (text) => text.replace(/\\(["\\])/g, "$1");

/** The nodes and edges of tofu's DOT. An edge [a, b] means that a depends on b. */
function parseTofuDot(dot) {
  const nodes = new Set();
  const edges = [];
  dot.split("\n").forEach((raw, index) => {
    const line = raw.trim();
    let match;
    if ((match = EDGE.exec(line))) {
      const [from, to] = [unquote(match[1]), unquote(match[2])];
      nodes.add(from).add(to);
      edges.push([from, to]);
    } else if ((match = NODE.exec(line))) {
      nodes.add(unquote(match[1]));
    } else if (!IGNORED.some((pattern) => pattern.test(line))) {
      throw new GraphError(`unexpected line ${index + 1} in tofu's DOT: ${line}`);
    }
  });
  return { nodes, edges };
}

// Two-part addresses that are not resources (`var.x`, `meta.count-boundary`, ...).
const NOT_RESOURCES = new Set(["var", "local", "output", "module", "check", "meta"]);

/**
 * What a node of tofu's graph stands for: `{ address, type, data }` for a resource or data source
 * (`[root] module.m.terraform_data.x (expand)` is `module.m.terraform_data.x` of type
 * `terraform_data`), or null for anything else (variables, locals, outputs, providers, ...).
 */
function resourceOf(node) {
  const address = node.replace(/^\[root\] /, "").replace(/ \([^)]*\)$/, "");
  const local = address.replace(/^(module\.[A-Za-z0-9_-]+\.)+/, "");
  const match = /^(data\.)?([a-z][a-z0-9_]*)\.([A-Za-z_][A-Za-z0-9_-]*)$/.exec(local);
  if (!match || (!match[1] && NOT_RESOURCES.has(match[2]))) return null;
  return { address, type: match[2], data: Boolean(match[1]) };
}

const isProvisioner = (resource) => resource !== null && !resource.data && PROVISIONER_TYPES.has(resource.type);

/**
 * The graph on the nodes `keep` accepts: a depends on b when tofu's graph has a path from a to b
 * whose inner nodes are all dropped ones. Keys are resource addresses; each node's dependencies
 * are sorted, so that everything built from the result is deterministic.
 */
function project({ nodes, edges }, keep) {
  const successors = new Map([...nodes].map((node) => [node, []]));
  for (const [from, to] of edges) successors.get(from).push(to);
  const kept = new Map([...nodes].map((node) => [node, resourceOf(node)]).filter(([, resource]) => keep(resource)));
  const graph = new Map();
  for (const [node, resource] of kept) {
    const dependencies = new Set();
    const seen = new Set([node]);
    const stack = [...successors.get(node)];
    while (stack.length > 0) {
      const next = stack.pop();
      if (seen.has(next)) continue;
      seen.add(next);
      if (kept.has(next)) dependencies.add(kept.get(next).address);
      else stack.push(...successors.get(next));
    }
    graph.set(resource.address, { ...resource, dependencies: [...dependencies].sort() });
  }
  return new Map([...graph].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * The longest chain of dependencies in a projected graph, first step first. Of chains equally
 * long, the one whose last step's address sorts first wins.
 */
function longestChain(graph) {
  const memo = new Map();
  const visiting = new Set();
  const chainTo = (address) => {
    if (memo.has(address)) return memo.get(address);
    if (visiting.has(address)) throw new GraphError(`dependency cycle through ${address}`);
    visiting.add(address);
    let best = [];
    for (const dependency of graph.get(address).dependencies) {
      const chain = chainTo(dependency);
      if (chain.length > best.length) best = chain;
    }
    visiting.delete(address);
    memo.set(address, [...best, address]);
    return memo.get(address);
  };
  let longest = [];
  for (const address of graph.keys()) {
    const chain = chainTo(address);
    if (chain.length > longest.length) longest = chain;
  }
  return longest;
}

/** How many provisioner steps must run one after the other, and how many there are in all. */
function provisionerSteps(dot) {
  const graph = project(parseTofuDot(dot), isProvisioner);
  const chain = longestChain(graph);
  return { sequentialSteps: chain.length, provisionerResources: graph.size, longestChain: chain };
}

const escapeDot = (text) => text.replace(/["\\]/g, "\\$&");
const quote = (text) => `"${escapeDot(text)}"`;

/** DOT of a projected graph for Graphviz, one box per resource, an arrow from each to what it needs. */
function toDot(graph) {
  const lines = [
    `digraph ${quote("kube-on-os")} {`,
    '\trankdir = "RL"',
    '\tnode [shape = "box", fontname = "sans-serif", fontsize = "11"]',
  ];
  for (const [address, resource] of graph) {
    const style = resource.data ? ', style = "dashed"' : isProvisioner(resource) ? ', style = "filled", fillcolor = "lightyellow"' : "";
    // The name on a line of its own keeps the boxes narrow; `\n` is Graphviz's line break.
    const [, head, name] = /^(.*)\.([^.]+)$/.exec(address);
    lines.push(`\t${quote(address)} [label = "${escapeDot(head)}\\n${escapeDot(name)}"${style}]`);
  }
  for (const [address, resource] of graph) {
    for (const dependency of resource.dependencies) lines.push(`\t${quote(address)} -> ${quote(dependency)}`);
  }
  lines.push("}");
  return `${lines.join("\n")}\n`;
}

/** The environment with no deployment parameters in it: the stack's defaults apply. */
function withoutDeploymentParameters(env) {
  return Object.fromEntries(
    Object.entries(env).filter(
      ([key]) => !key.startsWith("TF_VAR_") && key !== "KUBE_ON_OS_FORWARDED_TF_VARS" && key !== "KUBE_ON_OS_BACKEND",
    ),
  );
}

/** Runs a CLI's main(), printing a GraphError or a bad option as one line rather than a stack trace. */
function runMain(name, main) {
  try {
    main(process.argv.slice(2));
  } catch (error) {
    if (!(error instanceof GraphError) && !String(error.code).startsWith("ERR_PARSE_ARGS_")) throw error;
    console.error(`${name}: ${error.message}`);
    process.exit(1);
  }
}

module.exports = {
  ROOT,
  GraphError,
  toolchainEnv,
  synthStack,
  copyConfig,
  tofuGraph,
  parseTofuDot,
  resourceOf,
  project,
  longestChain,
  provisionerSteps,
  toDot,
  withoutDeploymentParameters,
  runMain,
};
