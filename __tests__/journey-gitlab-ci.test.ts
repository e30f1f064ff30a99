/**
 * .gitlab-ci.yml: valid by GitLab's own CI schema and yamllint, and run locally by gitlab-ci-local
 * (shell executor, each job in its own copy of the project, artifacts and caches passed as GitLab
 * would) against the OpenStack API double and the http state server, reached the way GitLab's
 * predefined variables point a job at GitLab-managed state.
 */
import { spawnSync } from "node:child_process";
import { randomUUID } from "node:crypto";
import * as fs from "node:fs";
import * as http from "node:http";
import * as os from "node:os";
import * as path from "node:path";
import YAML from "yaml";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { CloudTarget, doubleTarget } from "./support/target";
import { StateServer, startStateServer } from "./doubles/http-state/server";
import {
  GitLabApi,
  PipelineRun,
  ROOT,
  git,
  gitlabCiSchema,
  gitlabCiValidator,
  makeProject,
  resolveExtends,
  runPipeline,
  startGitLabApi,
  zipEntries,
} from "./gitlab-ci/support";
import { evaluateIf, evaluateRules, Variables } from "./gitlab-ci/rules";
import { NodeBuild, nodeBuilds } from "./support/node";
import { machineNetworkEnv, runAsync, runTofuAsync } from "./support/tofu";

const PIPELINE = YAML.parse(fs.readFileSync(path.join(ROOT, ".gitlab-ci.yml"), "utf8"));

/** The toolchain's build of the Node.js release the image holds: the local run's jobs run on it. */
function imageNode(): NodeBuild {
  const version = /^node:(\d+\.\d+\.\d+)-/.exec(PIPELINE.default.image)?.[1];
  const build = nodeBuilds().find((b) => b.version === version);
  if (!build) {
    const built = nodeBuilds().map((b) => b.version);
    throw new Error(`.gitlab-ci.yml's image ${PIPELINE.default.image} holds no Node.js the toolchain builds (${built.join(", ")})`);
  }
  return build;
}
/** The jobs as GitLab runs them, their `extends` applied. */
const JOBS = resolveExtends(PIPELINE);
/** The jobs that take GitLab's state lock. */
const LOCKING = ["plan", "apply", "destroy-plan", "destroy"];
const STACK = "cdktf.out/stacks/kube-on-os";

function venvTool(name: string): string {
  if (!process.env.KOO_VENV) throw new Error("KOO_VENV is not set: run the tests with `npm test`, or source scripts/toolchain/env.sh");
  return path.join(process.env.KOO_VENV, "bin", name);
}

/**
 * Whether `pid` is a live process running `command`: an exited one that nobody reaped (a zombie)
 * is not, nor is a later process given the same pid.
 */
function running(pid: number, command: string): boolean {
  const stat = path.join("/proc", String(pid), "stat");
  try {
    const cmdline = fs.readFileSync(path.join("/proc", String(pid), "cmdline"), "utf8").split("\0")[0];
    return path.basename(cmdline) === command && fs.readFileSync(stat, "utf8").split(") ")[1]?.[0] !== "Z";
  } catch {
    return false;
  }
}

const tempDirs: string[] = [];

function tempDir(prefix: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
  tempDirs.push(dir);
  return dir;
}

/** A copy of scripts/ beside a stand-in synthesized stack, for tofu.sh (its stack's path is fixed). */
function scriptsBesideStack(prefix: string): string {
  const copy = tempDir(prefix);
  fs.cpSync(path.join(ROOT, "scripts"), path.join(copy, "scripts"), { recursive: true });
  fs.mkdirSync(path.join(copy, STACK), { recursive: true });
  fs.writeFileSync(path.join(copy, STACK, "cdk.tf.json"), "{}");
  return copy;
}

// The local pipeline copies node_modules into three jobs' builds: gigabytes, not to be left behind.
afterAll(() => {
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true });
});

describe(".gitlab-ci.yml by GitLab's CI schema (from gitlab-ci-local's pinned package)", () => {
  const schema = gitlabCiSchema();
  const validator = gitlabCiValidator(schema);

  it("is GitLab's own schema, unloosened", () => {
    expect(schema.$id).toBe("https://gitlab.com/.gitlab-ci.yml");
    expect(schema.definitions.job_template.properties.resource_group).toBeDefined();
    // gitlab-ci-local deletes this pattern at run time; the copy read here still has it.
    expect(schema.definitions.include_item.oneOf[0].pattern).toEqual(expect.any(String));
  });

  it("validates the pipeline", () => {
    expect(validator.validate(PIPELINE)).toEqual([]);
  });

  const broken: [string, (pipeline: any) => void, RegExp][] = [
    ["a misspelt keyword", (p) => (p.plan.scripts = p.plan.script), /^\/plan$/],
    ["a `when` GitLab does not know", (p) => (p.apply.rules[0].when = "sometimes"), /^\/apply\/rules\/0\/when$/],
    ["an unknown environment action", (p) => (p.plan.environment.action = "plan"), /^\/plan\/environment/],
    ["an artifact access level GitLab does not have", (p) => (p.plan.artifacts.access = "maintainers"), /^\/plan\/artifacts\/access$/],
  ];
  it.each(broken)("rejects a copy with %s", (_name, breakIt, where) => {
    const copy = structuredClone(PIPELINE);
    breakIt(copy);
    const errors = validator.validate(copy);
    expect(errors.length).toBeGreaterThan(0);
    expect(errors.map((e) => e.instancePath).some((p) => where.test(p))).toBe(true);
  });
});

