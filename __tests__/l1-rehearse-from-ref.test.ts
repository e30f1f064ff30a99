/**
 * L1: the stack `npm run rehearse -- --from REF` applies first (tools/rehearsal/from-ref.ts): the
 * project as of REF, taken with git archive and synthesized by its own `npm run synth` from the
 * user's TF_VAR_* values, its backend the rehearsal's http state. HEAD stands for the ref: its
 * dependencies are the working tree's, which serve it as they are. What the rehearsal then does
 * with such a stack is l5-rehearsal-upgrade.test.ts's (a version upgrade) and l5-rehearsal.test.ts's
 * (a pillar edit).
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { RefError, resolveRef, stackAtRef } from "../tools/rehearsal/from-ref";
import { KEYS } from "./support/arbitraries";

const ROOT = path.resolve(__dirname, "..");

describe("L1: npm run rehearse -- --from REF builds REF's own stack", () => {
  let into: string;
  beforeAll(() => {
    into = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-from-ref-"));
  });
  afterAll(() => fs.rmSync(into, { recursive: true, force: true }));

  it("names a commit as git abbreviates it, and refuses a name that is none in one line", async () => {
    const head = execFileSync("git", ["rev-parse", "--short=7", "HEAD"], { cwd: ROOT, encoding: "utf8" }).trim();
    expect(await resolveRef("HEAD")).toBe(head);
    await expect(resolveRef("no-such-ref")).rejects.toEqual(
      new RefError("--from no-such-ref: not a commit of this repository (give a tag, a branch or a commit id)"),
    );
  });

  it("synthesizes REF's tree with the user's TF_VAR_* values and the rehearsal's deploy key, on an http backend", async () => {
    const commit = await resolveRef("HEAD");
    const lines: string[] = [];
    const built = await stackAtRef(
      commit,
      into,
      { PATH: process.env.PATH, HOME: process.env.HOME, TF_VAR_num_kube_nodes: "5" },
      KEYS.ed25519,
      (line) => lines.push(line),
    );
    expect(built.commit).toBe(commit);
    const tree = path.resolve(built.dir, "..", "..", "..");
    // HEAD's tree, from git: what the index holds of salt/ is there, and nothing of the work tree's own.
    expect(execFileSync("git", ["-C", ROOT, "ls-tree", "--name-only", commit], { encoding: "utf8" }).trim().split("\n").sort()).toEqual(
      fs
        .readdirSync(tree)
        .filter((name) => !["node_modules", ".gen", "cdktf.out"].includes(name))
        .sort(),
    );
    // Its dependencies are the working tree's: no npm ci.
    expect(fs.readlinkSync(path.join(tree, "node_modules"))).toBe(path.join(ROOT, "node_modules"));
    expect(lines).toEqual([`synthesizing ${commit}'s stack with your TF_VAR_* values (its npm run synth)`]);
    const stack = JSON.parse(fs.readFileSync(path.join(built.dir, "cdk.tf.json"), "utf8"));
    expect(stack.terraform.backend).toEqual({ http: { lock_method: "POST", unlock_method: "DELETE" } });
    expect(stack.variable.num_kube_nodes.default).toBe(5);
    expect(stack.variable.deploy_ssh_public_key.default).toBe(KEYS.ed25519);
    // The chain's uploads are there, as its synth wrote them.
    expect(fs.readdirSync(path.join(built.dir, "assets")).length).toBeGreaterThan(0);
  }, 120_000);
});
