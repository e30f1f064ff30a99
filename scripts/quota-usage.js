#!/usr/bin/env node
// What the project already uses of each quota the plan checks, and how much of it this deployment
// holds, read just before a plan (`npm run diff|deploy`, the pipeline's plan job) and handed to it
// as TF_VAR_quota_usage. The plan then compares what the deployment needs with what is free, not
// only with the limits (constructs/quotas.ts, docs/quotas.md).
//
//   node scripts/quota-usage.js [--initialised] <stack dir> <tofu or terraform binary>
//
// (--initialised: the caller has run `init` in the stack's directory already, as the pipeline's
// plan job has.)
//
// prints the variable's value, a JSON map from "<service>.<quota>" (quota_needs' names) to
// { used, own }, or nothing. `used` comes from the APIs a project member may read: Nova's
// os-quota-sets/<project>/detail, Neutron's quotas/<project>/details and Cinder's
// os-quota-sets/<project>?usage=true. `own` is the last apply's quota_needs output, read from the
// stack's state (0 before the first apply), so that an update counts only what it adds.
// The OpenStack provider has no data source for Neutron's or Cinder's usage, hence this read.
//
// It authenticates as the provider does, from OS_CLOUD (clouds.yaml and secure.yaml) and the
// OS_* variables: a password, an application credential or a token. When it cannot read the
// usage (an unsupported setting, a cloud that hides it), one line on stderr says why and it
// prints nothing: the plan then compares the limits alone, as it did before this read.
// It never prints a credential or a token.
"use strict";

const { spawnSync } = require("node:child_process");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");
const { URL } = require("node:url");

/** The quotas of quota_needs, by its service names, and where each service's API reports them. */
const QUOTAS = {
  compute: ["instances", "cores", "ram", "server_groups", "server_group_members", "key_pairs"],
  blockStorage: ["volumes", "gigabytes"],
  network: ["floatingip", "network", "subnet", "router", "port", "security_group", "security_group_rule"],
};
const TIMEOUT_MS = 30_000;

class UsageError extends Error {}

/** The first clouds.yaml (or secure.yaml) in os-client-config's search order. */
function cloudFile(name, override) {
  const candidates = [
    override,
    path.join(process.cwd(), name),
    path.join(os.homedir(), ".config", "openstack", name),
    path.join("/etc/openstack", name),
  ];
  return candidates.find((file) => file && fs.existsSync(file));
}

/**
 * A YAML file as data: with the yaml package where node_modules is installed (npm run), else with
 * the toolchain's Python and its PyYAML (the pipeline's tofu jobs restore the toolchain, not
 * node_modules). Never the parser's message: it quotes the offending line, which may hold a password.
 */
function readYaml(file) {
  let YAML;
  try {
    YAML = require("yaml");
  } catch {
    return readYamlWithPython(file);
  }
  try {
    return YAML.parse(fs.readFileSync(file, "utf8")) ?? {};
  } catch (error) {
    throw new UsageError(`${file} cannot be read as YAML (${error.code ?? "unreadable"})`);
  }
}

function readYamlWithPython(file) {
  const python = process.env.KOO_VENV ? path.join(process.env.KOO_VENV, "bin", "python") : undefined;
  if (!python || !fs.existsSync(python)) throw new UsageError(`reading ${file} needs node_modules (npm ci) or the toolchain's Python`);
  const script = "import json, sys, yaml\njson.dump(yaml.safe_load(open(sys.argv[1], encoding='utf-8')) or {}, sys.stdout)";
  const result = spawnSync(python, ["-c", script, file], { encoding: "utf8" });
  if (result.status !== 0) throw new UsageError(`${file} cannot be read as YAML`);
  return JSON.parse(result.stdout);
}

