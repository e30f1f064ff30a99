// setupFilesAfterEnv: the suite's worker enters the suite's cgroup before the test file loads
// (scripts/test/cpu-meter.js). Does nothing unless scripts/test.sh set KOO_TIMING_DIR.
"use strict";
/* global expect */

const path = require("node:path");
const { enter } = require("./cpu-meter");

enter("jest", path.relative(path.resolve(__dirname, "..", ".."), expect.getState().testPath));