describe("lint", () => {
  const yamllint = (file: string) =>
    spawnSync(venvTool("yamllint"), ["--strict", "-c", path.join(ROOT, ".yamllint.yaml"), file], { encoding: "utf8" });

  it("passes yamllint, and a sloppy copy does not", () => {
    const clean = yamllint(path.join(ROOT, ".gitlab-ci.yml"));
    expect(clean.stdout + clean.stderr).toBe("");
    expect(clean.status).toBe(0);
    const sloppy = path.join(tempDir("yamllint"), ".gitlab-ci.yml");
    fs.writeFileSync(sloppy, fs.readFileSync(path.join(ROOT, ".gitlab-ci.yml"), "utf8").replace("stages:\n", "stages: \nstages:\n"));
    const result = yamllint(sloppy);
    expect(result.status).not.toBe(0);
    expect(result.stdout).toMatch(/trailing-spaces/);
    expect(result.stdout).toMatch(/key-duplicates/);
  });

  it("lints in the lint job exactly as npm test does: both run scripts/lint.sh", () => {
    const calls = (file: string) => fs.readFileSync(path.join(ROOT, file), "utf8").match(/^ *bash .*scripts\/lint\.sh"?$/gm);
    expect(calls("scripts/test.sh")).toEqual(['  bash "$KOO_ROOT/scripts/lint.sh"']);
    expect(calls("scripts/ci/lint.sh")).toEqual(["bash scripts/lint.sh"]);
    expect(fs.readFileSync(path.join(ROOT, "scripts", "lint.sh"), "utf8")).toMatch(/shellcheck .*scripts\/ci\/\*\.sh/);
  });

  it("leaves the caches a job keeps in the project to no linter: ESLint and Prettier, which walk it, pass over them", () => {
    // The other linters take named directories and files (scripts/lint.sh). The toolchain a job
    // builds into .cache/ holds JavaScript, Python and YAML (gitlab-ci-local, cloud-init, the venv).
    const probe = `
      import { ESLint } from "eslint";
      import * as prettier from "prettier";
      const eslint = new ESLint({ cwd: process.cwd() });
      const ignored = {};
      for (const file of process.argv.slice(1)) {
        ignored[file] = [await eslint.isPathIgnored(file), (await prettier.getFileInfo(file, { ignorePath: ".prettierignore" })).ignored];
      }
      console.log(JSON.stringify(ignored));`;
    const files = {
      ".cache/kube-on-os/gitlab-ci-local/node_modules/gitlab-ci-local/src/index.js": [true, true],
      ".cache/kube-on-os/python/venv/lib/python3.11/site-packages/salt/version.py": [true, true],
      ".cache/npm/_cacache/index-v5/00/00/entry.json": [true, true],
      ".gitlab-ci-local/builds/test/constructs/machine.ts": [true, true],
      "constructs/machine.ts": [false, false],
      "scripts/test/report.js": [false, false],
    };
    const result = spawnSync(process.execPath, ["--input-type=module", "-e", probe, ...Object.keys(files)], {
      cwd: ROOT,
      encoding: "utf8",
    });
    expect(result.stderr).toBe("");
    expect(JSON.parse(result.stdout)).toEqual(files);
  });
});

describe("the pipeline's structure", () => {
  it("keys the resource group and the environment of plan, apply and destroy by the state name, KUBE_ON_OS_DOMAIN", () => {
    for (const job of LOCKING) {
      expect({ job, group: JOBS[job].resource_group, environment: JOBS[job].environment.name }).toEqual({
        job,
        group: "$KUBE_ON_OS_DOMAIN",
        environment: "$KUBE_ON_OS_DOMAIN",
      });
    }
    expect(PIPELINE.apply.environment.action).toBe("start");
    expect(PIPELINE.destroy.environment.action).toBe("stop");
    expect(PIPELINE.plan.environment.action).toBe("prepare");
    expect(PIPELINE["destroy-plan"].environment.action).toBe("prepare");
  });

  it("lints first, and applies only a plan of the same pipeline after the tests passed", () => {
    expect(PIPELINE.stages).toEqual(["lint", "test", "synth", "validate", "plan", "apply", "destroy"]);
    expect(PIPELINE.lint.needs).toEqual([]);
    const needs = (job: string) => PIPELINE[job].needs.map((n: any) => (typeof n === "string" ? n : n.job));
    expect(needs("apply")).toEqual(expect.arrayContaining(["plan", "test", "synth"]));
    expect(PIPELINE.apply.rules).toEqual([{ if: "$CI_COMMIT_BRANCH == $CI_DEFAULT_BRANCH", when: "manual" }]);
  });

  it("never cancels a job that holds the state lock: plan, apply and destroy are not interruptible", () => {
    expect(PIPELINE.default.interruptible).toBe(true);
    for (const job of LOCKING) expect({ job, interruptible: JOBS[job].interruptible }).toEqual({ job, interruptible: false });
  });

  it("stops a job that locks before GitLab's default 60 minutes, leaving its after_script time to give the lock back", () => {
    const minutes = (value: string) => {
      const match = /^(\d+)(m| minutes)$/.exec(value);
      if (!match) throw new Error(`not a duration in minutes: ${value}`);
      return Number(match[1]);
    };
    for (const job of LOCKING) {
      const { timeout, variables, after_script: afterScript } = JOBS[job];
      const script = minutes(variables.RUNNER_SCRIPT_TIMEOUT);
      const after = minutes(variables.RUNNER_AFTER_SCRIPT_TIMEOUT);
      expect({ job, below: minutes(timeout) < 60, room: script + after < minutes(timeout), afterScript }).toEqual({
        job,
        below: true,
        room: true,
        afterScript: ["bash scripts/ci/tofu.sh release-lock"],
      });
    }
    // The other jobs give nothing back: they never lock.
    expect(Object.keys(JOBS).filter((job) => !job.startsWith(".") && JOBS[job].after_script)).toEqual(LOCKING);
  });

  it("destroys only the destroy plan of the same pipeline, once confirmed", () => {
    const destroy = JOBS.destroy;
    expect(destroy.needs).toEqual(expect.arrayContaining([{ job: "destroy-plan", artifacts: true }]));
    expect(destroy.manual_confirmation).toMatch(/^Destroy this cluster: .*\?/);
    expect(destroy.script).toEqual(["bash scripts/ci/tofu.sh destroy"]);
    expect(JOBS["destroy-plan"].artifacts).toMatchObject({
      access: "none",
      paths: expect.arrayContaining([`${STACK}/destroy.cache`, `${STACK}/destroy.cache.changes`, `${STACK}/destroy.json`]),
      reports: { terraform: `${STACK}/destroy.json` },
    });
  });

  it("saves a cache even from a failed job, and keeps npm's cache beside node_modules", () => {
    const pushing = Object.entries(PIPELINE)
      .filter(([, job]: [string, any]) => Array.isArray(job?.cache))
      .flatMap(([name, job]: [string, any]) => job.cache.filter((c: any) => c.policy === "pull-push").map((c: any) => ({ name, c })));
    // The test job saves the toolchain and the real OpenStack kit, each a cache of its own.
    expect(pushing.map(({ name }) => name).sort()).toEqual(["lint", "test", "test"]);
    for (const { name, c } of pushing) expect({ name, when: c.when }).toEqual({ name, when: "always" });
    expect(PIPELINE[".node-cache"].paths).toEqual(expect.arrayContaining(["node_modules/", ".gen/", ".cache/npm/"]));
    expect(PIPELINE.variables.npm_config_cache).toBe(".cache/npm");
    expect(PIPELINE[".toolchain-cache"].paths).toEqual([".cache/kube-on-os/"]);
    expect(PIPELINE.variables.KUBE_ON_OS_CACHE).toBe(".cache/kube-on-os");
  });

  it("keeps the laptop journey's Node.js builds out of every cache: the test job downloads them where none is saved", () => {
    const place = PIPELINE.test.variables.KUBE_ON_OS_NODE_CACHE;
    expect(place).toBe(".cache/node-builds");
    // Every job's caches, a `<<: *anchor` entry (this YAML parser keeps merge keys as they are) by its anchor's paths.
    const cached = Object.values<any>(PIPELINE)
      .flatMap((job) => (Array.isArray(job?.cache) ? job.cache : []))
      .flatMap((cache: any) => (cache.paths ?? cache["<<"].paths) as string[]);
    expect(cached).toEqual(expect.arrayContaining([".cache/kube-on-os/", ".cache/npm/"]));
    expect(cached.filter((dir) => `${place}/`.startsWith(dir) || dir.startsWith(`${place}/`))).toEqual([]);
    // scripts/toolchain/paths.sh resolves it in the checkout, as KUBE_ON_OS_CACHE.
    const dir = spawnSync("bash", ["-c", "source scripts/toolchain/paths.sh && koo_node_dir 24.22.3"], {
      cwd: ROOT,
      env: { ...process.env, KUBE_ON_OS_NODE_CACHE: place },
      encoding: "utf8",
    });
    expect(dir.stdout.trim()).toBe(path.join(ROOT, place, "24.22.3"));
  });

  it("keeps the real OpenStack kit in a cache only the test job restores, outside the toolchain cache every job restores", () => {
    const place = PIPELINE.test.variables.KUBE_ON_OS_CLOUD_CACHE;
    expect(place).toBe(".cache/openstack");
    const paths = (cache: any) => (cache.paths ?? cache["<<"].paths) as string[];
    const holding = Object.entries<any>(PIPELINE)
      .filter(([, job]) => Array.isArray(job?.cache))
      .flatMap(([name, job]) => job.cache.filter((cache: any) => paths(cache).some((dir) => `${place}/`.startsWith(dir))).map(() => name));
    expect(holding).toEqual(["test"]);
    expect(PIPELINE[".cloud-cache"]).toMatchObject({ paths: [`${place}/`], policy: "pull-push", when: "always" });
    // scripts/toolchain/paths.sh resolves it in the checkout, where the kit's install.sh and cloud put their files.
    const dir = spawnSync("bash", ["-c", "source scripts/toolchain/paths.sh && echo $KOO_CLOUD_CACHE"], {
      cwd: ROOT,
      env: { ...process.env, KUBE_ON_OS_CLOUD_CACHE: place },
      encoding: "utf8",
    });
    expect(dir.stdout.trim()).toBe(path.join(ROOT, place));
  });

  describe("which pipelines run, and which jobs in them (GitLab's predefined variables per pipeline source)", () => {
    const base = { CI_DEFAULT_BRANCH: "main", CI_PROJECT_PATH: "platform/kube-on-os" };
    const contexts: [string, Variables, Record<string, string> | "no pipeline"][] = [
      [
        "a push to the default branch",
        { ...base, CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "main" },
        { plan: "on_success", apply: "manual", "destroy-plan": "manual", destroy: "manual" },
      ],
      [
        "a push to a branch without a merge request",
        { ...base, CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "feature" },
        { plan: "on_success", apply: "never", "destroy-plan": "never", destroy: "never" },
      ],
      [
        "a push to a branch with an open merge request",
        { ...base, CI_PIPELINE_SOURCE: "push", CI_COMMIT_BRANCH: "feature", CI_OPEN_MERGE_REQUESTS: "platform/kube-on-os!3" },
        "no pipeline",
      ],
      [
        "the merge request pipeline",
        { ...base, CI_PIPELINE_SOURCE: "merge_request_event", CI_MERGE_REQUEST_IID: "3", CI_MERGE_REQUEST_SOURCE_BRANCH_NAME: "feature" },
        { plan: "on_success", apply: "never", "destroy-plan": "never", destroy: "never" },
      ],
      ["a tag", { ...base, CI_PIPELINE_SOURCE: "push", CI_COMMIT_TAG: "v1.0.0" }, "no pipeline"],
      [
        "a schedule on the default branch",
        { ...base, CI_PIPELINE_SOURCE: "schedule", CI_COMMIT_BRANCH: "main" },
        { plan: "on_success", apply: "manual", "destroy-plan": "manual", destroy: "manual" },
      ],
      [
        "Run pipeline for another cluster",
        { ...base, CI_PIPELINE_SOURCE: "web", CI_COMMIT_BRANCH: "main", KUBE_ON_OS_DOMAIN: "prod.example.org" },
        { plan: "on_success", apply: "manual", "destroy-plan": "manual", destroy: "manual" },
      ],
    ];
    it.each(contexts)("%s", (_name, variables, expected) => {
      const created = evaluateRules(PIPELINE.workflow.rules, variables) !== "never";
      if (expected === "no pipeline") {
        expect(created).toBe(false);
        return;
      }
      expect(created).toBe(true);
      const jobs = Object.fromEntries(
        ["plan", "apply", "destroy-plan", "destroy"].map((job) => [job, evaluateRules(PIPELINE[job].rules ?? [{}], variables)]),
      );
      expect(jobs).toEqual(expected);
      // Every other job has no rules: it runs in every pipeline, the merge request's included.
      expect(["lint", "test", "synth", "validate", "plan"].filter((job) => PIPELINE[job].rules)).toEqual([]);
    });

    it("reads expressions as GitLab does", () => {
      expect(evaluateIf("$A", { A: "" })).toBe(false);
      expect(evaluateIf("$A == $B", {})).toBe(true);
      expect(evaluateIf('$A == "x" || $B && $C', { B: "1", C: "1" })).toBe(true);
      expect(evaluateIf('($A == "x" || $B) && $C', { B: "1" })).toBe(false);
      expect(() => evaluateIf("$A =~ /x/", {})).toThrow(/unsupported syntax/);
    });
  });

  it("reports the plan to the merge request widget: the terraform report is the plan job's plan.json", () => {
    expect(PIPELINE.plan.artifacts.reports.terraform).toBe(`${STACK}/plan.json`);
    expect(PIPELINE.plan.artifacts.paths).toEqual(expect.arrayContaining([`${STACK}/plan.cache`, `${STACK}/plan.json`]));
  });

  it("lets no one download a plan, which holds every planned value: the jobs that need it still receive it", () => {
    for (const job of ["plan", "destroy-plan"]) expect({ job, access: PIPELINE[job].artifacts.access }).toEqual({ job, access: "none" });
  });

  it("pins every image to an exact version", () => {
    const images = [...new Set([PIPELINE.default.image, ...Object.values(PIPELINE).map((job: any) => job?.image)].filter(Boolean))];
    for (const image of images) expect(image).toMatch(/^[a-z0-9./-]+:\d+\.\d+\.\d+[\w.-]*(@sha256:[0-9a-f]{64})?$/);
    // Debian 12, whose packages the toolchain installs, with a Node.js release the toolchain builds.
    expect(images).toEqual([`node:${imageNode().version}-bookworm`]);
  });

  it("documents in docs/gitlab-ci.md every variable the pipeline's scripts read", () => {
    const section = fs.readFileSync(path.join(ROOT, "docs", "gitlab-ci.md"), "utf8");
    expect(section.length).toBeGreaterThan(1000);
    const scripts = fs
      .readdirSync(path.join(ROOT, "scripts", "ci"))
      .map((f) => fs.readFileSync(path.join(ROOT, "scripts", "ci", f), "utf8"));
    const read = new Set(
      scripts.flatMap((text) => [...text.matchAll(/\$\{?((?:KUBE_ON_OS|GITLAB_TOFU|OS|KOO_CI)_[A-Z0-9_]+)/g)].map((m) => m[1])),
    );
    const internal = ["KOO_CI_GO_VERSION", "KOO_CI_GO_SHA256_AMD64"];
    expect(read.size).toBeGreaterThan(5);
    for (const name of [...read].filter((n) => !internal.includes(n)))
      expect({ name, documented: section.includes(name) }).toEqual({ name, documented: true });
  });
});

describe("scripts/ci/plan-summary.js", () => {
  const summarize = (input: string) =>
    spawnSync("node", [path.join(ROOT, "scripts", "ci", "plan-summary.js")], { input, encoding: "utf8" });

  it("counts actions as gitlab-tofu's jq filter does: a replacement is a delete and a create", () => {
    const plan = {
      format_version: "1.2",
      resource_changes: [["create"], ["delete", "create"], ["update"], ["no-op"], ["read"], ["delete"]].map((actions) => ({
        change: { actions },
      })),
    };
    const result = summarize(JSON.stringify(plan));
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({ create: 2, update: 1, delete: 2 });
  });

  it("refuses input that is not a plan, in one line", () => {
    for (const input of ["Error: no plan", "[]"]) {
      const result = summarize(input);
      expect(result.status).toBe(1);
      expect(result.stderr.trim().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(/^plan-summary: /);
    }
  });
});

describe("the pipeline, run locally by gitlab-ci-local", () => {
  const DOMAIN = "lab.example.org";
  // gitlab-ci-local's CI_PROJECT_ID. GitLab gives every job a CI_JOB_TOKEN of its own, this run
  // one; made up here, so that no file (this one included) can hold it by accident.
  const PROJECT_ID = "1217";
  const JOB_TOKEN = `glcbt-64_${randomUUID()}`;
  // The GitLab user the jobs run as (GitLab's GITLAB_USER_LOGIN), whose token the job token is,
  // and a colleague with a personal access token of her own.
  const USER = "koo-maintainer";
  const COLLEAGUE_TOKEN = `glpat-${randomUUID()}`;
  let double: OpenStackDouble;
  let target: CloudTarget;
  let state: StateServer;
  let api: GitLabApi;
  let project: string;
  let env: NodeJS.ProcessEnv;
  let pipeline: PipelineRun;
  let deployKey: string;
  let deployKeyFingerprint: string;
  let osPassword: string;
  const runs: PipelineRun[] = [];

  /** `gitlab-ci-local` with the variables GitLab would give the jobs, plus the local switches. */
  const run = async (...args: string[]) => {
    const result = await runPipeline(
      project,
      [
        // GitLab's own address: CI_API_V4_URL becomes <this>/api/v4, as on gitlab.com.
        ...["--variable", `CI_SERVER_URL=${api.serverUrl}`, "--ignore-predefined-vars", "CI_SERVER_URL,GITLAB_USER_LOGIN"],
        ...["--variable", `CI_JOB_TOKEN=${JOB_TOKEN}`, "--variable", `GITLAB_USER_LOGIN=${USER}`],
        // No registry here: hashicorp/null too from the mirror (the stand-in), as a runner without
        // registry access would set it (scripts/ci/common.sh: ci_provider_config).
        ...["--variable", "KUBE_ON_OS_OFFLINE_PROVIDERS=true"],
        // One small suite instead of `npm test`, which is running this file (scripts/ci/test.sh).
        ...["--variable", "KOO_CI_TESTS=__tests__/l0-network.test.ts"],
        ...args,
      ],
      env,
    );
    runs.push(result);
    return result;
  };
  const artifact = (job: string, file: string) => path.join(project, ".gitlab-ci-local", "artifacts", job, file);
  // WARN: a job allowed to fail (destroy-plan, destroy) that failed.
  const jobResult = (output: string, job: string) => new RegExp(`^ (PASS|FAIL|WARN) +(?:\\[[^\\]]+\\] )?${job}\\b`, "m").exec(output)?.[1];

  beforeAll(async () => {
    double = await startOpenStackDouble();
    target = doubleTarget(double);
    state = await startStateServer({ username: "gitlab-ci-token", password: JOB_TOKEN });
    api = await startGitLabApi(state, PROJECT_ID, {
      users: { [JOB_TOKEN]: USER, [COLLEAGUE_TOKEN]: "alice" },
      upstream: { username: "gitlab-ci-token", password: JOB_TOKEN },
    });
    project = tempDir("gitlab-project");
    // No cache is seeded: the first pipeline starts from empty caches, kept where GitLab keeps them,
    // inside the project directory (.gitlab-ci.yml: KUBE_ON_OS_CACHE, npm_config_cache), and the
    // jobs build the toolchain into them. Go's build and module caches are this machine's (HOME).
    makeProject(project);

    // The project's CI/CD variables. The OpenStack credentials are scoped to the cluster's
    // environment, as a clouds.yaml file variable with OS_CLOUD naming its entry.
    const credentials = double.passwordEnv();
    const clouds = {
      clouds: {
        double: {
          auth: {
            auth_url: credentials.OS_AUTH_URL,
            username: credentials.OS_USERNAME,
            password: credentials.OS_PASSWORD,
            project_name: credentials.OS_PROJECT_NAME,
            user_domain_name: credentials.OS_USER_DOMAIN_NAME,
            project_domain_id: credentials.OS_PROJECT_DOMAIN_ID,
          },
          region_name: credentials.OS_REGION_NAME,
          interface: "public",
          identity_api_version: 3,
        },
      },
    };
    // The deploy key, as a file variable pasted without its final newline.
    const keyDir = tempDir("deploy-key");
    const keygen = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "deploy@kube-on-os", "-f", `${keyDir}/id`]);
    expect(keygen.status).toBe(0);
    deployKey = fs.readFileSync(`${keyDir}/id`, "utf8");
    deployKeyFingerprint = spawnSync("ssh-keygen", ["-l", "-f", `${keyDir}/id.pub`], { encoding: "utf8" }).stdout.split(" ")[1];
    osPassword = credentials.OS_PASSWORD;
    const variables = {
      KUBE_ON_OS_DOMAIN: DOMAIN,
      KUBE_ON_OS_SSH_PRIVATE_KEY: { type: "file", values: { [DOMAIN]: deployKey.trimEnd() } },
      // The documented test switch: the double has no machines to log in to.
      TF_VAR_run_provisioners: "false",
      OS_CLOUD: { values: { [DOMAIN]: "double" } },
      OS_CLIENT_CONFIG_FILE: { type: "file", values: { [DOMAIN]: YAML.stringify(clouds) } },
    };
    fs.writeFileSync(path.join(project, ".gitlab-ci-local-variables.yml"), YAML.stringify(variables));

    // A runner's environment: nothing of this process's toolchain, credentials or CI settings, no
    // OpenTofu or Terraform, which the pipeline's image (node:*-bookworm) does not have, and the
    // image's Node.js first on PATH (gitlab-ci-local runs on it too).
    const runnerPath = (process.env.PATH ?? "")
      .split(":")
      .filter((dir) => !["tofu", "terraform"].some((cli) => fs.existsSync(path.join(dir, cli))))
      .join(":");
    // The machine's own network settings stay, as a runner on it would have them: the registries'
    // certificate authorities and proxies (an empty cache is filled from the package registries).
    env = {
      PATH: `${path.dirname(imageNode().node)}:${runnerPath}`,
      HOME: os.homedir(),
      LANG: "C.UTF-8",
      ...machineNetworkEnv(),
      // cdktf's node-pty has no prebuilt binary for this Node.js: npm ci compiles it with node-gyp,
      // which would fetch the headers from nodejs.org; here they are the build's own. GitHub,
      // where prebuild-install would look for a binary first, is out of reach too.
      npm_config_nodedir: imageNode().home,
      "prebuild-install_buildFromSource": "true",
    };

    // From empty caches the pipeline builds the whole toolchain: CI's loaded machine took more
    // than 30 minutes for it beside the other suites (stop 51).
    pipeline = await run();
  }, 2_700_000);

  afterAll(async () => {
    await Promise.all([double?.close(), state?.close(), api?.close()]);
  });

  afterEach(() => {
    expect(double.unhandled).toEqual([]);
  });

  it("runs lint, test, synth, validate and plan, and leaves apply and destroy to a person", async () => {
    expect({ status: pipeline.status, tail: pipeline.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    for (const job of ["lint", "test", "synth", "validate", "plan"])
      expect({ job, result: jobResult(pipeline.output, job) }).toEqual({ job, result: "PASS" });
    expect(pipeline.output).not.toMatch(/^(apply|destroy) +starting/m);
    expect(await target.servers()).toEqual([]);
  });

  it("runs the jobs on the image's Node.js release, the toolchain's build of it", () => {
    for (const job of ["lint", "test", "synth"]) {
      const node = new RegExp(`^${job} +> ==> Node\\.js (\\S+)$`, "m").exec(pipeline.output)?.[1];
      expect({ job, node }).toEqual({ job, node: `v${imageNode().version}` });
    }
  });

  it("starts from empty caches, builds the toolchain inside the project directory, lints past it and saves it", () => {
    // The lint job built the linters' part (the venv) into its .cache, then linted past it; the
    // test job built tofu and the rest into its own.
    const lintJob = pipeline.output.split("\n").filter((line) => /^lint +> /.test(line));
    const venv = lintJob.findIndex((line) =>
      /==> Python venv: installing \d+ pinned packages into \S+\/\.gitlab-ci-local\/builds\/lint\/\.cache\/kube-on-os\/python\//.test(line),
    );
    const linted = lintJob.findIndex((line) => line.includes("==> lint: eslint, prettier"));
    expect({ venv: venv >= 0, linted: linted > venv }).toEqual({ venv: true, linted: true });
    expect(pipeline.output).toMatch(/test +> ==> OpenTofu [\d.]+: building from its Go module/);
    expect(pipeline.output).toMatch(
      /test +> ==> toolchain ready in \d+ s \(cache: \S+\/\.gitlab-ci-local\/builds\/test\/\.cache\/kube-on-os;/,
    );
    // It needs the lint job, which linted the same commit: the linters do not run again.
    expect(pipeline.output).toMatch(/test +> ==> lint: done by the pipeline's lint job \(the test job needs it\)/);
    expect(pipeline.output).not.toMatch(/test +> ==> lint: eslint/);
    expect(pipeline.output).toMatch(/lint +> ==> node_modules: npm ci/);
    // The lint job's node_modules, handed on: npm ci runs once a pipeline, on a miss.
    expect(pipeline.output).toMatch(/test +> ==> node_modules: restored from the cache/);
    expect(pipeline.output).toMatch(/synth +> ==> node_modules: restored from the cache/);
    expect(pipeline.output.match(/^\S+ +> ==> node_modules: npm ci/gm)).toHaveLength(1);
    // GitLab's cache for the next pipeline, under GitLab's keys: with a prefix, the prefix and the
    // files' digest, whichever place the cache has in a job's list (no index, unlike a key
    // without one; scripts/toolchain/gitlab-ci-local.sh). The toolchain (with JavaScript, Python
    // and YAML in it), npm's cache beside node_modules, and the real OpenStack kit's, which this
    // test job, running one small suite, did not fill.
    const caches = fs.readdirSync(path.join(project, ".gitlab-ci-local", "cache")).sort();
    expect(caches).toEqual([
      expect.stringMatching(/^node-modules-[0-9a-f]+$/),
      expect.stringMatching(/^openstack-kit-[0-9a-f]+$/),
      expect.stringMatching(/^toolchain-[0-9a-f]+$/),
    ]);
    const [node, , toolchain] = caches;
    const tofuDir = path.join(project, ".gitlab-ci-local", "cache", toolchain, ".cache", "kube-on-os", "tofu");
    expect(fs.readdirSync(tofuDir)).toHaveLength(1);
    expect(fs.existsSync(path.join(project, ".gitlab-ci-local", "cache", node, ".cache", "npm"))).toBe(true);
  });

  it("runs the test job's suite instead of npm test", () => {
    expect(pipeline.output).toContain("test: only __tests__/l0-network.test.ts (KOO_CI_TESTS)");
    expect(pipeline.output).toMatch(/test +> Tests: +\d+ passed, \d+ total/);
  });

  it("plans through GitLab-managed state at GitLab's address, as gitlab-ci-token with the job token", () => {
    const statePath = `/api/v4/projects/${PROJECT_ID}/terraform/state/${DOMAIN}`;
    expect(api.requests.map((r) => `${r.method} ${r.path} ${r.status}`)).toEqual([
      `GET ${statePath} 204`,
      // scripts/quota-usage.js --initialised: the quota_needs output of a state not there yet
      `GET ${statePath} 204`,
      // Who holds the lock before tofu runs (scripts/ci/state-lock.sh): no one, so the question
      // took it and gave it back.
      `POST ${statePath}/lock 200`,
      `DELETE ${statePath}/lock 200`,
      `POST ${statePath}/lock 200`,
      `GET ${statePath} 204`,
      `DELETE ${statePath}/lock 200`,
    ]);
    // The job succeeded, so its after_script asks nothing.
    expect(pipeline.output).toMatch(/^plan +> ==> state lock: the job succeeded, so its tofu gave the lock back$/m);
    expect(pipeline.output).toContain(
      `state: ${DOMAIN} at ${api.serverUrl}${statePath} (lock ${api.serverUrl}${statePath}/lock, user gitlab-ci-token)`,
    );
    // Before the plan, what the project uses of its quotas, through the clouds.yaml entry.
    expect(pipeline.output).toMatch(
      /^plan +> kube-on-os: quotas: the plan compares what this deployment needs with what the project has free$/m,
    );
  });

  it("keeps plan.cache and a plan.json report of its create counts as the plan job's artifacts", async () => {
    const summary = JSON.parse(fs.readFileSync(artifact("plan", `${STACK}/plan.json`), "utf8"));
    const show = await runTofuAsync(["show", "-json", "plan.cache"], path.join(project, ".gitlab-ci-local", "builds", "plan", STACK));
    expect(show.stderr).toBe("");
    const plan = JSON.parse(show.stdout);
    const creates = plan.resource_changes.filter((c: any) => c.change.actions.join() === "create");
    expect(summary).toEqual({ create: creates.length, update: 0, delete: 0 });
    expect(summary.create).toBeGreaterThan(30);
    expect(fs.readFileSync(artifact("plan", `${STACK}/plan.cache.changes`), "utf8")).toBe("true\n");
    expect(fs.readFileSync(artifact("plan", `${STACK}/plan.cache`))).toEqual(
      fs.readFileSync(path.join(project, ".gitlab-ci-local", "builds", "plan", STACK, "plan.cache")),
    );
    // One variable named the cluster: its resources, its state, its environment.
    const router = creates.find((c: any) => c.type === "openstack_networking_router_v2");
    expect(router.change.after.name).toBe(`${DOMAIN}-router`);
    expect(plan.resource_changes.filter((c: any) => /^(null_resource|terraform_data)\.SaltProvisioner_/.test(c.address))).toEqual([]);
    expect(pipeline.output).toMatch(new RegExp(`plan environment: \\{ name: ${DOMAIN.replace(/\./g, "\\.")} \\}`));
    // The Salt preview beside the plan: none here, as this cluster runs no provisioners.
    expect(pipeline.output).toMatch(
      /^plan +> Salt preview: run_provisioners is false: the apply runs no Salt, so there is nothing to preview$/m,
    );
    expect(JSON.parse(fs.readFileSync(artifact("plan", `${STACK}/salt-preview.json`), "utf8"))).toMatchObject({
      status: "nothing-to-preview",
      hosts: {},
    });
  });

  it("never writes CI_JOB_TOKEN into plan.cache, an artifact, the backend's settings or a job log", () => {
    const entries = zipEntries(artifact("plan", `${STACK}/plan.cache`));
    expect([...entries.keys()]).toEqual(expect.arrayContaining(["tfplan", "tfconfig/m-/cdk.tf.json"]));
    const leaks = [...entries].filter(([, content]) => content.includes(JOB_TOKEN)).map(([name]) => `plan.cache:${name}`);
    const stateDir = path.join(project, ".gitlab-ci-local");
    for (const file of fs.readdirSync(stateDir, { recursive: true, withFileTypes: true })) {
      const full = path.join(file.parentPath, file.name);
      if (!file.isFile() || /\/(node_modules|\.gen|cache)\//.test(full)) continue;
      if (fs.readFileSync(full).includes(JOB_TOKEN)) leaks.push(path.relative(project, full));
    }
    leaks.push(...runs.filter((r) => r.output.includes(JOB_TOKEN)).map(() => "gitlab-ci-local output"));
    expect(leaks).toEqual([]);
  });

  it("keeps the OpenStack password and the deploy key out of every artifact and job log", () => {
    const keyBody = deployKey.split("\n")[1];
    const secrets = { osPassword, keyBody };
    const places = [path.join(project, ".gitlab-ci-local", "artifacts"), path.join(project, ".gitlab-ci-local", "output")];
    const found: string[] = [];
    for (const place of places) {
      for (const file of fs.readdirSync(place, { recursive: true, withFileTypes: true }).filter((f) => f.isFile())) {
        const content = fs.readFileSync(path.join(file.parentPath, file.name));
        for (const [name, secret] of Object.entries(secrets)) if (content.includes(secret)) found.push(`${name} in ${file.name}`);
      }
    }
    for (const [name, secret] of Object.entries(secrets)) if (runs.some((r) => r.output.includes(secret))) found.push(`${name} in output`);
    expect(found).toEqual([]);
  });

  it("would have written the token into the plan with -backend-config, which the pipeline never uses", async () => {
    const dir = path.join(tempDir("backend-config"), "stack");
    fs.cpSync(artifact("synth", STACK), dir, { recursive: true });
    const runEnv = { ...double.passwordEnv(), TF_VAR_run_provisioners: "false", TF_VAR_deploy_domain_name: "control.example.org" };
    const address = `${api.serverUrl}/api/v4/projects/${PROJECT_ID}/terraform/state/control.example.org`;
    const backendConfig = [`address=${address}`, `lock_address=${address}/lock`, `unlock_address=${address}/lock`]
      .concat(["lock_method=POST", "unlock_method=DELETE", "username=gitlab-ci-token", `password=${JOB_TOKEN}`])
      .map((setting) => `-backend-config=${setting}`);
    const init = await runTofuAsync(["init", "-input=false", ...backendConfig], dir, runEnv);
    expect(init.status).toBe(0);
    const plan = await runTofuAsync(["plan", "-input=false", "-out=plan.cache"], dir, runEnv);
    expect(plan.status).toBe(0);
    const leaking = [...zipEntries(path.join(dir, "plan.cache"))].filter(([, content]) => content.includes(JOB_TOKEN)).map(([n]) => n);
    expect(leaking).toEqual(["tfplan"]);
  });

  it("applies the plan artifact when asked, holding the state lock throughout", async () => {
    const held = double.hold((method, url) => method === "POST" && url.startsWith("/network/v2.0/networks"));
    const applying = run("apply");
    await held.reached;
    expect(state.lockInfo(DOMAIN)).toMatchObject({ Operation: "OperationTypeApply" });
    held.release();
    const apply = await applying;
    expect({ status: apply.status, tail: apply.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    expect(jobResult(apply.output, "apply")).toBe("PASS");
    // The plan job's plan.cache, not a new plan.
    expect(apply.output).toMatch(/apply +> Apply complete! Resources: \d+ added, 0 changed, 0 destroyed\./);
    expect(apply.output).not.toMatch(/apply +\$ bash scripts\/ci\/tofu\.sh plan/);
    expect(state.lockInfo(DOMAIN)).toBeUndefined();
    // The deploy key went into an ssh-agent of the job's own, which ended with the job.
    const agent = /apply +> ==> ssh-agent: (\S+) loaded for the provisioning chain \(agent pid (\d+), ends with this job\)/.exec(
      apply.output,
    );
    expect(agent?.[1]).toBe(deployKeyFingerprint);
    expect(running(Number(agent?.[2]), "ssh-agent")).toBe(false);
    expect((await target.servers()).map((s) => s.name)).toEqual(
      ["bastion", "k8s-master", "k8s-worker-0", "k8s-worker-1", "salt"].map((host) => `${host}.${DOMAIN}`),
    );
    const stored = state.readState(DOMAIN) as { resources: { mode: string }[] };
    expect(stored.resources.filter((r) => r.mode === "managed").length).toBeGreaterThan(20);
  });

  it("plans no changes after the apply, says so, and its apply does nothing, the state untouched", async () => {
    const plan = await run("plan");
    expect({ status: plan.status, tail: plan.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    expect(plan.output).toMatch(/^plan +> ==> plan: no changes; this pipeline has nothing to apply/m);
    expect(fs.readFileSync(artifact("plan", `${STACK}/plan.cache.changes`), "utf8")).toBe("false\n");
    expect(JSON.parse(fs.readFileSync(artifact("plan", `${STACK}/plan.json`), "utf8"))).toEqual({ create: 0, update: 0, delete: 0 });
    const asked = api.requests.length;
    const apply = await run("apply");
    expect({ status: apply.status, tail: apply.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    expect(apply.output).toMatch(/^apply +> ==> apply: the plan job's plan changes nothing; nothing to apply/m);
    expect(apply.output).not.toMatch(/Apply complete/);
    expect(api.requests.slice(asked)).toEqual([]);
  });

  /** The processes below `pid`, from /proc's parent ids. */
  const descendants = (pid: number): number[] => {
    const parents = new Map<number, number>();
    for (const entry of fs.readdirSync("/proc").filter((name) => /^\d+$/.test(name))) {
      try {
        // The field after the command's closing parenthesis: state, then the parent's pid.
        parents.set(Number(entry), Number(fs.readFileSync(`/proc/${entry}/stat`, "utf8").split(") ")[1].split(" ")[1]));
      } catch {
        // gone meanwhile
      }
    }
    const below = (parent: number): number[] =>
      [...parents].filter(([, ppid]) => ppid === parent).flatMap(([child]) => [child, ...below(child)]);
    return below(pid);
  };

  /** The pid of the tofu that runs `tofu <args...>`, once it runs. */
  const tofuRunning = (...args: string[]) => {
    for (const pid of fs.readdirSync("/proc").filter((entry) => /^\d+$/.test(entry))) {
      try {
        const argv = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0");
        if (path.basename(argv[0]) === "tofu" && args.every((arg) => argv.includes(arg))) return Number(pid);
      } catch {
        // gone meanwhile
      }
    }
    return undefined;
  };

  it("gives back the lock a killed tofu left behind, in the job's after_script, and the cluster stays", async () => {
    const before = await target.resources();
    const held = double.hold((method, url) => method === "GET" && url.startsWith("/compute/v2.1/servers/"));
    const planning = run("destroy-plan");
    await held.reached;
    const lock = state.lockInfo(DOMAIN);
    expect(lock).toMatchObject({ Operation: "OperationTypePlan" });
    const pid = tofuRunning("plan", "-destroy");
    expect(pid).toBeDefined();
    // tofu and its provider plugins, as a runner ends a cancelled job's processes: a plugin whose
    // tofu is gone would otherwise outlive the test.
    for (const each of [pid!, ...descendants(pid!)]) process.kill(each, "SIGKILL");
    held.release();
    const killed = await planning;
    expect(jobResult(killed.output, "destroy-plan")).toBe("WARN");
    expect(killed.output).toContain(`destroy-plan > ==> state lock: gave back ${lock!.ID}, which this job's tofu took at `);
    expect(state.lockInfo(DOMAIN)).toBeUndefined();
    expect(await target.resources()).toEqual(before);
  });

  it("leaves a lock another user holds, naming it, and tofu stops at it", async () => {
    const address = `${api.serverUrl}/api/v4/projects/${PROJECT_ID}/terraform/state/${DOMAIN}/lock`;
    const theirs = {
      ID: randomUUID(),
      Operation: "OperationTypeApply",
      Info: "",
      Who: "alice@laptop",
      Version: "1.11.0",
      Created: "",
      Path: "",
    };
    const post = (method: string, body: object) =>
      fetch(address, { method, headers: { authorization: api.authorization(COLLEAGUE_TOKEN) }, body: JSON.stringify(body) });
    expect((await post("POST", theirs)).status).toBe(200);
    try {
      const planning = await run("destroy-plan");
      expect(jobResult(planning.output, "destroy-plan")).toBe("WARN");
      expect(planning.output).toMatch(/destroy-plan > .*Error acquiring the state lock/);
      expect(planning.output).toContain(`destroy-plan > ==> state lock: ${theirs.ID}, held by alice since `);
      expect(planning.output).toMatch(/was there before this job's tofu ran; not this job's, left alone/);
      expect(state.lockInfo(DOMAIN)).toMatchObject({ ID: theirs.ID });
    } finally {
      expect((await post("DELETE", { ID: theirs.ID })).status).toBe(200);
    }
  });

  it("refuses a destroy plan made stale by a change of the state since: nothing destroyed", async () => {
    const planned = await run("destroy-plan");
    expect({ status: planned.status, tail: planned.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    const summary = JSON.parse(fs.readFileSync(artifact("destroy-plan", `${STACK}/destroy.json`), "utf8"));
    expect(summary).toEqual({ create: 0, update: 0, delete: expect.any(Number) });
    expect(summary.delete).toBeGreaterThan(20);
    expect(planned.output).toContain(`destroy-plan > ==> destroy plan: ${JSON.stringify(summary)}; read the plan above`);
    // Another apply since: the state's serial moved on.
    const file = path.join(state.dir, `${DOMAIN}.tfstate`);
    const stored = JSON.parse(fs.readFileSync(file, "utf8"));
    fs.writeFileSync(file, JSON.stringify({ ...stored, serial: stored.serial + 1 }));
    const before = await target.resources();
    const destroy = await run("destroy");
    expect(jobResult(destroy.output, "destroy")).toBe("WARN");
    expect(destroy.output).toMatch(/destroy +> .*Saved plan is stale/);
    expect(await target.resources()).toEqual(before);
    expect(state.lockInfo(DOMAIN)).toBeUndefined();
  });

  it("destroys the cluster when asked", async () => {
    const planned = await run("destroy-plan");
    expect({ status: planned.status, tail: planned.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    const { delete: deletes } = JSON.parse(fs.readFileSync(artifact("destroy-plan", `${STACK}/destroy.json`), "utf8"));
    const destroy = await run("destroy");
    expect({ status: destroy.status, tail: destroy.output.slice(-3000) }).toEqual({ status: 0, tail: expect.any(String) });
    expect(destroy.output).toMatch(
      new RegExp(
        `destroy +> (Apply complete! Resources: 0 added, 0 changed, ${deletes} destroyed|Destroy complete! Resources: ${deletes} destroyed)\\.`,
      ),
    );
    expect(destroy.output).not.toMatch(/destroy +\$ bash scripts\/ci\/tofu\.sh destroy-plan/);
    expect(await target.resources()).toEqual([]);
    expect(state.lockInfo(DOMAIN)).toBeUndefined();
  });

  it("offers apply and destroy on the default branch only, as manual jobs", async () => {
    const list = async () => {
      const listed = await run("--list-json");
      expect(listed.status).toBe(0);
      const jobs = JSON.parse(listed.output.slice(listed.output.indexOf("[")));
      return Object.fromEntries(jobs.map((j: { name: string; when: string }) => [j.name, j.when]));
    };
    // gitlab-ci-local's rule evaluation and ours (gitlab-ci/rules.ts) agree where both can answer.
    const ours = (branch: string) =>
      Object.fromEntries(
        ["apply", "destroy-plan", "destroy"].map((job) => [
          job,
          evaluateRules(PIPELINE[job].rules, { CI_COMMIT_BRANCH: branch, CI_DEFAULT_BRANCH: "main" }),
        ]),
      );
    const onMain = await list();
    expect(onMain).toMatchObject({ plan: "on_success", apply: "manual", "destroy-plan": "manual", destroy: "manual" });
    expect(onMain).toMatchObject(ours("main"));
    git(project, ["checkout", "-q", "-b", "feature"]);
    try {
      const onFeature = await list();
      expect(onFeature).toMatchObject({ plan: "on_success", apply: "never", "destroy-plan": "never", destroy: "never" });
      expect(onFeature).toMatchObject(ours("feature"));
    } finally {
      git(project, ["checkout", "-q", "main"]);
    }
  });
});

describe("the pipeline's scripts on bad input", () => {
  const script = (name: string, args: string[], extra: NodeJS.ProcessEnv) =>
    spawnSync("bash", [path.join(ROOT, "scripts", "ci", name), ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH, HOME: os.homedir(), KUBE_ON_OS_CACHE: process.env.KOO_CACHE, ...extra },
    });

  it.each([
    ["synth.sh", [], { KUBE_ON_OS_DOMAIN: "" }, "KUBE_ON_OS_DOMAIN is empty; set it"],
    [
      "synth.sh",
      [],
      { KUBE_ON_OS_DOMAIN: "lab.example.org", TF_VAR_deploy_domain_name: "prod.example.org" },
      "TF_VAR_deploy_domain_name='prod.example.org' differs from KUBE_ON_OS_DOMAIN='lab.example.org'",
    ],
    [
      "tofu.sh",
      ["deploy"],
      {},
      "usage: scripts/ci/tofu.sh validate|plan|plan-json|salt-preview|apply|destroy-plan|destroy|release-lock (got 'deploy')",
    ],
    [
      "tofu.sh",
      ["fmt"],
      {},
      "usage: scripts/ci/tofu.sh validate|plan|plan-json|salt-preview|apply|destroy-plan|destroy|release-lock (got 'fmt')",
    ],
    [
      "tofu.sh",
      ["plan"],
      { GITLAB_TOFU_PLAN_CACHE: "/builds/plan.tfplan" },
      "GITLAB_TOFU_PLAN_CACHE='/builds/plan.tfplan' cannot be changed here: the stack and its plan files are at cdktf.out/stacks/kube-on-os/plan.cache and cdktf.out/stacks/kube-on-os/plan.json (the artifacts name them); unset GITLAB_TOFU_PLAN_CACHE",
    ],
    ["tofu.sh", ["apply"], { GITLAB_TOFU_ROOT_DIR: "infra" }, "GITLAB_TOFU_ROOT_DIR='infra' cannot be changed here"],
    ["test.sh", [], { KOO_CI_TESTS: " \t " }, "KOO_CI_TESTS is blank; leave it empty to run npm test, or name jest files"],
    [
      "test.sh",
      [],
      { KOO_CI_TESTS: "__tests__/journey-gitlab-ci.test.ts" },
      "KOO_CI_TESTS must not name __tests__/journey-gitlab-ci.test.ts",
    ],
    ["test.sh", [], { KOO_CI_TESTS: "__tests__/nope.test.ts" }, "KOO_CI_TESTS names '__tests__/nope.test.ts', which does not exist"],
  ])("%s %j stops with one line when %j", (name, args, extra, message) => {
    const result = script(name, args, extra);
    expect(result.status).toBe(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`kube-on-os ci: ${message}`);
  });

  it("installs Go only when the toolchain must be built, and only the zip of the pinned sha256", async () => {
    const requests: string[] = [];
    const proxy = http.createServer((request, response) => {
      requests.push(request.url ?? "");
      response.end("not the Go toolchain");
    });
    await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
    const port = (proxy.address() as { port: number }).port;
    // This machine's PATH without its Go.
    const noGo = (process.env.PATH ?? "")
      .split(":")
      .filter((dir) => !fs.existsSync(path.join(dir, "go")))
      .join(":");
    const goOnPath = (cache: string, goproxy = `http://127.0.0.1:${port}`) =>
      runAsync("bash", ["-c", `source scripts/ci/common.sh && ci_go && command -v go`], {
        cwd: ROOT,
        env: { PATH: noGo, HOME: os.homedir(), KUBE_ON_OS_CACHE: cache, GOPROXY: goproxy },
      });
    try {
      // The cached toolchain needs no Go.
      const built = await goOnPath(process.env.KOO_CACHE ?? "");
      expect({ status: built.status, stdout: built.stdout }).toEqual({ status: 1, stdout: "" });
      expect(requests).toEqual([]);
      // An empty cache does, and a download that is not the pinned zip is refused.
      const empty = await goOnPath(tempDir("empty-cache"));
      expect(empty.status).toBe(1);
      expect(empty.stderr).toMatch(
        /kube-on-os ci: golang\.org\/toolchain@v0\.0\.1-go[\d.]+\.linux-amd64 from http:\/\/127\.0\.0\.1:\d+ does not have the pinned sha256/,
      );
      expect(requests).toEqual([expect.stringMatching(/^\/golang\.org\/toolchain\/@v\/v0\.0\.1-go[\d.]+\.linux-amd64\.zip$/)]);
      // GOPROXY is a list, as the go command reads it: "direct" entries are skipped, "off" stops.
      const listed = await goOnPath(tempDir("empty-cache"), `direct| http://127.0.0.1:${port}/ ,https://proxy.example.org`);
      expect(listed.stderr).toMatch(/from http:\/\/127\.0\.0\.1:\d+ does not have the pinned sha256/);
      expect(requests).toHaveLength(2);
      for (const [goproxy, message] of [
        ["off", "GOPROXY='off' turns module downloads off before naming a proxy"],
        ["direct", "GOPROXY='direct' names no module proxy (only direct)"],
      ]) {
        const refused = await goOnPath(tempDir("empty-cache"), goproxy);
        expect({ status: refused.status, stderr: refused.stderr.trim() }).toEqual({
          status: 1,
          stderr: expect.stringMatching(
            new RegExp(
              `^kube-on-os ci: ${message.replace(/[()]/g, "\\$&")}; Go [\\d.]+ comes from a module proxy \\(or put Go on PATH\\)$`,
            ),
          ),
        });
      }
      expect(requests).toHaveLength(2);
    } finally {
      await new Promise<void>((resolve) => proxy.close(() => resolve()));
    }
  });

  /** tofu.sh in a copy of scripts/ beside a stand-in synthesized stack (its path is fixed). */
  const tofuScript = (args: string[], extra: NodeJS.ProcessEnv) => {
    const copy = scriptsBesideStack("ci-scripts");
    return spawnSync("bash", [path.join(copy, "scripts", "ci", "tofu.sh"), ...args], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "pipe"],
      env: { PATH: process.env.PATH, HOME: os.homedir(), KUBE_ON_OS_CACHE: process.env.KOO_CACHE, ...extra },
    });
  };

  it("tofu.sh names the missing GitLab and OpenStack variables before tofu runs", () => {
    const base = { KUBE_ON_OS_DOMAIN: "lab.example.org" };
    const noToken = tofuScript(["plan"], { ...base, CI_API_V4_URL: "http://127.0.0.1:9/api/v4", CI_PROJECT_ID: "1" });
    expect(noToken.status).toBe(1);
    expect(noToken.stderr).toContain("kube-on-os ci: GitLab-managed state needs CI_JOB_TOKEN");
    const noApi = tofuScript(["plan"], { ...base, CI_JOB_TOKEN: "x" });
    expect(noApi.stderr).toContain("kube-on-os ci: GitLab-managed state needs CI_API_V4_URL CI_PROJECT_ID");
    const noCloud = tofuScript(["plan"], { ...base, CI_JOB_TOKEN: "x", CI_API_V4_URL: "http://127.0.0.1:9/api/v4", CI_PROJECT_ID: "1" });
    expect(noCloud.status).toBe(1);
    expect(noCloud.stderr).toContain("kube-on-os ci: no OpenStack credentials: set OS_CLOUD");
  });

  it("takes the OpenStack provider from the toolchain's mirror and every other from the registry, unless told to stay offline", () => {
    const config = (extra: NodeJS.ProcessEnv) =>
      spawnSync(
        "bash",
        ["-c", 'source scripts/ci/common.sh && source scripts/toolchain/env.sh && ci_provider_config && echo "$TF_CLI_CONFIG_FILE"'],
        {
          cwd: ROOT,
          encoding: "utf8",
          env: { PATH: process.env.PATH, HOME: os.homedir(), KUBE_ON_OS_CACHE: process.env.KOO_CACHE, ...extra },
        },
      );
    const online = config({});
    expect(online.status).toBe(0);
    expect(online.stderr).toContain(
      "providers: registry.opentofu.org/terraform-provider-openstack/openstack from the toolchain's mirror, the others from the registry",
    );
    const file = online.stdout.trim();
    const text = fs.readFileSync(file, "utf8");
    expect(text).toMatch(/filesystem_mirror \{[^}]*include += \["registry\.opentofu\.org\/terraform-provider-openstack\/openstack"\]/);
    expect(text).toMatch(/direct \{\s*exclude += \["registry\.opentofu\.org\/terraform-provider-openstack\/openstack"\]/);
    // The mirror half works with no network: init of the OpenStack provider alone.
    const dir = tempDir("pipeline-providers");
    fs.writeFileSync(
      path.join(dir, "main.tf.json"),
      JSON.stringify({
        terraform: { required_providers: { openstack: { source: "terraform-provider-openstack/openstack", version: "3.4.0" } } },
      }),
    );
    const init = spawnSync(process.env.KOO_TOFU!, ["init", "-backend=false", "-input=false", "-no-color"], {
      cwd: dir,
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: os.homedir(), TF_CLI_CONFIG_FILE: file },
    });
    expect({ status: init.status, stderr: init.stderr }).toEqual({ status: 0, stderr: "" });
    fs.rmSync(file);
    // Offline, or with a CLI configuration of the user's own, the toolchain's configuration stays.
    const offline = config({ KUBE_ON_OS_OFFLINE_PROVIDERS: "true" });
    expect(offline.stdout.trim()).toMatch(/\/tofu\.rc$/);
    expect(offline.stderr).toBe("");
  });

  it("tofu.sh derives the lock and unlock addresses from a TF_HTTP_ADDRESS of the user's own", () => {
    const own = "https://state.example.org/clusters/lab";
    const result = tofuScript(["plan"], { KUBE_ON_OS_DOMAIN: "lab.example.org", TF_HTTP_ADDRESS: own, TF_HTTP_PASSWORD: "x" });
    // It stops at the missing OpenStack credentials, after saying which state it would use.
    expect(result.stderr).toContain(`state: lab.example.org at ${own} (lock ${own}/lock, user gitlab-ci-token)`);
    expect(result.stderr).not.toContain("/projects/");
  });
});

describe("scripts/ci/tofu.sh release-lock, the after_script of the jobs that lock", () => {
  const DOMAIN = "lab.example.org";
  const TOKEN = `glcbt-64_${randomUUID()}`;
  const COLLEAGUE = `glpat-${randomUUID()}`;
  let state: StateServer;
  let api: GitLabApi;

  beforeAll(async () => {
    state = await startStateServer({ username: "gitlab-ci-token", password: TOKEN });
    api = await startGitLabApi(state, "7", {
      users: { [TOKEN]: "koo-maintainer", [COLLEAGUE]: "alice" },
      upstream: { username: "gitlab-ci-token", password: TOKEN },
    });
  });
  afterAll(async () => {
    await Promise.all([state?.close(), api?.close()]);
  });

  const lockAddress = () => `${api.serverUrl}/api/v4/projects/7/terraform/state/${DOMAIN}/lock`;
  const lock = async (token: string) => {
    const info = { ID: randomUUID(), Operation: "OperationTypeApply", Info: "", Who: "x@y", Version: "1.11.0", Created: "", Path: "" };
    const answer = await fetch(lockAddress(), {
      method: "POST",
      headers: { authorization: api.authorization(token) },
      body: JSON.stringify(info),
    });
    expect(answer.status).toBe(200);
    return info.ID;
  };
  /** release-lock in a copy of scripts/, after a job whose tofu noted the lock as `record` says. */
  const release = async (record: string | undefined, extra: NodeJS.ProcessEnv = {}) => {
    const copy = scriptsBesideStack("release-lock");
    if (record !== undefined) fs.writeFileSync(path.join(copy, STACK, ".state-lock-before"), record);
    // Not spawnSync: the stand-in answers from this process.
    const result = await runAsync("bash", [path.join(copy, "scripts", "ci", "tofu.sh"), "release-lock"], {
      env: {
        PATH: process.env.PATH,
        HOME: os.homedir(),
        KUBE_ON_OS_DOMAIN: DOMAIN,
        CI_API_V4_URL: `${api.serverUrl}/api/v4`,
        CI_PROJECT_ID: "7",
        CI_JOB_TOKEN: TOKEN,
        CI_JOB_STATUS: "canceled",
        ...extra,
      },
    });
    expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
    return result.stderr.trim().split("\n").pop();
  };

  it("gives back a lock the job's own user took after the job noted the state free", async () => {
    const id = await lock(TOKEN);
    expect(await release("before=\nuser=koo-maintainer\n")).toMatch(
      new RegExp(`^==> state lock: gave back ${id}, which this job's tofu took at \\S+ and left behind$`),
    );
    expect(state.lockInfo(DOMAIN)).toBeUndefined();
  });

  it("leaves a lock of another user, or one that was there before, and says whose it is", async () => {
    const theirs = await lock(COLLEAGUE);
    expect(await release("before=\nuser=koo-maintainer\n")).toMatch(
      new RegExp(`^==> state lock: ${theirs} is held by alice since \\S+, not by this job's user koo-maintainer; left alone`),
    );
    expect(await release(`before=${theirs}\nuser=alice\n`)).toMatch(
      new RegExp(`^==> state lock: ${theirs}, held by alice since \\S+, was there before`),
    );
    expect(state.lockInfo(DOMAIN)).toMatchObject({ ID: theirs });
    // Who held it before the job's tofu ran could not be read: nothing is this job's.
    expect(await release("before=<unread>\nuser=alice\n")).toMatch(
      /^==> state lock: held by alice since \S+; who held it before this job's tofu ran is unknown, so it is left alone/,
    );
    expect(state.lockInfo(DOMAIN)).toMatchObject({ ID: theirs });
    const answer = await fetch(lockAddress(), {
      method: "DELETE",
      headers: { authorization: api.authorization(COLLEAGUE) },
      body: JSON.stringify({ ID: theirs }),
    });
    expect(answer.status).toBe(200);
  });

  it("asks nothing after a job that succeeded or whose tofu never ran, and finds a free state free", async () => {
    const asked = api.requests.length;
    expect(await release("before=\nuser=koo-maintainer\n", { CI_JOB_STATUS: "success" })).toBe(
      "==> state lock: the job succeeded, so its tofu gave the lock back",
    );
    expect(await release(undefined)).toBe("==> state lock: tofu did not run in this job; no lock of its own to give back");
    expect(api.requests.length).toBe(asked);
    expect(await release("before=\nuser=koo-maintainer\n")).toBe("==> state lock: free; this job left none behind");
    expect(state.lockInfo(DOMAIN)).toBeUndefined();
  });
});