/** OS_CLOUD's entry of clouds.yaml, with secure.yaml's values over it. */
function cloudEntry(env) {
  const name = env.OS_CLOUD;
  const file = cloudFile("clouds.yaml", env.OS_CLIENT_CONFIG_FILE);
  if (!file) throw new UsageError(`OS_CLOUD=${name} but no clouds.yaml was found`);
  const entry = readYaml(file).clouds?.[name];
  if (!entry) throw new UsageError(`OS_CLOUD=${name} is not an entry of ${file}`);
  const secureFile = cloudFile("secure.yaml", env.OS_CLIENT_SECURE_FILE);
  const secure = secureFile ? (readYaml(secureFile).clouds?.[name] ?? {}) : {};
  return { ...entry, ...secure, auth: { ...entry.auth, ...secure.auth } };
}

/** The settings the provider would authenticate with: clouds.yaml's entry, the OS_* variables over it. */
function settings(env) {
  const cloud = env.OS_CLOUD ? cloudEntry(env) : { auth: {} };
  const pick = (key, ...names) => names.map((n) => env[n]).find((v) => v !== undefined && v !== "") ?? cloud.auth[key];
  const auth = {
    auth_url: pick("auth_url", "OS_AUTH_URL"),
    username: pick("username", "OS_USERNAME"),
    user_id: pick("user_id", "OS_USER_ID"),
    password: pick("password", "OS_PASSWORD"),
    token: pick("token", "OS_TOKEN", "OS_AUTH_TOKEN"),
    project_id: pick("project_id", "OS_PROJECT_ID", "OS_TENANT_ID"),
    project_name: pick("project_name", "OS_PROJECT_NAME", "OS_TENANT_NAME"),
    user_domain_id: pick("user_domain_id", "OS_USER_DOMAIN_ID"),
    user_domain_name: pick("user_domain_name", "OS_USER_DOMAIN_NAME"),
    project_domain_id: pick("project_domain_id", "OS_PROJECT_DOMAIN_ID"),
    project_domain_name: pick("project_domain_name", "OS_PROJECT_DOMAIN_NAME"),
    domain_id: pick("domain_id", "OS_DOMAIN_ID"),
    domain_name: pick("domain_name", "OS_DOMAIN_NAME"),
    application_credential_id: pick("application_credential_id", "OS_APPLICATION_CREDENTIAL_ID"),
    application_credential_name: pick("application_credential_name", "OS_APPLICATION_CREDENTIAL_NAME"),
    application_credential_secret: pick("application_credential_secret", "OS_APPLICATION_CREDENTIAL_SECRET"),
  };
  if (!auth.auth_url) throw new UsageError("no OS_AUTH_URL (or OS_CLOUD) is set");
  const verify = env.OS_INSECURE !== undefined ? !/^(1|true|yes)$/i.test(env.OS_INSECURE) : cloud.verify !== false;
  return {
    auth,
    region: env.OS_REGION_NAME || cloud.region_name,
    interface: (env.OS_INTERFACE || env.OS_ENDPOINT_TYPE || cloud.interface || "public").replace(/URL$/, ""),
    cacert: env.OS_CACERT || cloud.cacert,
    verify,
  };
}

/** One HTTP request with the settings' TLS options; the JSON body, or an error naming the URL's path. */
async function request(config, method, url, { token, body } = {}) {
  const https = url.startsWith("https:");
  const client = require(https ? "node:https" : "node:http");
  const options = { method, headers: { Accept: "application/json" }, timeout: TIMEOUT_MS };
  if (token) options.headers["X-Auth-Token"] = token;
  const payload = body === undefined ? undefined : JSON.stringify(body);
  if (payload) options.headers["Content-Type"] = "application/json";
  if (https) {
    options.rejectUnauthorized = config.verify;
    if (config.cacert) options.ca = fs.readFileSync(config.cacert);
  }
  const where = new URL(url).pathname;
  return new Promise((resolve, reject) => {
    const req = client.request(url, options, (res) => {
      let text = "";
      res.setEncoding("utf8");
      res.on("data", (chunk) => (text += chunk));
      res.on("end", () => {
        if (res.statusCode >= 300) return reject(new UsageError(`${method} ${where} answered ${res.statusCode}`));
        try {
          resolve({ headers: res.headers, body: text ? JSON.parse(text) : {} });
        } catch {
          reject(new UsageError(`${method} ${where} answered something other than JSON`));
        }
      });
    });
    req.on("timeout", () => req.destroy(new UsageError(`${method} ${where} did not answer in ${TIMEOUT_MS / 1000} s`)));
    req.on("error", (error) => reject(error instanceof UsageError ? error : new UsageError(`${method} ${where}: ${error.message}`)));
    req.end(payload);
  });
}

