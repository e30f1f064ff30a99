/**
 * What __tests__/journey-gitlab-ci.test.ts needs around gitlab-ci-local: GitLab's CI schema taken out of
 * the pinned gitlab-ci-local package, a stand-in for the part of GitLab's API the pipeline talks to
 * (the Terraform state endpoints), and a throw-away GitLab project made from the work tree.
 */
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as http from "node:http";
import * as path from "node:path";
import * as ts from "typescript";
import { StateServer } from "../doubles/http-state/server";

export const ROOT = path.resolve(__dirname, "..", "..");

/** The gitlab-ci-local the toolchain installed (npm test exports KOO_GITLAB_CI_LOCAL). */
export function gitlabCiLocal(): string {
  const binary = process.env.KOO_GITLAB_CI_LOCAL;
  if (!binary || !fs.existsSync(binary)) {
    throw new Error("KOO_GITLAB_CI_LOCAL is not set or missing: run the tests with `npm test`, or source scripts/toolchain/env.sh first");
  }
  return binary;
}

/**
 * GitLab's CI JSON schema (app/assets/javascripts/editor/schema/ci.json), as gitlab-ci-local
 * ships it: bundled into dist/index.js as an object literal, which its schema.ts then loosens at
 * run time. The literal is read with the TypeScript parser and converted only if it is pure data,
 * so what comes out is GitLab's file as the package vendored it, not gitlab-ci-local's variant.
 */
export function gitlabCiSchema(): Record<string, any> {
  const dist = fs.realpathSync(gitlabCiLocal());
  const source = ts.createSourceFile(dist, fs.readFileSync(dist, "utf8"), ts.ScriptTarget.Latest, false, ts.ScriptKind.JS);
  const isSchema = (node: ts.Node): node is ts.ObjectLiteralExpression =>
    ts.isObjectLiteralExpression(node) &&
    node.properties.some(
      (p) =>
        ts.isPropertyAssignment(p) &&
        (ts.isIdentifier(p.name) || ts.isStringLiteral(p.name)) &&
        p.name.text === "$id" &&
        ts.isStringLiteral(p.initializer) &&
        p.initializer.text === "https://gitlab.com/.gitlab-ci.yml",
    );
  let found: ts.ObjectLiteralExpression | undefined;
  const visit = (node: ts.Node): void => {
    if (found) return;
    if (isSchema(node)) found = node;
    else ts.forEachChild(node, visit);
  };
  visit(source);
  if (!found) throw new Error(`GitLab's CI schema ($id https://gitlab.com/.gitlab-ci.yml) is not in ${dist}`);
  return literal(found) as Record<string, any>;
}

function propertyName(name: ts.PropertyName): string {
  if (ts.isIdentifier(name) || ts.isStringLiteral(name) || ts.isNumericLiteral(name)) return name.text;
  throw new Error(`schema literal: unexpected key ${ts.SyntaxKind[name.kind]}`);
}

/** A JSON value from a JavaScript literal; anything computed is refused. */
function literal(node: ts.Node): unknown {
  if (ts.isObjectLiteralExpression(node)) {
    return Object.fromEntries(
      node.properties.map((p) => {
        if (!ts.isPropertyAssignment(p)) throw new Error(`schema literal: unexpected ${ts.SyntaxKind[p.kind]}`);
        return [propertyName(p.name), literal(p.initializer)];
      }),
    );
  }
  if (ts.isArrayLiteralExpression(node)) return node.elements.map(literal);
  if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) return node.text;
  if (ts.isNumericLiteral(node)) return Number(node.text);
  if (node.kind === ts.SyntaxKind.TrueKeyword) return true;
  if (node.kind === ts.SyntaxKind.FalseKeyword) return false;
  if (node.kind === ts.SyntaxKind.NullKeyword) return null;
  // The minifier writes true and false as !0 and !1.
  if (ts.isPrefixUnaryExpression(node) && ts.isNumericLiteral(node.operand)) {
    if (node.operator === ts.SyntaxKind.ExclamationToken) return !Number(node.operand.text);
    if (node.operator === ts.SyntaxKind.MinusToken) return -Number(node.operand.text);
  }
  throw new Error(`schema literal: ${ts.SyntaxKind[node.kind]} is not data`);
}

/** Ajv as gitlab-ci-local validates with it (its own dependency, installed beside it). */
export function gitlabCiValidator(schema: Record<string, any>): {
  validate(config: unknown): { instancePath: string; message?: string }[];
} {
  // The package's own copy, so that the schema and the validator come from the same pinned install.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const Ajv = require(path.join(path.dirname(gitlabCiLocal()), "..", "ajv")).default;
  // gitlab-ci-local's options (src/validator.ts): formats are not checked, markdownDescription is known.
  const ajv = new Ajv({
    allErrors: true,
    allowUnionTypes: true,
    validateFormats: false,
    strictTypes: false,
    keywords: ["markdownDescription"],
  });
  const check = ajv.compile(schema);
  return { validate: (config) => (check(config) ? [] : check.errors) };
}

