#!/usr/bin/env node
// `npm run docs:parameters`: writes docs/parameters.md from the parameter table
// (config/parameters.ts, rendered by config/parameters-doc.ts). __tests__/l0-parameters-doc.test.ts
// fails while the committed file differs from what this writes.
"use strict";

const fs = require("node:fs");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
require("./register-ts");
const { PARAMETERS_DOC, renderParametersDoc } = require(path.join(root, "config", "parameters-doc"));

fs.writeFileSync(path.join(root, PARAMETERS_DOC), renderParametersDoc());
console.log(`kube-on-os: wrote ${PARAMETERS_DOC}`);
