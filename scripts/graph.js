#!/usr/bin/env node
// `npm run graph`: draws the stack's resources and their dependencies as docs/graph.svg.
//
//   node scripts/graph.js [--output FILE] [--full]
//
// The stack is synthesized with every deployment parameter at its default (num_kube_nodes = 3;
// TF_VAR_* in the caller's environment are ignored), so the picture depends on the code only.
// From `tofu graph -type=plan` it keeps the resources and data sources (dashed; provisioners
// filled), draws an arrow from each to the resources it waits for, and drops the arrows implied
// by others (Graphviz's tred); a counted resource is one box however many machines it makes.
// --full draws tofu's whole graph instead: variables, locals, outputs and the provider too.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const { parseArgs } = require("node:util");
const {
  ROOT,
  GraphError,
  toolchainEnv,
  synthStack,
  tofuGraph,
  parseTofuDot,
  project,
  toDot,
  withoutDeploymentParameters,
  runMain,
} = require("./stack-graph");

/** Pipes `input` through a Graphviz command. */
function graphviz(command, args, input, env) {
  const result = spawnSync(command, args, { input, encoding: "utf8", env, maxBuffer: 64 * 1024 * 1024 });
  if (result.status !== 0) throw new GraphError(`${command} failed: ${(result.stderr || String(result.error)).trim()}`);
  return result.stdout;
}

function main(argv) {
  const { values } = parseArgs({
    args: argv,
    options: { output: { type: "string", default: path.join(ROOT, "docs", "graph.svg") }, full: { type: "boolean", default: false } },
  });
  const env = withoutDeploymentParameters(toolchainEnv(["terraform", "graphviz"]));
  const stack = synthStack(env);
  let tofuDot;
  try {
    tofuDot = tofuGraph(stack.dir, env);
  } finally {
    stack.cleanup();
  }
  const dot = values.full ? tofuDot : graphviz("tred", [], toDot(project(parseTofuDot(tofuDot), (resource) => resource !== null)), env);
  // Graphviz's comments name its version and repeat each node's id: only noise in a diff.
  const svg = graphviz("dot", ["-Tsvg"], dot, env).replace(/<!--[\s\S]*?-->\n?/g, "");
  fs.mkdirSync(path.dirname(values.output), { recursive: true });
  fs.writeFileSync(values.output, svg);
  console.error(`==> wrote ${path.relative(process.cwd(), values.output) || values.output}`);
}

runMain("graph", main);
