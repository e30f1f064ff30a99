/**
 * The deployment rehearsal (issue 15): the synthesized stack applied with real OpenTofu against
 * the OpenStack API double, whose servers the rehearsal's cloud (cloud.ts) boots as hosts with
 * real cloud-init, sshd and Salt on a Debian root. The provisioning chain runs unchanged through
 * the bastion, logging in with an ssh-agent as a user's laptop does. Needs root and namespaces.
 */
import { ChildProcess, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { NOBLE_IMAGE, OpenStackDouble, startOpenStackDouble, WIKI_IMAGE } from "../openstack/server";
import { StateServer, startStateServer } from "../http-state/server";
import { startSshAgent } from "../ssh-agent";
import { Cloud, routable } from "./cloud";
import { saltRepository, StandIn } from "./salt-repository";

export interface RehearsalOptions {
  /** The Debian root; @default process.env.KOO_DEBIAN_ROOT + "/root" */
  readonly base?: string;
  /** Told each host's name once it boots. @default - nothing is told */
  readonly onBoot?: (name: string) => void;
}

export interface Rehearsal {
  readonly double: OpenStackDouble;
  readonly state: StateServer;
  readonly cloud: Cloud;
  readonly dir: string;
  /** SSH_AUTH_SOCK and the public key the deployment installs (TF_VAR_deploy_ssh_public_key). */
  readonly agentEnv: { SSH_AUTH_SOCK: string };
  readonly publicKey: string;
  readonly externalCidr: string;
  /** The Salt Project's repository, as the hosts reach it (salt-repository.ts). */
  readonly saltRepository: StandIn;
  close(): Promise<void>;
}

/** True where the rehearsal can run: root, namespaces, and the Debian root the toolchain built. */
export function rehearsalAvailable(): { ok: boolean; reason: string } {
  if (process.env.KOO_SKIP_NAMESPACE_TESTS === "1") return { ok: false, reason: "KOO_SKIP_NAMESPACE_TESTS=1" };
  if (process.getuid?.() !== 0) return { ok: false, reason: "not root" };
  const base = process.env.KOO_DEBIAN_ROOT ?? "";
  if (base === "" || !fs.existsSync(path.join(base, ".complete")))
    return { ok: false, reason: "no Debian root (scripts/toolchain/debian-root.sh)" };
  return { ok: true, reason: "" };
}

export async function startRehearsal(options: RehearsalOptions = {}): Promise<Rehearsal> {
  const base = options.base ?? path.join(process.env.KOO_DEBIAN_ROOT ?? "", "root");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kube-on-os-rehearsal-"));
  // RFC 2544's benchmarking range: never on the internet, and a /24 of its own for each process
  // (the first free one from its pid's: two rehearsals may run at once, in two jest workers).
  const externalCidr = Array.from({ length: 256 }, (_, i) => `198.18.${(process.pid + i) % 256}.0/24`).find(routable);
  if (!externalCidr) throw new Error("rehearsal: every /24 of 198.18.0.0/16 overlaps a route of this machine");
  const processes: ChildProcess[] = [];
  const closers: (() => Promise<void> | void)[] = [];
  const close = async () => {
    for (const closer of closers.reverse()) {
      try {
        await closer();
      } catch (error) {
        console.error(`rehearsal: cleanup: ${(error as Error).message}`);
      }
    }
    for (const child of processes) child.kill("SIGTERM");
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    // The default base_image is a name, "Ubuntu 24.04", which the plan looks up in Glance (earlier
    // versions' default was the wiki's image id); every server boots the Debian root whatever its image.
    const double = await startOpenStackDouble({
      externalNetwork: { name: "vlan1066", cidr: externalCidr },
      images: [NOBLE_IMAGE, WIKI_IMAGE],
    });
    closers.push(() => double.close());
    // The rehearsal's cloud holds whatever the configuration asks for: a cloud's quotas are its
    // plan's to check (docs/quotas.md), this machine's memory the rehearsal's (tools/rehearsal/memory.ts).
    for (const quotas of [double.nova.quotas, double.cinder.quotas, double.neutron.quotas] as Record<string, number>[]) {
      for (const name of Object.keys(quotas)) quotas[name] = -1;
    }
    const state = await startStateServer({ username: "gitlab-ci-token", password: "rehearsal" });
    closers.push(() => state.close());

    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "kube-on-os-rehearsal", "-f", path.join(dir, "deploy")]);
    const agentSocket = path.join(dir, "agent.sock");
    processes.push(await startSshAgent(agentSocket, [path.join(dir, "deploy")]));

    const repository = saltRepository(path.join(dir, "salt-repository"), base);
    const cloud = new Cloud({
      double,
      base,
      dir: path.join(dir, "cloud"),
      externalCidr,
      defaultUser: "ubuntu",
      // Ubuntu's images have snapd; the rehearsal's snap and microk8s are fakes.
      imageInstallers: [path.join(__dirname, "fake-microk8s", "install.sh")],
      standIns: [repository],
      onBoot: options.onBoot,
    });
    closers.push(() => cloud.close());
    cloud.start();
    return {
      double,
      state,
      cloud,
      dir,
      agentEnv: { SSH_AUTH_SOCK: agentSocket },
      publicKey: fs.readFileSync(path.join(dir, "deploy.pub"), "utf8").trim(),
      externalCidr,
      saltRepository: repository,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