export interface ApiRequest {
  readonly method: string;
  readonly path: string;
  readonly status: number;
}

export interface GitLabApi {
  /** What GitLab's CI_SERVER_URL would be; CI_API_V4_URL is this + /api/v4. */
  readonly serverUrl: string;
  readonly requests: readonly ApiRequest[];
  /** A basic Authorization header with `token` as the password, as GitLab takes a job or personal access token. */
  authorization(token: string): string;
  close(): Promise<void>;
}

export interface GitLabApiOptions {
  /** Token (the basic auth password) → the GitLab username it belongs to. */
  readonly users: Record<string, string>;
  /** The state server's own basic auth, which the stand-in uses upstream. */
  readonly upstream: { readonly username: string; readonly password: string };
}

/**
 * GitLab's Terraform state API, /api/v4/projects/<id>/terraform/state/<name>[/lock], passed on to
 * the state server's /state/<name>[/lock], method, query and body as they come. Any other path is
 * a 404 and stays in `requests`, so a wrong TF_HTTP_ADDRESS shows.
 *
 * It authenticates as GitLab does (the password is a token of one of `users`, else 401) and keeps
 * locks as GitLab keeps them (lib/api/terraform/state.rb, app/services/terraform/
 * remote_state_handler.rb): the lock's ID, the user whose token took it and when. A POST to the
 * lock address answers, 200 or 409 when the state is locked, the request's Operation, Info,
 * Version and Path with the holder's ID, Who (the username) and Created.
 */
