#!/usr/bin/env node
// Generates the OpenStack provider bindings in .gen/ from the committed provider schema, offline.
//
// There is no @cdktf/provider-openstack on npm, so `cdktf get` generates them. Handing it the
// committed schema through its provider-schema cache means it never runs Terraform or reaches a
// registry. Runs as npm's postinstall; skips work when .gen/ already matches the inputs.
"use strict";

const { createHash } = require("node:crypto");
const { execFileSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const root = path.resolve(__dirname, "..");
const force = process.argv.includes("--force");

function fail(message) {
  console.error(`kube-on-os bindings: ${message}`);
  process.exit(1);
}

const cdktfConfig = JSON.parse(fs.readFileSync(path.join(root, "cdktf.json"), "utf8"));
const genDir = path.join(root, cdktfConfig.codeMakerOutput);
const stampFile = path.join(genDir, ".inputs.sha256");

// The sources carry no hostname, so that Terraform takes the provider from registry.terraform.io
// and OpenTofu from registry.opentofu.org. cdktf get reads a hostless source as Terraform's
// default host, while the committed schema is keyed by the address tofu reported it under.
const CDKTF_DEFAULT_HOST = "registry.terraform.io";

const schemas = cdktfConfig.terraformProviders.map((constraint) => {
  const [source, version] = constraint.split("@");
  if (source.split("/").length !== 2) fail(`cdktf.json: provider source "${source}" must be NAMESPACE/TYPE, without a hostname`);
  const name = source.split("/").pop();
  // cdktf looks the schema up as <provider name>@<version>.json in its cache directory.
  const file = `${name}@${version}.json`;
  const committed = path.join(root, "providers", file);
  if (!fs.existsSync(committed)) {
    fail(`providers/${file} is missing; run scripts/regenerate-provider-schema.sh to produce it from ${source} ${version}`);
  }
  return { file, committed, source };
});

let cliVersion;
try {
  cliVersion = require(path.join(root, "node_modules", "cdktf-cli", "package.json")).version;
} catch {
  fail("cdktf-cli is not installed; run `npm ci` (the bindings need the dev dependencies)");
}

const hash = createHash("sha256");
hash.update(`cdktf-cli ${cliVersion}\n`);
hash.update(JSON.stringify(cdktfConfig.terraformProviders));
for (const { committed } of schemas) hash.update(fs.readFileSync(committed));
const inputs = hash.digest("hex");

if (!force && fs.existsSync(stampFile) && fs.readFileSync(stampFile, "utf8").trim() === inputs) {
  process.exit(0);
}

const cacheDir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-schema-"));
try {
  for (const { file, committed, source } of schemas) {
    const schema = JSON.parse(fs.readFileSync(committed, "utf8"));
    const addresses = Object.keys(schema.provider_schemas);
    if (addresses.length !== 1 || !addresses[0].endsWith(`/${source}`)) {
      fail(`providers/${file} describes ${addresses.join(", ")}, not ${source}`);
    }
    schema.provider_schemas = { [`${CDKTF_DEFAULT_HOST}/${source}`]: schema.provider_schemas[addresses[0]] };
    fs.writeFileSync(path.join(cacheDir, file), JSON.stringify(schema));
  }
  const started = Date.now();
  execFileSync(
    path.join(root, "node_modules", ".bin", "cdktf"),
    ["get", "--force", "--experimental-provider-schema-cache-path", cacheDir],
    {
      cwd: root,
      stdio: ["ignore", "ignore", "inherit"],
      env: { ...process.env, CHECKPOINT_DISABLE: "1", CI: "1" },
    },
  );
  fs.writeFileSync(stampFile, `${inputs}\n`);
  console.error(`kube-on-os bindings: generated ${cdktfConfig.codeMakerOutput}/ in ${((Date.now() - started) / 1000).toFixed(1)} s`);
} catch (error) {
  fail(`cdktf get failed: ${error.message.split("\n")[0]}`);
} finally {
  fs.rmSync(cacheDir, { recursive: true, force: true });
}