/** Keystone v3's request body for the settings' method, scoped to their project. */
function authBody(auth) {
  const domain = (id, name) => (id ? { id } : name ? { name } : undefined);
  if (auth.application_credential_secret) {
    const credential = auth.application_credential_id
      ? { id: auth.application_credential_id, secret: auth.application_credential_secret }
      : {
          name: auth.application_credential_name,
          secret: auth.application_credential_secret,
          user: { id: auth.user_id, name: auth.username, domain: domain(auth.user_domain_id, auth.user_domain_name ?? auth.domain_name) },
        };
    // An application credential is scoped to its own project already.
    return { auth: { identity: { methods: ["application_credential"], application_credential: credential } } };
  }
  const identity = auth.token
    ? { methods: ["token"], token: { id: auth.token } }
    : {
        methods: ["password"],
        password: {
          user: auth.user_id
            ? { id: auth.user_id, password: auth.password }
            : {
                name: auth.username,
                password: auth.password,
                domain: domain(auth.user_domain_id, auth.user_domain_name) ?? domain(auth.domain_id, auth.domain_name ?? "Default"),
              },
        },
      };
  const project = auth.project_id
    ? { id: auth.project_id }
    : {
        name: auth.project_name,
        domain: domain(auth.project_domain_id, auth.project_domain_name) ?? domain(auth.domain_id, auth.domain_name ?? "Default"),
      };
  if (!project.id && !project.name) throw new UsageError("no project is set (OS_PROJECT_ID or OS_PROJECT_NAME)");
  return { auth: { identity, scope: { project } } };
}

/** A project-scoped token, the project's id and the catalog. */
async function authenticate(config) {
  const base = config.auth.auth_url.replace(/\/+$/, "");
  const url = /\/v3$/.test(base) ? `${base}/auth/tokens` : `${base}/v3/auth/tokens`;
  const { headers, body } = await request(config, "POST", url, { body: authBody(config.auth) });
  const token = headers["x-subject-token"];
  const project = body.token?.project?.id;
  if (!token || !project) throw new UsageError("Keystone gave no project-scoped token");
  return { token, project, catalog: body.token.catalog ?? [] };
}

/** The endpoint of the first service type the catalog has, at the settings' interface and region. */
function endpoint(config, catalog, types) {
  for (const type of types) {
    const service = catalog.find((s) => s.type === type);
    const found = service?.endpoints.find(
      (e) => e.interface === config.interface && (!config.region || e.region === config.region || e.region_id === config.region),
    );
    if (found) return found.url.replace(/\/+$/, "");
  }
  throw new UsageError(`the catalog has no ${types[0]} endpoint (${config.interface}${config.region ? `, ${config.region}` : ""})`);
}

/**
 * `{ used: { "<service>.<quota>": used }, unread: [why] }` from the three services. A service
 * that does not answer is left out (its quotas compare the limits alone), unless none does.
 */
async function usedByProject(config) {
  const { token, project, catalog } = await authenticate(config);
  const reads = [
    ["Nova", "compute", "in_use", () => `${endpoint(config, catalog, ["compute"])}/os-quota-sets/${project}/detail`, "quota_set"],
    [
      "Neutron",
      "network",
      "used",
      () => `${endpoint(config, catalog, ["network"]).replace(/\/v2\.0$/, "")}/v2.0/quotas/${project}/details`,
      "quota",
    ],
    [
      "Cinder",
      "blockStorage",
      "in_use",
      () => `${endpoint(config, catalog, ["volumev3", "block-storage"])}/os-quota-sets/${project}?usage=true`,
      "quota_set",
    ],
  ];
  const used = {};
  const unread = [];
  for (const [name, service, field, url, key] of reads) {
    let reported;
    try {
      reported = (await request(config, "GET", url(), { token })).body[key] ?? {};
    } catch (error) {
      if (!(error instanceof UsageError)) throw error;
      unread.push(`${name}: ${error.message}`);
      continue;
    }
    for (const quota of QUOTAS[service]) {
      const value = reported[quota]?.[field];
      if (Number.isFinite(value)) used[`${service}.${quota}`] = value;
    }
  }
  if (unread.length === reads.length) throw new UsageError(unread.join("; "));
  return { used, unread };
}

