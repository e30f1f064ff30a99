#!/usr/bin/env node
// `npm run rehearse`: your configuration deployed offline (tools/rehearsal/cli.ts, issue 38). It
// installs the toolchain and the Debian root the hosts boot first (idempotent and cached, as
// `npm test` does), then runs the rehearsal with the toolchain's environment. Ctrl-C reaches the
// rehearsal, which removes what it made before it ends; this process waits for it.
"use strict";

const { spawnSync } = require("node:child_process");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
for (const installer of ["toolchain.sh", "toolchain/debian-root.sh"]) {
  const result = spawnSync("bash", [path.join(root, "scripts", installer)], { stdio: "inherit" });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
// The terminal's Ctrl-C goes to the whole foreground group: the rehearsal cleans up, and this
// process must not end before it does.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => {});
const rehearsal = spawnSync(
  "bash",
  [
    "-c",
    'source "$1/scripts/toolchain/env.sh" && shift && exec node --require "$0/scripts/register-ts.js" "$0/tools/rehearsal/cli.ts" "$@"',
    root,
    root,
    ...process.argv.slice(2),
  ],
  { cwd: process.cwd(), stdio: "inherit" },
);
process.exit(rehearsal.status ?? 1);
