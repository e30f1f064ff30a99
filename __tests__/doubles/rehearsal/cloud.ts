/**
 * The rehearsal's cloud: it turns what the OpenStack double holds into running hosts, the way a
 * hypervisor and Neutron would. It watches the double after every request and reconciles:
 *
 * - every Neutron network with ports becomes a bridge in a namespace of the cloud's own; a router
 *   interface is the router's address on that bridge; the cloud namespace has no default route,
 *   so nothing a host sends leaves this machine (hosts have no internet);
 * - every ACTIVE server becomes a Host (host.ts) in a network namespace of its own, with one
 *   interface per port (ens3, ens4, … in Nova's order, the port's MAC and fixed address), and the
 *   default route through the first port's subnet gateway (what Neutron's DHCP hands out; the
 *   dual-homed hosts' netplan takes no routes from the second port);
 * - a floating IP is routed to its port's fixed address and local on that host, and reached from
 *   this machine through a veth into the cloud namespace;
 * - a Cinder volume attached to a server is a sparse file on a loop device, a block device in the
 *   host's /dev under the kernel's name, with the /dev/disk/by-id link its serial gives it, and
 *   under the virtio name Nova reported (/dev/vdb), which a hypervisor's kernel would give it;
 * - the subnets' DNS servers are the cloud's own resolver (dns.py), which knows no name but the
 *   stand-ins' for the internet's services (the Salt Project's repository, salt-repository.ts),
 *   served from addresses in the cloud's namespace under a CA every host's root trusts;
 * - a deleted server is powered off and its overlay thrown away.
 *
 * The host then boots: its user_data and the keypair's public key go into a NoCloud seed and the
 * image's boot script (image/usr/local/lib/koo-rehearsal/boot) runs Debian's cloud-init.
 */
