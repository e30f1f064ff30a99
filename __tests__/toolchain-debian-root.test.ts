/**
 * The Debian root the rehearsal's hosts boot from (scripts/toolchain/debian-root.sh), entered the
 * way a host is: an overlay of its own on the shared base, with mount, UTS and PID namespaces of
 * its own, so nothing it writes or names reaches the base or this machine. Skipped where the
 * toolchain could not build the root (no root user or no mount namespaces). The first piece of
 * the deployment rehearsal (issue 15).
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { SALT_VERSION } from "../constructs/machine";
import YAML from "yaml";

const base = process.env.KOO_DEBIAN_ROOT ?? "";
// Like the L5 suite, skipped where namespaces are not allowed (KOO_SKIP_NAMESPACE_TESTS=1).
const built = base !== "" && fs.existsSync(path.join(base, ".complete")) && process.env.KOO_SKIP_NAMESPACE_TESTS !== "1";

/**
 * Runs `command` in a fresh host: an overlay on the base root holding `files` (path → content),
 * in mount, UTS, PID and network namespaces of its own (no network: hosts have no internet).
 */
function inHost(
  command: string,
  files: Record<string, string> = {},
  hostname = "rehearsal-host",
): { status: number | null; stdout: string; stderr: string; upper: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-host-"));
  const [upper, work, merged] = ["upper", "work", "merged"].map((name) => path.join(dir, name));
  for (const d of [upper, work, merged]) fs.mkdirSync(d);
  for (const [file, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(upper, file)), { recursive: true });
    fs.writeFileSync(path.join(upper, file), content, { mode: 0o755 });
  }
  const script = [
    `mount -t overlay overlay -o lowerdir=${base}/root,upperdir=${upper},workdir=${work} ${merged}`,
    `mount -t proc proc ${merged}/proc`,
    `hostname ${hostname}`,
    `exec chroot ${merged} /bin/sh -c "$1"`,
  ].join("\n");
  const result = spawnSync("unshare", ["--mount", "--uts", "--pid", "--net", "--fork", "bash", "-euc", script, "host", command], {
    encoding: "utf8",
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, upper };
}

(built ? describe : describe.skip)("the rehearsal's Debian root", () => {
  it("runs the pinned Salt, Debian's cloud-init and OpenSSH in an overlay of its own, leaving the base and this machine untouched", () => {
    const ownHostname = os.hostname();
    const host = inHost(
      "salt-call --version; cloud-init --version 2>&1; /usr/sbin/sshd -V 2>&1; hostname; echo host > /etc/kube-on-os-host",
    );
    expect(host.stderr).toBe("");
    expect(host.status).toBe(0);
    expect(host.stdout).toContain(`salt-call ${SALT_VERSION} (Chlorine)`);
    expect(host.stdout).toMatch(/^\/usr\/bin\/cloud-init 22\.4\.2$/m);
    expect(host.stdout).toMatch(/^OpenSSH_9\.2/m);
    expect(host.stdout).toMatch(/^rehearsal-host$/m);
    expect(fs.readFileSync(path.join(host.upper, "etc", "kube-on-os-host"), "utf8")).toBe("host\n");
    expect(fs.existsSync(path.join(base, "root", "etc", "kube-on-os-host"))).toBe(false);
    expect(os.hostname()).toBe(ownHostname);
  });

  it("holds every package the cloud-init and the states install, since hosts have no internet", () => {
    const defaults = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "salt", "core", "defaults.yaml"), "utf8"));
    const corePackages = defaults.core.packages as string[];
    expect(corePackages).toEqual(expect.arrayContaining(["curl", "jq"]));
    const wanted = [...corePackages, "iptables", "fail2ban", "openssh-server", "sudo", "cloud-init"];
    const host = inHost(`dpkg-query -W -f '\${Package} \${db:Status-Status}\\n' ${wanted.join(" ")}`);
    expect(host.status).toBe(0);
    expect(host.stdout.trim().split("\n").sort()).toEqual(wanted.map((p) => `${p} installed`).sort());
  });

  it("lets the cloud-init's Salt install skip its download when the pinned release is there, and only then", () => {
    const script = fs.readFileSync(path.join(__dirname, "..", "templates", "cloud-init", "files", "install-salt.sh"), "utf8");
    const env = (version: string) => `KOO_ROLE=salt-master\nKOO_SALT_VERSION=${version}\n`;
    const pinned = inHost("bash /tmp/install_script.sh", {
      "/tmp/install_script.sh": script,
      "/etc/kube-on-os/bootstrap.env": env(SALT_VERSION),
    });
    expect({ status: pinned.status, stdout: pinned.stdout }).toEqual({
      status: 0,
      stdout: `install-salt: Salt ${SALT_VERSION} is already installed; nothing downloaded\n`,
    });
    // Another release goes on to the download, which a host without internet never finishes.
    const other = inHost("timeout 3 bash /tmp/install_script.sh", {
      "/tmp/install_script.sh": script,
      "/etc/kube-on-os/bootstrap.env": env("3006.9"),
    });
    expect({ status: other.status, stdout: other.stdout }).toEqual({ status: 124, stdout: "" });
  });

  it("is the Debian release whose Python the Salt wheels were built for", () => {
    const host = inHost(". /etc/os-release; echo $VERSION_CODENAME; python3 -c 'import sys; print(sys.version_info[:2])'");
    expect(host.stdout).toBe("bookworm\n(3, 11)\n");
  });
});
