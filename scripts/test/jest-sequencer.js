// Runs the jest suites longest first, so that with several workers the longest ones start at once
// and the short ones fill the gaps around them. The order comes from suite-seconds.json (each
// suite's wall time alone, written by `npm run bench:tests -- --write`), not from jest's cache of
// this machine's last run: every run, a fresh clone's included, takes the same order. A suite
// missing from the file (a new one) runs first, as if it were the longest.
"use strict";

const path = require("node:path");
const Sequencer = require("@jest/test-sequencer").default;
const SECONDS = require("./suite-seconds.json");

const ROOT = path.resolve(__dirname, "..", "..");

class LongestFirst extends Sequencer {
  sort(tests) {
    const seconds = (test) => SECONDS[path.relative(ROOT, test.path)] ?? Infinity;
    return [...tests].sort((a, b) => seconds(b) - seconds(a) || a.path.localeCompare(b.path));
  }
}

module.exports = LongestFirst;