import { ChildProcess, execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import ipaddr from "ipaddr.js";
import type { OpenStackDouble } from "../openstack/server";
import { Host } from "./host";
import type { StandIn } from "./salt-repository";

const IMAGE = path.join(__dirname, "image");
/** Where every host finds the project's servers (publishServers). */
const NOVA_SERVERS = "/var/lib/koo-rehearsal/nova-servers.json";

export interface CloudOptions {
  readonly double: OpenStackDouble;
  /** The Debian root (scripts/toolchain/debian-root.sh) every host is an overlay on. */
  readonly base: string;
  /** Scratch space: overlays, volumes, logs. */
  readonly dir: string;
  /** The external network's CIDR: floating IPs, routed from this machine into the cloud. */
  readonly externalCidr: string;
  /** The image's default user (an Ubuntu image's is `ubuntu`), who gets the keypair's key. */
  readonly defaultUser: string;
  /** Programs that add to every host's image before it boots, called with its overlay's upper directory. */
  readonly imageInstallers?: string[];
  /** Services of the internet the hosts reach, served in the cloud's namespace. */
  readonly standIns?: StandIn[];
  /** Told each host's name once it boots (npm run rehearse's progress). @default - nothing is told */
  readonly onBoot?: (name: string) => void;
}

interface Attachment {
  readonly volumeId: string;
  readonly device: string;
  readonly loop: string;
}

interface RunningHost {
  readonly serverId: string;
  readonly host: Host;
  readonly netns: string;
  readonly index: number;
  readonly interfaces: { name: string; portId: string; address: string }[];
  readonly attachments: Attachment[];
  readonly floating: Set<string>;
}

function run(command: string, args: string[]): string {
  return execFileSync(command, args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
}

/** The image's own files, as laid into every host: __tests__/doubles/rehearsal/image. */
function imageFiles(dir = IMAGE, prefix = "/"): Record<string, { content: Buffer; mode: number }> {
  const files: Record<string, { content: Buffer; mode: number }> = {};
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const source = path.join(dir, entry.name);
    const target = path.posix.join(prefix, entry.name);
    if (entry.isDirectory()) Object.assign(files, imageFiles(source, target));
    else files[target] = { content: fs.readFileSync(source), mode: fs.statSync(source).mode & 0o777 };
  }
  return files;
}

export class Cloud {
  readonly netns: string;
  /** Names this process's namespaces and links (koo<pid>up fits IFNAMSIZ at any pid); removeStale reads it back. */
  private readonly tag = `${process.pid}`;
  private readonly hosts = new Map<string, RunningHost>();
  private readonly bridges = new Map<string, string>();
  private readonly routerAddresses = new Set<string>();
  private readonly gone = new Set<string>();
  /** The server listing last written into each host (publishServers), by server id. */
  private readonly published = new Map<string, string>();
  private readonly resolvers = new Set<string>();
  private dns?: ChildProcess;
  private readonly services: ChildProcess[] = [];
  private queue: Promise<void> = Promise.resolve();
  private pending = false;
  private count = 0;
  private closed = false;
  /** Errors of the reconciler; a test checks it stays empty. */
  readonly errors: string[] = [];
  private readonly uplink: { hostSide: string; cloudSide: string; hostAddress: string; cloudAddress: string };

  constructor(readonly options: CloudOptions) {
    this.netns = `koo${this.tag}cloud`;
    const link = `169.254.${(process.pid >> 6) % 256}.${(process.pid % 64) * 4}`;
    const [hostAddress, cloudAddress] = [1, 2].map((n) => link.replace(/\d+$/, (last) => String(Number(last) + n)));
    this.uplink = { hostSide: `koo${this.tag}up`, cloudSide: "uplink", hostAddress, cloudAddress };
  }

  /** Creates the cloud namespace and its uplink, and starts following the double. */
  start(): void {
    const { hostSide, cloudSide, hostAddress, cloudAddress } = this.uplink;
    removeStale();
    fs.mkdirSync(this.options.dir, { recursive: true });
    fs.writeFileSync(path.join(this.options.dir, OWNER), `${process.pid}\n`);
    run("ip", ["netns", "add", this.netns]);
    this.inCloud("ip", "link", "set", "lo", "up");
    this.inCloud("sysctl", "-qw", "net.ipv4.ip_forward=1");
    run("ip", ["link", "add", hostSide, "type", "veth", "peer", "name", cloudSide, "netns", this.netns]);
    run("ip", ["addr", "add", `${hostAddress}/30`, "dev", hostSide]);
    run("ip", ["link", "set", hostSide, "up"]);
    this.inCloud("ip", "addr", "add", `${cloudAddress}/30`, "dev", cloudSide);
    this.inCloud("ip", "link", "set", cloudSide, "up");
    run("ip", ["route", "add", this.options.externalCidr, "via", cloudAddress]);
    const standIns = this.options.standIns ?? [];
    for (const standIn of standIns) {
      this.inCloud("ip", "addr", "add", `${standIn.address}/32`, "dev", "lo");
      this.services.push(spawn("ip", ["netns", "exec", this.netns, ...standIn.command], { stdio: "ignore" }));
    }
    const names = standIns.map((standIn) => `${standIn.name}=${standIn.address}`);
    this.dns = spawn("ip", ["netns", "exec", this.netns, "python3", path.join(__dirname, "dns.py"), ...names], { stdio: "ignore" });
    this.options.double.observe(() => this.schedule());
  }

  private inCloud(...args: string[]): string {
    return run("ip", ["netns", "exec", this.netns, ...args]);
  }

  /** The hosts up now, by server name. */
  host(name: string): Host {
    for (const running of this.hosts.values()) if (running.host.name === name) return running.host;
    throw new Error(`rehearsal: no host named ${name}`);
  }

  hostNames(): string[] {
    return [...this.hosts.values()].map((running) => running.host.name).sort();
  }

  /** Waits until every change the double has seen so far is reconciled. */
  async settled(): Promise<void> {
    for (;;) {
      const queue = this.queue;
      await queue;
      if (queue === this.queue && !this.pending) return;
    }
  }

  private schedule(): void {
    if (this.pending || this.closed) return;
    this.pending = true;
    this.queue = this.queue.then(async () => {
      this.pending = false;
      try {
        await this.reconcile();
      } catch (error) {
        this.errors.push(String((error as Error).stack ?? error));
      }
    });
  }

  private async reconcile(): Promise<void> {
    const { double } = this.options;
    // The subnets' DNS servers are the cloud's resolver (dns.py), local in its namespace.
    for (const subnet of double.neutron.subnets.all()) {
      for (const resolver of (subnet.dns_nameservers as string[] | undefined) ?? []) {
        if (this.resolvers.has(resolver)) continue;
        this.inCloud("ip", "addr", "add", `${resolver}/32`, "dev", "lo");
        this.resolvers.add(resolver);
      }
    }
    const servers = double.nova.servers.all();
    for (const [serverId, running] of [...this.hosts]) {
      if (!servers.some((server) => server.id === serverId && server.status === "ACTIVE")) await this.powerOff(running);
    }
    for (const server of servers) {
      if (server.status !== "ACTIVE" || this.hosts.has(String(server.id)) || this.gone.has(String(server.id))) continue;
      await this.boot(server);
    }
    for (const running of this.hosts.values()) {
      this.attachVolumes(running);
      this.routeFloatingIps(running);
    }
    this.publishServers(servers);
  }

  /**
   * The project's servers as Nova's `GET /servers/detail` lists them (the fields the cloud
   * controller manager reads: id, name, status, zone, flavor name), written into every host at
   * NOVA_SERVERS whenever they change: the hosts cannot reach the double, and the fake microk8s
   * models the controller manager against this listing (microk8s_core/cloud_controller.py).
   */
  private publishServers(servers: Record<string, unknown>[]): void {
    // A server being deleted is still listed (task_state deleting) until its host has removed it.
    const listing = JSON.stringify(
      servers.map((server) => ({
        id: server.id,
        name: server.name,
        status: server.status,
        "OS-EXT-AZ:availability_zone": server.availability_zone,
        flavor: { original_name: (server.flavor as { name?: string } | undefined)?.name },
      })),
    );
    for (const running of this.hosts.values()) {
      if (this.published.get(running.serverId) === listing || !running.host.pid) continue;
      const target = `/proc/${running.host.pid}/root${NOVA_SERVERS}`;
      try {
        fs.mkdirSync(path.dirname(target), { recursive: true });
        fs.writeFileSync(`${target}.new`, listing);
        fs.renameSync(`${target}.new`, target);
        this.published.set(running.serverId, listing);
      } catch (error) {
        // A host powering off: nothing to list to.
        if ((error as NodeJS.ErrnoException).code !== "ENOENT") throw error;
      }
    }
  }

  /** The bridge of a Neutron network in the cloud namespace, with the router's addresses on it. */
  private bridge(networkId: string): string {
    let bridge = this.bridges.get(networkId);
    if (!bridge) {
      bridge = `br${this.bridges.size}`;
      this.inCloud("ip", "link", "add", bridge, "type", "bridge");
      this.inCloud("ip", "link", "set", bridge, "up");
      this.bridges.set(networkId, bridge);
    }
    const { neutron } = this.options.double;
    for (const port of neutron.ports.all()) {
      if (port.network_id !== networkId || port.device_owner !== "network:router_interface") continue;
      for (const fixed of port.fixed_ips as { ip_address: string; subnet_id: string }[]) {
        if (this.routerAddresses.has(fixed.ip_address)) continue;
        const prefix = String(neutron.subnets.get(fixed.subnet_id).cidr).split("/")[1];
        this.inCloud("ip", "addr", "add", `${fixed.ip_address}/${prefix}`, "dev", bridge);
        this.routerAddresses.add(fixed.ip_address);
      }
    }
    return bridge;
  }

  private async boot(server: Record<string, unknown>): Promise<void> {
    const { double } = this.options;
    const index = this.count++;
    const serverId = String(server.id);
    const netns = `koo${this.tag}h${index}`;
    const dir = path.join(this.options.dir, `${index}-${String(server.name)}`);
    fs.mkdirSync(dir, { recursive: true });
    run("ip", ["netns", "add", netns]);
    const inHost = (...args: string[]) => run("ip", ["netns", "exec", netns, ...args]);
    inHost("ip", "link", "set", "lo", "up");
    const interfaces: RunningHost["interfaces"] = [];
    let defaultGateway: string | undefined;
    for (const [n, portId] of (server.ports as string[]).entries()) {
      const port = double.neutron.ports.get(portId);
      const name = `ens${n + 3}`;
      const cloudSide = `h${index}n${n}`;
      run("ip", [
        "link",
        "add",
        name,
        "netns",
        netns,
        "address",
        String(port.mac_address),
        "type",
        "veth",
        "peer",
        "name",
        cloudSide,
        "netns",
        this.netns,
      ]);
      this.inCloud("ip", "link", "set", cloudSide, "master", this.bridge(String(port.network_id)));
      this.inCloud("ip", "link", "set", cloudSide, "up");
      inHost("ip", "link", "set", name, "up");
      const [fixed] = port.fixed_ips as { ip_address: string; subnet_id: string }[];
      const subnet = double.neutron.subnets.get(fixed.subnet_id);
      inHost("ip", "addr", "add", `${fixed.ip_address}/${String(subnet.cidr).split("/")[1]}`, "dev", name);
      if (n === 0 && subnet.gateway_ip) defaultGateway = String(subnet.gateway_ip);
      interfaces.push({ name, portId, address: fixed.ip_address });
    }
    if (defaultGateway) inHost("ip", "route", "add", "default", "via", defaultGateway);

    const keypair = server.key_name ? double.nova.keypairs.find(String(server.key_name)) : undefined;
    const metaData = [
      `instance-id: ${serverId}`,
      `local-hostname: ${String(server.name)}`,
      ...(keypair ? ["public-keys:", `  - ${JSON.stringify(String(keypair.public_key).trim())}`] : []),
      "",
    ].join("\n");
    const userData = server.user_data ? Buffer.from(String(server.user_data), "base64") : Buffer.from("");
    const files = {
      ...imageFiles(),
      ...this.trustedCas(),
      "/etc/cloud/cloud.cfg.d/90-koo-rehearsal.cfg": { content: this.cloudConfig() },
      "/var/lib/cloud/seed/nocloud/meta-data": { content: metaData },
      "/var/lib/cloud/seed/nocloud/user-data": { content: userData },
    };
    const host = new Host({ name: String(server.name), netns, base: this.options.base, dir, files });
    const running: RunningHost = { serverId, host, netns, index, interfaces, attachments: [], floating: new Set() };
    this.hosts.set(serverId, running);
    for (const installer of this.options.imageInstallers ?? []) {
      fs.mkdirSync(host.upper, { recursive: true });
      execFileSync(installer, [host.upper], { stdio: ["ignore", "ignore", "pipe"] });
    }
    await host.start();
    // Volumes attached before the boot are there at boot, as on a hypervisor.
    this.attachVolumes(running);
    host.detach("/usr/local/lib/koo-rehearsal/boot", "/var/log/koo-rehearsal-boot.log");
    this.options.onBoot?.(host.name);
  }

  /**
   * The stand-ins' CAs, trusted as update-ca-certificates would: in the bundle that OpenSSL (curl)
   * and GnuTLS (apt) read, after the root's own.
   */
  private trustedCas(): Record<string, { content: string }> {
    const cas = (this.options.standIns ?? []).map((standIn) => standIn.ca);
    if (cas.length === 0) return {};
    const bundle = fs.readFileSync(path.join(this.options.base, "etc", "ssl", "certs", "ca-certificates.crt"), "utf8");
    return {
      "/usr/local/share/ca-certificates/kube-on-os-rehearsal.crt": { content: cas.join("") },
      "/etc/ssl/certs/ca-certificates.crt": { content: bundle + cas.join("") },
    };
  }

  /** The image's cloud-init settings: the NoCloud seed, and the network left to the cloud. */
  private cloudConfig(): string {
    const user = this.options.defaultUser;
    return [
      "# The rehearsal's image: the seed is NoCloud, and the network is the cloud's (see cloud.ts).",
      "datasource_list: [NoCloud, None]",
      "network: {config: disabled}",
      "system_info:",
      "  default_user:",
      `    name: ${user}`,
      "    lock_passwd: true",
      `    gecos: ${user}`,
      "    groups: [adm, sudo]",
      '    sudo: ["ALL=(ALL) NOPASSWD:ALL"]',
      "    shell: /bin/bash",
      "",
    ].join("\n");
  }

  private attachVolumes(running: RunningHost): void {
    const { double } = this.options;
    const server = double.nova.servers.find(running.serverId);
    if (!server) return;
    for (const attached of server.volumes_attached as { id: string; device: string }[]) {
      if (running.attachments.some((a) => a.volumeId === attached.id)) continue;
      const volume = double.cinder.volumes.get(attached.id);
      const image = path.join(this.options.dir, "volumes", `${attached.id}.img`);
      fs.mkdirSync(path.dirname(image), { recursive: true });
      if (!fs.existsSync(image)) fs.writeFileSync(image, "");
      fs.truncateSync(image, Number(volume.size) * 1024 ** 3);
      const loop = run("losetup", ["--find", "--show", "--partscan", image]).trim();
      const numbers = fs
        .readFileSync(`/sys/class/block/${path.basename(loop)}/dev`, "utf8")
        .trim()
        .replace(":", " ");
      // udev names the node after the kernel's device (loopN here, vdX on a hypervisor), which is
      // what lsblk and blkid print. On libvirt the kernel's name is the one Nova reports when its
      // guess holds (nothing else took the letter): earlier versions' volume script waited for it.
      // Nova's name is only a guess, which today's script rightly ignores (it finds the serial).
      const device = path.basename(loop);
      const virtio = /^\/dev\/(vd[a-z]+)$/.exec(attached.device ?? "")?.[1];
      running.attachments.push({ volumeId: attached.id, device, loop });
      // virtio-blk shows the first 20 characters of the serial Nova gives the disk (the volume id).
      const serial = `virtio-${attached.id.slice(0, 20)}`;
      const script = [
        `[ -b /dev/${device} ] || mknod -m 0660 /dev/${device} b ${numbers}`,
        ...(virtio ? [`[ -b /dev/${virtio} ] || mknod -m 0660 /dev/${virtio} b ${numbers}`] : []),
        `ln -sfn ../../${device} /dev/disk/by-id/${serial}`,
        "mkdir -p /run/koo-rehearsal",
        `echo ${device} ${virtio ?? ""} >> /run/koo-rehearsal/disks`,
      ].join(" && ");
      execFileSync("nsenter", [`--target=${running.host.pid}`, "--mount", "--pid", "--root", "--wd", "sh", "-c", script], {
        stdio: ["ignore", "ignore", "pipe"],
      });
    }
  }

  private routeFloatingIps(running: RunningHost): void {
    const { neutron } = this.options.double;
    const wanted = new Map<string, { fixed: string; iface: string }>();
    for (const fip of neutron.floatingips.all()) {
      const iface = running.interfaces.find((i) => i.portId === fip.port_id);
      if (iface && fip.fixed_ip_address)
        wanted.set(String(fip.floating_ip_address), { fixed: String(fip.fixed_ip_address), iface: iface.name });
    }
    for (const [address, { fixed, iface }] of wanted) {
      if (running.floating.has(address)) continue;
      run("ip", ["netns", "exec", running.netns, "ip", "addr", "add", `${address}/32`, "dev", iface]);
      this.inCloud("ip", "route", "replace", `${address}/32`, "via", fixed);
      running.floating.add(address);
    }
    for (const address of [...running.floating]) {
      if (wanted.has(address)) continue;
      run("ip", ["netns", "exec", running.netns, "ip", "addr", "del", `${address}/32`, "dev", running.interfaces[0].name]);
      this.inCloud("ip", "route", "del", `${address}/32`);
      running.floating.delete(address);
    }
  }

  private async powerOff(running: RunningHost): Promise<void> {
    this.hosts.delete(running.serverId);
    this.gone.add(running.serverId);
    await running.host.stop();
    // Each step on its own: a half-built host is still torn down as far as it goes.
    for (const address of running.floating) bestEffort(() => this.inCloud("ip", "route", "del", `${address}/32`));
    for (const attachment of running.attachments) bestEffort(() => run("losetup", ["--detach", attachment.loop]));
    // Deleting the namespace deletes its veth ends, and their peers on the bridges with them.
    bestEffort(() => run("ip", ["netns", "del", running.netns]));
  }

  /**
   * Memory in use per host, in MiB, by host name: its processes' proportional set sizes
   * (smaps_rollup's Pss), each page shared between processes counted once in all, so that the
   * hosts' figures add up to what they take of this machine.
   */
  async memoryMiB(): Promise<Record<string, number>> {
    const usage: Record<string, number> = {};
    const namespaces = new Map<string, string>();
    for (const running of this.hosts.values()) namespaces.set(fs.readlinkSync(`/proc/${running.host.pid}/ns/pid`), running.host.name);
    for (const entry of fs.readdirSync("/proc")) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        const name = namespaces.get(fs.readlinkSync(`/proc/${entry}/ns/pid`));
        if (!name) continue;
        const pss = /^Pss:\s+(\d+) kB/m.exec(fs.readFileSync(`/proc/${entry}/smaps_rollup`, "utf8"));
        usage[name] = (usage[name] ?? 0) + Number(pss?.[1] ?? 0) / 1024;
      } catch {
        // the process ended meanwhile
      }
    }
    return Object.fromEntries(Object.entries(usage).map(([name, mib]) => [name, Math.round(mib)]));
  }

  /** Powers every host off and removes the cloud. */
  async close(): Promise<void> {
    this.closed = true;
    await this.queue;
    for (const running of [...this.hosts.values()]) await this.powerOff(running);
    // A boot stopped half-way left a namespace no running host holds: a terminal's Ctrl-C reaches
    // the boot's `ip` commands too, which then fail after `ip netns add` (seen once in CI).
    const listed = run("ip", ["netns", "list"])
      .split("\n")
      .map((line) => line.split(" ")[0]);
    for (let index = 0; index < this.count; index++) {
      const netns = `koo${this.tag}h${index}`;
      if (!listed.includes(netns)) continue;
      for (const pid of run("ip", ["netns", "pids", netns]).split(/\s+/).filter(Boolean)) {
        bestEffort(() => process.kill(Number(pid), "SIGKILL"));
      }
      bestEffort(() => run("ip", ["netns", "del", netns]));
    }
    this.dns?.kill("SIGTERM");
    for (const service of this.services) service.kill("SIGTERM");
    bestEffort(() => run("ip", ["link", "del", this.uplink.hostSide]));
    bestEffort(() => run("ip", ["netns", "del", this.netns]));
  }
}

