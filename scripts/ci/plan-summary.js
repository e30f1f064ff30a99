#!/usr/bin/env node
// Reads `tofu show -json <plan>` on stdin and writes GitLab's terraform report: the number of
// create, update and delete actions, counted exactly as gitlab-tofu's jq filter counts them (a
// replacement is one delete and one create).
"use strict";

const fs = require("node:fs");

let plan;
try {
  plan = JSON.parse(fs.readFileSync(0, "utf8"));
} catch (error) {
  console.error(`plan-summary: stdin is not the JSON of a plan (${error.message})`);
  process.exit(1);
}
if (plan === null || typeof plan !== "object" || !("format_version" in plan)) {
  console.error("plan-summary: stdin is JSON, but not `tofu show -json` of a plan");
  process.exit(1);
}
const actions = (plan.resource_changes ?? []).flatMap((change) => change.change?.actions ?? []);
const count = (action) => actions.filter((a) => a === action).length;
process.stdout.write(JSON.stringify({ create: count("create"), update: count("update"), delete: count("delete") }) + "\n");