export async function startGitLabApi(state: StateServer, projectId: string, options: GitLabApiOptions): Promise<GitLabApi> {
  const requests: ApiRequest[] = [];
  const holders = new Map<string, { user: string; created: string }>();
  const route = new RegExp(`^/api/v4/projects/${projectId}/terraform/state/([^/?]+)(/lock)?(\\?.*)?$`);
  const target = new URL(state.url);
  const upstreamAuth = `Basic ${Buffer.from(`${options.upstream.username}:${options.upstream.password}`).toString("base64")}`;
  const userOf = (header: string | undefined): string | undefined => {
    const match = /^Basic (.+)$/.exec(header ?? "");
    if (!match) return undefined;
    const decoded = Buffer.from(match[1], "base64").toString("utf8");
    return options.users[decoded.slice(decoded.indexOf(":") + 1)];
  };
  const server = http.createServer((request, response) => {
    const match = route.exec(request.url ?? "");
    const done = (status: number) => requests.push({ method: request.method ?? "", path: request.url ?? "", status });
    if (!match) {
      response.writeHead(404).end("not a Terraform state endpoint");
      done(404);
      return;
    }
    const user = userOf(request.headers.authorization);
    if (user === undefined) {
      response.writeHead(401, { "WWW-Authenticate": 'Basic realm="GitLab"' }).end("401 Unauthorized");
      done(401);
      return;
    }
    const [, name, lock] = match;
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const body = Buffer.concat(chunks);
      const upstream = http.request(
        {
          host: target.hostname,
          port: target.port,
          method: request.method,
          path: `/state/${name}${lock ?? ""}${match[3] ?? ""}`,
          headers: { ...request.headers, host: target.host, authorization: upstreamAuth, "content-length": body.length },
        },
        (answer) => {
          const answered: Buffer[] = [];
          answer.on("data", (chunk: Buffer) => answered.push(chunk));
          answer.on("end", () => {
            let status = answer.statusCode ?? 502;
            let reply = Buffer.concat(answered);
            let headers: http.OutgoingHttpHeaders = answer.headers;
            if (lock && request.method === "POST" && (status === 200 || status === 423)) {
              const asked = JSON.parse(body.toString("utf8") || "{}");
              if (status === 200) holders.set(name, { user, created: new Date().toISOString() });
              const holder = status === 200 ? asked : JSON.parse(reply.toString("utf8"));
              const kept = holders.get(name) ?? { user: String(holder.Who), created: String(holder.Created) };
              status = status === 200 ? 200 : 409;
              const { Operation, Info, Version, Path } = asked;
              reply = Buffer.from(JSON.stringify({ Operation, Info, Version, Path, ID: holder.ID, Who: kept.user, Created: kept.created }));
              headers = { "content-type": "application/json" };
            }
            if (lock && request.method === "DELETE" && status === 200) holders.delete(name);
            response.writeHead(status, headers);
            response.end(reply);
            done(status);
          });
        },
      );
      upstream.on("error", () => {
        response.writeHead(502).end();
        done(502);
      });
      upstream.end(body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("GitLab API stand-in: no TCP address");
  return {
    serverUrl: `http://127.0.0.1:${address.port}`,
    requests,
    authorization: (token) => `Basic ${Buffer.from(`user:${token}`).toString("base64")}`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/**
 * A GitLab project checkout in `dir`: the work tree's files as a commit would take them (tracked
 * and untracked, less what .gitignore excludes), committed on `main`, with a GitLab remote that is
 * only ever read, never contacted.
 */
export function makeProject(dir: string): void {
  const files = spawnSync("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT, encoding: "utf8" });
  if (files.status !== 0) throw new Error(`git ls-files failed: ${files.stderr}`);
  const existing = files.stdout.split("\0").filter((f) => f && fs.existsSync(path.join(ROOT, f)));
  const copy = spawnSync("rsync", ["-a", "--from0", "--files-from=-", "./", `${dir}/`], { cwd: ROOT, input: existing.join("\0") });
  if (copy.status !== 0) throw new Error(`rsync failed: ${copy.stderr}`);
  git(dir, ["init", "-q", "-b", "main"]);
  git(dir, ["add", "-A"]);
  git(dir, ["commit", "-q", "-m", "snapshot of the work tree"]);
  git(dir, ["remote", "add", "origin", "https://gitlab.example.org/platform/kube-on-os.git"]);
  // What a clone has: origin/HEAD names the default branch (gitlab-ci-local's CI_DEFAULT_BRANCH).
  git(dir, ["update-ref", "refs/remotes/origin/main", "HEAD"]);
  git(dir, ["symbolic-ref", "refs/remotes/origin/HEAD", "refs/remotes/origin/main"]);
}

export function git(cwd: string, args: string[]): string {
  const result = spawnSync("git", ["-c", "user.name=kube-on-os tests", "-c", "user.email=tests@example.org", ...args], {
    cwd,
    encoding: "utf8",
  });
  if (result.status !== 0) throw new Error(`git ${args.join(" ")} failed: ${result.stderr}`);
  return result.stdout;
}

export interface PipelineRun {
  readonly status: number | null;
  readonly output: string;
}

/** Runs gitlab-ci-local in `cwd` without blocking the event loop (the servers live in this process). */
export function runPipeline(cwd: string, args: string[], env: NodeJS.ProcessEnv): Promise<PipelineRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(gitlabCiLocal(), ["--no-color", "--shell-isolation", "--force-shell-executor", ...args], { cwd, env });
    let output = "";
    child.stdout.on("data", (chunk) => (output += chunk));
    child.stderr.on("data", (chunk) => (output += chunk));
    child.on("error", reject);
    child.on("close", (status) => resolve({ status, output }));
  });
}

/** The files inside a zip (a plan file), uncompressed, so that a secret cannot hide in deflate. */
export function zipEntries(file: string): Map<string, Buffer> {
  const python = path.join(process.env.KOO_VENV ?? "", "bin", "python");
  const script = [
    "import base64, json, sys, zipfile",
    "z = zipfile.ZipFile(sys.argv[1])",
    "print(json.dumps({n: base64.b64encode(z.read(n)).decode() for n in z.namelist()}))",
  ].join("\n");
  const result = spawnSync(python, ["-c", script, file], { encoding: "utf8", maxBuffer: 256 * 1024 * 1024 });
  if (result.status !== 0) throw new Error(`could not read ${file} as a zip: ${result.stderr}`);
  return new Map(Object.entries(JSON.parse(result.stdout) as Record<string, string>).map(([n, b]) => [n, Buffer.from(b, "base64")]));
}

type Json = Record<string, any>;
const isHash = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

function deepMerge(base: Json, over: Json): Json {
  const merged: Json = { ...base };
  for (const [key, value] of Object.entries(over))
    merged[key] = isHash(value) && isHash(merged[key]) ? deepMerge(merged[key], value) : value;
  return merged;
}

/**
 * Every job and template of a parsed .gitlab-ci.yml with its `extends` applied as GitLab applies
 * them (ci/yaml/yaml_optimization.md): hashes merged deeply, each later template and then the job
 * itself winning, anything else (lists, strings) replaced whole.
 */
export function resolveExtends(pipeline: Json): Json {
  const resolve = (name: string, seen: string[]): Json => {
    if (seen.includes(name)) throw new Error(`extends: a loop through ${[...seen, name].join(" → ")}`);
    const job = pipeline[name];
    if (!isHash(job)) throw new Error(`extends: no job or template ${JSON.stringify(name)}`);
    const { extends: parents, ...own } = job;
    const base = [parents ?? []].flat().reduce((merged: Json, parent: string) => deepMerge(merged, resolve(parent, [...seen, name])), {});
    return deepMerge(base, own);
  };
  return Object.fromEntries(
    Object.keys(pipeline)
      .filter((name) => isHash(pipeline[name]))
      .map((name) => [name, resolve(name, [])]),
  );
}
