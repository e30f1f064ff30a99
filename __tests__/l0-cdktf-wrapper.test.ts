/**
 * scripts/cdktf.js, behind `npm run diff|deploy|destroy|output`: which Terraform-compatible CLI it
 * runs, and the one-line refusals. The laptop suite runs the whole path; these cases are the
 * choices a laptop can present.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { tfClis } from "./support/tofu";

const WRAPPER = path.join(__dirname, "..", "scripts", "cdktf.js");

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
}

/** A directory holding only links to the given programs (and the basics a shell script uses). */
function binDir(programs: Record<string, string>): string {
  const dir = tempDir("bin");
  const basics = Object.fromEntries(
    ["bash", "dirname", "awk"].map((name) => [name, spawnSync("which", [name], { encoding: "utf8" }).stdout.trim()]),
  );
  for (const [name, target] of Object.entries({ node: process.execPath, ...basics, ...programs })) {
    fs.symlinkSync(target, path.join(dir, name));
  }
  return dir;
}

/** `npm run output` through the wrapper, with exactly `env` (no inherited PATH). */
function output(env: NodeJS.ProcessEnv): { status: number | null; stderr: string } {
  const result = spawnSync(process.execPath, [WRAPPER, "output"], {
    cwd: tempDir("project"),
    encoding: "utf8",
    env: { HOME: tempDir("home"), KUBE_ON_OS_CACHE: tempDir("empty-cache"), ...env },
  });
  return { status: result.status, stderr: result.stderr };
}

const tofu = tfClis().find((cli) => cli.name === "tofu")!;
const terraform = tfClis().find((cli) => cli.name === "terraform");

describe("scripts/cdktf.js chooses the CLI", () => {
  it("runs tofu when it is on PATH", () => {
    const { stderr } = output({ PATH: binDir({ tofu: tofu.path }) });
    expect(stderr.split("\n")[0]).toMatch(
      /^kube-on-os: using OpenTofu \d+\.\d+\.\d+ \(.*\/tofu, tofu on PATH; set TERRAFORM_BINARY_NAME to choose\)$/,
    );
  });

  (terraform ? it : it.skip)("runs terraform when it is the only one on PATH", () => {
    const { stderr } = output({ PATH: binDir({ terraform: terraform!.path }) });
    expect(stderr.split("\n")[0]).toMatch(/^kube-on-os: using Terraform \d+\.\d+\.\d+ \(.*\/terraform, terraform on PATH;/);
  });

  (terraform ? it : it.skip)("runs TERRAFORM_BINARY_NAME over the order", () => {
    const { stderr } = output({ PATH: binDir({ tofu: tofu.path, terraform: terraform!.path }), TERRAFORM_BINARY_NAME: "terraform" });
    expect(stderr.split("\n")[0]).toMatch(/^kube-on-os: using Terraform .*, TERRAFORM_BINARY_NAME;/);
  });

  it("finds the toolchain's OpenTofu for TERRAFORM_BINARY_NAME=tofu and when nothing is on PATH", () => {
    const cache = process.env.KOO_TOFU!.replace(/\/tofu\/[^/]+\/bin\/tofu$/, "");
    const named = output({ PATH: binDir({}), KUBE_ON_OS_CACHE: cache, TERRAFORM_BINARY_NAME: "tofu" });
    expect(named.stderr.split("\n")[0]).toContain(`(${process.env.KOO_TOFU}, TERRAFORM_BINARY_NAME;`);
    const fallback = output({ PATH: binDir({}), KUBE_ON_OS_CACHE: cache });
    expect(fallback.stderr.split("\n")[0]).toContain(`(${process.env.KOO_TOFU}, the toolchain's OpenTofu;`);
  });

  it("stops with one line when there is no CLI at all", () => {
    const { status, stderr } = output({ PATH: binDir({}) });
    expect(status).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      "kube-on-os: neither OpenTofu (>= 1.11.0) nor Terraform (>= 1.10.0) is on PATH; install one, or run `npm run toolchain` to build the project's OpenTofu",
    ]);
  });

  it("stops with one line when TERRAFORM_BINARY_NAME names nothing", () => {
    const { status, stderr } = output({ PATH: binDir({ tofu: tofu.path }), TERRAFORM_BINARY_NAME: "terraform-1.99" });
    expect(status).toBe(1);
    expect(stderr.trim().split("\n")).toEqual(['kube-on-os: TERRAFORM_BINARY_NAME="terraform-1.99" is not an executable on PATH']);
  });

  it("refuses a Terraform older than ephemeral variables, naming both versions", () => {
    // Terraform 1.9 as far as the version question goes: its `version -json` and `version` output.
    const old = path.join(tempDir("old"), "terraform");
    fs.writeFileSync(
      old,
      '#!/bin/bash\nif [ "$2" = -json ]; then echo \'{"terraform_version":"1.9.8","platform":"linux_amd64"}\'; else echo "Terraform v1.9.8"; fi\n',
      { mode: 0o755 },
    );
    const { status, stderr } = output({ PATH: binDir({ terraform: old }) });
    expect(status).toBe(1);
    expect(stderr.trim().split("\n")).toEqual([
      expect.stringMatching(
        /^kube-on-os: .*\/terraform is Terraform 1\.9\.8; the stack needs Terraform >= 1\.10\.0 \(set TERRAFORM_BINARY_NAME to another\)$/,
      ),
    ]);
  });
});
