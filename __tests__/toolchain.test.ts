/**
 * The toolchain installers as a newcomer meets them: a missing prerequisite is one clear line,
 * a second run installs nothing, and a user's own CLI configuration is respected.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
}

/** A PATH holding every command of this machine except `missing`. */
function pathWithout(missing: string[]): string {
  const bin = tempDir("bin");
  for (const dir of ["/usr/local/bin", "/usr/bin"]) {
    for (const name of fs.readdirSync(dir)) {
      const hidden = missing.some((m) => name === m || name.startsWith(`${m}.`) || name.startsWith(`${m}-`));
      if (!hidden && !fs.existsSync(path.join(bin, name))) fs.symlinkSync(path.join(dir, name), path.join(bin, name));
    }
  }
  return bin;
}

function bash(script: string, env: NodeJS.ProcessEnv) {
  const result = spawnSync("bash", ["-c", script], { cwd: ROOT, encoding: "utf8", env: { ...process.env, ...env } });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

describe("toolchain", () => {
  it.each([
    [
      "terraform.sh",
      ["go", "tofu"],
      "kube-on-os toolchain: 'go' is not installed; install Go >= 1.24 (https://go.dev/doc/install); it builds OpenTofu",
    ],
    ["python.sh", ["python3"], "kube-on-os toolchain: 'python3' is not installed; install Python 3.10 or newer"],
    ["node.sh", ["npm"], "kube-on-os toolchain: 'npm' is not installed; install Node.js with npm; it downloads node-linux-"],
  ])("%s stops with one line naming the missing %j", (installer, missing, message) => {
    const result = bash(`bash scripts/toolchain/${installer}`, { PATH: pathWithout(missing), KUBE_ON_OS_CACHE: tempDir("cache") });
    expect(result.status).toBe(1);
    const lines = result.stderr.trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(message);
  });

  it("uses a tofu of exactly the pinned version found on PATH instead of building one", () => {
    const version = bash("source scripts/toolchain/paths.sh && koo_tofu_version", {}).stdout.trim();
    expect(version).toMatch(/^\d+\.\d+\.\d+$/);
    const bin = pathWithout(["go", "tofu"]);
    const fake = path.join(tempDir("tofu"), "tofu");
    fs.writeFileSync(fake, `#!/bin/sh\necho "OpenTofu v${version}"\n`, { mode: 0o755 });
    const cache = tempDir("cache");
    const result = bash("bash scripts/toolchain/terraform.sh", { PATH: `${path.dirname(fake)}:${bin}`, KUBE_ON_OS_CACHE: cache });
    expect(result.stderr).toContain(`==> OpenTofu ${version}: using ${fake}`);
    expect(fs.readlinkSync(path.join(cache, "tofu", version, "bin", "tofu"))).toBe(fake);
    // Without Go the provider still cannot be built, and says so in one line.
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/kube-on-os toolchain: 'go' is not installed; .* builds terraform-provider-openstack 3\.4\.0\n$/);
  });

  it("installs nothing on a second run", () => {
    // npm test ran the installers already; this run must find every tool complete.
    const result = bash("bash scripts/toolchain.sh", {});
    expect(result.status).toBe(0);
    expect(result.stderr.trim().split("\n")).toEqual([expect.stringMatching(/^==> toolchain ready in \d+ s \(cache: .+\)$/)]);
  });

  it("has Node.js of each line package.json's engines names, each its pinned release, and installs none again", () => {
    // npm test ran node.sh already.
    const again = bash("bash scripts/toolchain/node.sh", {});
    expect({ status: again.status, stderr: again.stderr }).toEqual({ status: 0, stderr: "" });
    const engines = JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).engines.node;
    const lines = [...engines.matchAll(/\^(\d+)\./g)].map(([, line]: string[]) => line);
    const builds = (process.env.KOO_NODES ?? "").split("\n").map((entry) => entry.split(" "));
    expect(builds.map(([version]) => version.split(".")[0])).toEqual(lines);
    for (const [version, node] of builds) expect(spawnSync(node, ["--version"], { encoding: "utf8" }).stdout.trim()).toBe(`v${version}`);
  });

  it("points tofu at the offline mirror unless the user has a CLI configuration of their own", () => {
    const source = "source scripts/toolchain/env.sh && echo $TF_CLI_CONFIG_FILE";
    const own = path.join(tempDir("rc"), "my.tfrc");
    fs.writeFileSync(own, "");
    expect(bash(source, { TF_CLI_CONFIG_FILE: own }).stdout.trim()).toBe(own);
    const ours = bash(source, { TF_CLI_CONFIG_FILE: "/nonexistent/.terraformrc" }).stdout.trim();
    expect(ours).toMatch(/tofu\.rc$/);
    expect(fs.readFileSync(ours, "utf8")).toMatch(/filesystem_mirror \{\s+path = ".+provider-mirror"\s+\}/);
    expect(fs.readFileSync(ours, "utf8")).not.toContain("direct");
  });
});