/** The last apply's quota_needs, from the stack's state; {} when there is none yet. */
function ownNeeds(stackDir, cli, env, initialised) {
  const run = (args) => spawnSync(cli, [`-chdir=${stackDir}`, ...args], { encoding: "utf8", env });
  const init = initialised ? { status: 0 } : run(["init", "-input=false"]);
  if (init.status !== 0) throw new UsageError(`${path.basename(cli)} init failed, so the deployment's own share is unknown`);
  // No state, or one from before the output: nothing is held yet.
  const output = run(["output", "-json", "quota_needs"]);
  if (output.status !== 0) return {};
  const needs = JSON.parse(output.stdout || "{}");
  const own = {};
  for (const [service, quotas] of Object.entries(QUOTAS)) {
    for (const quota of quotas) {
      const value = needs[service]?.[quota];
      if (Number.isFinite(value)) own[`${service}.${quota}`] = value;
    }
  }
  return own;
}

/** Whether the stack checks quotas at all: TF_VAR_check_quotas, else the synthesized default. */
function checksQuotas(stackDir, env) {
  if (env.TF_VAR_check_quotas !== undefined) return env.TF_VAR_check_quotas.trim() !== "false";
  try {
    const stack = JSON.parse(fs.readFileSync(path.join(stackDir, "cdk.tf.json"), "utf8"));
    return stack.variable?.check_quotas?.default !== false;
  } catch {
    return true;
  }
}

/**
 * The value for TF_VAR_quota_usage, or undefined (check_quotas off, or the usage unreadable: one
 * line says why). `initialised`: the stack's directory is initialised already.
 */
async function quotaUsage(stackDir, cli, env = process.env, { initialised = false } = {}) {
  if (!checksQuotas(stackDir, env)) return undefined;
  try {
    const config = settings(env);
    const own = ownNeeds(stackDir, cli, env, initialised);
    const { used, unread } = await usedByProject(config);
    const usage = Object.fromEntries(Object.entries(used).map(([key, value]) => [key, { used: value, own: own[key] ?? 0 }]));
    const held = Object.values(own).some((n) => n > 0) ? " beyond what it already holds" : "";
    const partly = unread.length > 0 ? ` (but the limits alone where the usage could not be read: ${unread.join("; ")})` : "";
    console.error(`kube-on-os: quotas: the plan compares what this deployment needs${held} with what the project has free${partly}`);
    return JSON.stringify(usage);
  } catch (error) {
    // Whatever went wrong, the plan still runs, on the limits: the read only adds to it.
    const reason = String(error.message).split("\n")[0];
    console.error(`kube-on-os: quotas: the project's usage could not be read (${reason}); the plan compares the limits only`);
    return undefined;
  }
}

module.exports = { quotaUsage };

if (require.main === module) {
  const args = process.argv.slice(2);
  const initialised = args[0] === "--initialised";
  const [stackDir, cli, ...extra] = initialised ? args.slice(1) : args;
  if (!stackDir || !cli || extra.length > 0) {
    console.error("usage: node scripts/quota-usage.js [--initialised] <stack dir> <tofu or terraform binary>");
    process.exit(2);
  }
  quotaUsage(stackDir, cli, process.env, { initialised }).then(
    (usage) => usage && process.stdout.write(`${usage}\n`),
    (error) => {
      console.error(`kube-on-os: quotas: ${error.message}`);
      process.exit(1);
    },
  );
}
