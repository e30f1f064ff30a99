#!/usr/bin/env node
// How many provisioner steps a deploy runs one after the other: the longest dependency path
// through `terraform_data` and `null_resource` resources in `tofu graph -type=plan`, counting only
// those (other resources and values on the way link two steps but are not steps themselves).
//
//   node scripts/provisioner-steps.js [--json]               the stack, synthesized from TF_VAR_*
//   node scripts/provisioner-steps.js --dir DIR [--json]     any Terraform configuration directory
//   node scripts/provisioner-steps.js --dot FILE|- [--json]  DOT that `tofu graph` printed
//
// e.g. `TF_VAR_num_kube_nodes=50 node scripts/provisioner-steps.js`. A resource with count or
// for_each is one node of the graph and so one step, however many instances it has.
//
// Output, or the same as one JSON object with --json:
//   sequential provisioner steps: 3
//   provisioner resources: 4
//   longest chain: terraform_data.a -> terraform_data.b -> terraform_data.c
"use strict";

const fs = require("node:fs");
const path = require("node:path");
const { parseArgs } = require("node:util");
const { GraphError, toolchainEnv, synthStack, copyConfig, tofuGraph, provisionerSteps, runMain } = require("./stack-graph");

function readDot(file) {
  try {
    return fs.readFileSync(file === "-" ? 0 : file, "utf8");
  } catch (error) {
    throw new GraphError(`cannot read ${file}: ${error.message}`);
  }
}

function graphOf(config) {
  const env = toolchainEnv(["terraform"]);
  const source = config === undefined ? synthStack(env) : copyConfig(path.resolve(config));
  try {
    return tofuGraph(source.dir, env);
  } finally {
    source.cleanup();
  }
}

function main(argv) {
  const { values } = parseArgs({
    args: argv,
    options: { dir: { type: "string" }, dot: { type: "string" }, json: { type: "boolean", default: false } },
  });
  if (values.dir !== undefined && values.dot !== undefined) throw new GraphError("use --dir or --dot, not both");
  const steps = provisionerSteps(values.dot === undefined ? graphOf(values.dir) : readDot(values.dot));
  if (values.json) {
    console.log(JSON.stringify(steps));
    return;
  }
  console.log(`sequential provisioner steps: ${steps.sequentialSteps}`);
  console.log(`provisioner resources: ${steps.provisionerResources}`);
  console.log(`longest chain: ${steps.longestChain.length > 0 ? steps.longestChain.join(" -> ") : "(none)"}`);
}

runMain("provisioner-steps", main);
