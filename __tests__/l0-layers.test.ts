/**
 * The checks that keep the code's structure (docs/architecture.md, Layers), as scripts/lint.sh
 * runs them: eslint's no-restricted-imports for the layers, scripts/check-import-cycles.js for
 * cycles, and jscpd (.jscpd.json) for copies.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { importCycles } = require("../scripts/check-import-cycles.js") as { importCycles: (root: string) => string[][] };

function tempTree(files: Record<string, string>): string {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-layers-"));
  for (const [file, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(root, file)), { recursive: true });
    fs.writeFileSync(path.join(root, file), text);
  }
  return root;
}

const REFUSED: [string, string, RegExp][] = [
  ["config/x.ts", 'import { Network } from "../constructs/network";', /config\/ reads and checks parameters/],
  ["config/x.ts", 'import { TerraformVariable } from "cdktf";', /never constructs\/, cdktf or the bindings/],
  ["config/x.ts", 'import { LbPoolV2 } from "../.gen/providers/openstack/lb-pool-v2";', /never constructs\/, cdktf or the bindings/],
  ["facts/x.ts", 'import { VARIABLES } from "../config/parameters";', /facts\/ is the lowest layer/],
  ["facts/x.ts", 'import { Construct } from "constructs";', /facts\/ is the lowest layer/],
  ["constructs/x.ts", 'import { STACK_NAME } from "../main";', /constructs\/ is below main.ts/],
  ["constructs/x.ts", 'import { estimate } from "../tools/rehearsal/memory";', /constructs\/ never imports tools\//],
];
const ALLOWED: [string, string][] = [
  ["config/x.ts", 'import { parseIpv4Network } from "../facts/cidr";'],
  ["facts/x.ts", 'import { parseIpv4Network } from "./cidr";'],
  ["constructs/x.ts", 'import { VARIABLES } from "../config/parameters";'],
];

/**
 * The no-restricted-imports messages eslint gives each [file, import] as if it were that file of
 * the project: one eslint process for all (jest cannot load eslint's ESM configuration itself).
 */
function layerErrors(cases: [string, string][]): string[][] {
  const sources = cases.map(([file, text]) => ({
    filePath: path.join(ROOT, file),
    text: `${text}\nexport const used = [${text.match(/\{ (\w+) \}/)![1]}];\n`,
  }));
  const program = `
    const { ESLint } = require("eslint");
    const eslint = new ESLint({ cwd: process.cwd() });
    (async () => {
      const out = [];
      for (const { filePath, text } of JSON.parse(process.argv[1])) {
        const [result] = await eslint.lintText(text, { filePath });
        out.push(result.messages.filter((m) => m.ruleId === "no-restricted-imports").map((m) => m.message));
      }
      console.log(JSON.stringify(out));
    })();`;
  const result = spawnSync("node", ["-e", program, JSON.stringify(sources)], { cwd: ROOT, encoding: "utf8" });
  if (result.status !== 0) throw new Error(`eslint failed: ${result.stderr}`);
  return JSON.parse(result.stdout);
}

describe("the layers (eslint's no-restricted-imports)", () => {
  let refused: string[][];
  let allowed: string[][];
  beforeAll(() => {
    const errors = layerErrors([...REFUSED.map(([file, text]): [string, string] => [file, text]), ...ALLOWED]);
    refused = errors.slice(0, REFUSED.length);
    allowed = errors.slice(REFUSED.length);
  });

  it.each(REFUSED.map((row, index) => [...row, index] as const))("refuses in %s: %s", (_file, _text, message, index) => {
    expect(refused[index]).toEqual([expect.stringMatching(message)]);
  });

  it.each(ALLOWED.map((row, index) => [...row, index] as const))("allows in %s: %s", (_file, _text, index) => {
    expect(allowed[index]).toEqual([]);
  });
});

describe("scripts/check-import-cycles.js", () => {
  it("names every import cycle file by file, type-only imports and index.ts included", () => {
    const root = tempTree({
      "main.ts": 'import { a } from "./constructs/a";\n',
      "constructs/a.ts": 'import { b } from "./b";\nexport const a = b;\n',
      "constructs/b.ts": 'import type { C } from "./c";\nexport const b = 1;\n',
      "constructs/c/index.ts": 'import { a } from "../a";\nexport type C = typeof a;\n',
      "config/self.ts": 'import { x } from "./self";\nexport const x = 1;\n',
      "config/fine.ts": 'import { x } from "./self";\nimport { Construct } from "constructs";\n',
    });
    expect(importCycles(root).sort()).toEqual([
      ["config/self.ts", "config/self.ts"],
      ["constructs/a.ts", "constructs/b.ts", "constructs/c/index.ts", "constructs/a.ts"],
    ]);
  });

  it("finds no cycle in the product", () => {
    const result = spawnSync("node", ["scripts/check-import-cycles.js"], { cwd: ROOT, encoding: "utf8" });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  });
});

describe("the copy check (jscpd, .jscpd.json)", () => {
  function jscpd(root: string) {
    const config = JSON.parse(fs.readFileSync(path.join(ROOT, ".jscpd.json"), "utf8"));
    fs.writeFileSync(path.join(root, ".jscpd.json"), JSON.stringify({ ...config, path: ["."] }));
    return spawnSync(path.join(ROOT, "node_modules", ".bin", "jscpd"), [], { cwd: root, encoding: "utf8" });
  }

  const body = [
    "def reachable(host, port, timeout):",
    "    with socket.create_connection((host, port), timeout=timeout) as sock:",
    "        sock.settimeout(timeout)",
    "        data = sock.recv(64)",
    "    return data.startswith(b'SSH-')",
    "",
  ].join("\n");

  it("fails on four lines written twice, and passes once they have one home", () => {
    const copied = tempTree({ "a.py": `import socket\n\n\n${body}`, "b.py": `import socket\n\n\n${body.replace("reachable", "answers")}` });
    const twice = jscpd(copied);
    expect(twice.stdout).toMatch(/Found 1 clones/);
    expect(twice.status).toBe(1);

    const once = tempTree({
      "a.py": `import socket\n\n\n${body}`,
      "b.py": "from a import reachable\n\n\ndef answers(host, port, timeout):\n    return reachable(host, port, timeout)\n",
    });
    expect(jscpd(once).status).toBe(0);
  });
});
