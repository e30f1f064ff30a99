// A jest reporter that writes each suite's wall and CPU time when it ends (scripts/test/cpu-meter.js),
// for the time report at the end of `npm test`. Does nothing unless KOO_TIMING_DIR is set.
"use strict";

const path = require("node:path");
const { leave } = require("./cpu-meter");

const ROOT = path.resolve(__dirname, "..", "..");

class TimingReporter {
  onTestFileResult(test) {
    leave("jest", path.relative(ROOT, test.path));
  }
}

module.exports = TimingReporter;
