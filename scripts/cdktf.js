#!/usr/bin/env node
// Runs the cdktf CLI (`npm run synth|diff|deploy`) so that the app still sees TF_VAR_*.
//
// cdktf strips every TF_VAR_ variable from the app's environment before synth, because it means
// them for Terraform only. kube-on-os validates them at synth time and records them as the
// variables' defaults, so this wrapper hands them over under one other name, which main.ts reads.
"use strict";

const { spawnSync } = require("node:child_process");
const path = require("node:path");

// Must match FORWARDED_TF_VARS in constructs/config.ts (__tests__/main.test.ts runs both ends).
const FORWARDED_TF_VARS = "KUBE_ON_OS_FORWARDED_TF_VARS";

const tfVars = Object.fromEntries(Object.entries(process.env).filter(([key]) => key.startsWith("TF_VAR_")));
const result = spawnSync(path.join(__dirname, "..", "node_modules", ".bin", "cdktf"), process.argv.slice(2), {
  stdio: "inherit",
  env: { CHECKPOINT_DISABLE: "1", ...process.env, [FORWARDED_TF_VARS]: JSON.stringify(tfVars) },
});
if (result.error) {
  console.error(`kube-on-os: could not run cdktf (${result.error.message}); run \`npm ci\` first`);
  process.exit(1);
}
process.exit(result.status ?? 1);