/** The file in a cloud's directory that names the process running it. */
const OWNER = "owner.pid";

function gone(pid: number): boolean {
  return !fs.existsSync(`/proc/${pid}`);
}

/**
 * Removes what rehearsals that crashed (or were killed) left on this machine: their hosts'
 * processes, which outlive them in their namespaces, the namespaces and uplinks named after the
 * dead process, and the loop devices of their volumes. Another live rehearsal's are kept.
 */
export function removeStale(): void {
  for (const line of run("ip", ["netns", "list"]).split("\n")) {
    const name = line.split(" ")[0];
    const match = /^koo(\d+)(cloud|h\d+)$/.exec(name);
    if (!match || !gone(Number(match[1]))) continue;
    for (const pid of run("ip", ["netns", "pids", name]).split(/\s+/).filter(Boolean)) {
      bestEffort(() => process.kill(Number(pid), "SIGKILL"));
    }
    bestEffort(() => run("ip", ["netns", "del", name]));
    bestEffort(() => run("ip", ["link", "del", `koo${match[1]}up`]));
  }
  const loops = JSON.parse(run("losetup", ["--list", "--json", "--output", "NAME,BACK-FILE"]) || "{}").loopdevices ?? [];
  for (const loop of loops as { name: string; "back-file": string | null }[]) {
    const backFile = loop["back-file"] ?? "";
    if (!/\/kube-on-os-rehearsal-[^/]+\/cloud\/volumes\/[^/]+\.img( \(deleted\))?$/.test(backFile)) continue;
    const owner = path.join(path.dirname(path.dirname(backFile.replace(/ \(deleted\)$/, ""))), OWNER);
    const pid = fs.existsSync(owner) ? Number(fs.readFileSync(owner, "utf8")) : NaN;
    if (Number.isInteger(pid) && !gone(pid)) continue;
    bestEffort(() => run("losetup", ["--detach", loop.name]));
  }
}

function bestEffort(step: () => void): void {
  try {
    step();
  } catch {
    // already gone, or never made
  }
}

/** True when `cidr` overlaps none of this machine's routes: traffic to it reaches the cloud. */
export function routable(cidr: string): boolean {
  const routes = JSON.parse(run("ip", ["-j", "-4", "route", "show", "table", "all"])) as { dst: string }[];
  const [net, bits] = ipaddr.IPv4.parseCIDR(cidr);
  return routes.every((route) => {
    if (route.dst === "default" || !/^[0-9.]+(\/\d+)?$/.test(route.dst)) return true;
    const [other, otherBits] = ipaddr.IPv4.parseCIDR(route.dst.includes("/") ? route.dst : `${route.dst}/32`);
    return !net.match(other, Math.min(bits, otherBits));
  });
}
