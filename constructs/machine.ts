import { Fn, ITerraformIterator, TerraformCount, TerraformLocal, TerraformResourceLifecycle, Token } from "cdktf";
import { Construct } from "constructs";
import { ComputeInstanceV2, ComputeInstanceV2Config } from "../.gen/providers/openstack/compute-instance-v2";
import { DataOpenstackImagesImageV2 } from "../.gen/providers/openstack/data-openstack-images-image-v2";
import { NetworkingFloatingipAssociateV2 } from "../.gen/providers/openstack/networking-floatingip-associate-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { NetworkingSecgroupV2 } from "../.gen/providers/openstack/networking-secgroup-v2";
import { UUID_PATTERN } from "../config/rules";
import { MovedToFirstInstance, splat } from "./cdktf-workarounds";
import { CloudInitRole, renderCloudInit } from "./cloud-init";
import { ClusterLayout } from "./cluster-layout";
import { FloatingIp, floatingIp } from "./floating-ips";
import { Network } from "./networking";

/**
 * What a server is built from, which it keeps for life: its image, its boot volume, the keypair
 * and the cloud-init Nova hands it at first boot (user_data on a config drive). Each is ForceNew
 * in the provider, so a change would replace the machine, and a change made for all of them (a
 * newer image of the name, a new default, an edited cloud-init template in a new version of
 * kube-on-os) would replace every machine in one plan: all the dqlite voters and the Salt master
 * at once. Cloud-init runs once; a machine's later life belongs to Salt, which every apply runs.
 * New values reach new machines (a scale-up) and replaced ones (`-replace`), never a running
 * one (docs/provisioning.md, "Upgrading a running cluster").
 */
export const BUILT_ONCE: TerraformResourceLifecycle = {
  ignoreChanges: ["image_id", "image_name", "block_device", "user_data", "config_drive", "key_pair"],
};

/**
 * A Kubernetes node keeps its flavor too. A new flavor is no ForceNew change: the provider resizes
 * the server in place, and Nova's resize stops and moves it. A plan would resize every node of the
 * flavor at once, undrained, the three dqlite voters together (the cluster down meanwhile). A new
 * flavor reaches nodes the way a new image does, by replacement, one node at a time (npm run roll);
 * the plan names the nodes built otherwise (constructs/kube-node-builds.ts). The bastion and the
 * Salt master, alone in their roles, still resize in place.
 */
export const NODE_BUILT_ONCE: TerraformResourceLifecycle = {
  ignoreChanges: [...(BUILT_ONCE.ignoreChanges as string[]), "flavor_name", "flavor_id"],
};

export interface ImageLookupProps {
  /** The image's name in Glance (a token, or `${each.value}` for a for_each lookup). */
  readonly name: string;
  /** One lookup per index, or none at count 0. @default one */
  readonly count?: TerraformCount;
  /** One lookup per name. @default one */
  readonly forEach?: ITerraformIterator;
}

/**
 * Looks an image up in Glance by name at plan time: the most recent image of that name, and a
 * failed plan when none has it. Machines take an image ID; `base_image` and a pool's `image` are
 * an ID, used as is, or a name, looked up here (`isImageId`).
 */
export function imageLookup(scope: Construct, id: string, props: ImageLookupProps): DataOpenstackImagesImageV2 {
  return new DataOpenstackImagesImageV2(scope, id, { ...props, mostRecent: true });
}

/** Whether `image`, a Terraform expression for an image ID or name, is an ID (a lower-case UUID), as HCL. */
export function isImageId(image: string): string {
  return `can(regex("${UUID_PATTERN}", ${image}))`;
}

export interface BaseImageProps {
  /** base_image: an image ID, or a name. */
  readonly image: string;
}

/** The Glance image ID of base_image: an ID as is, or a name looked up by the data source `id` (count 0 for an ID). */
export function baseImageId(scope: Construct, id: string, props: BaseImageProps): string {
  const { image } = props;
  // Fn, not isImageId's text: the token would follow the pattern's `}` (constructs/cdktf-workarounds.ts).
  const isId = new TerraformLocal(scope, "base_image_is_id", Fn.can(Fn.regex(UUID_PATTERN, image))).asBoolean;
  const lookup = imageLookup(scope, id, { count: TerraformCount.of(Token.asNumber(Fn.conditional(isId, 0, 1))), name: image });
  return Token.asString(Fn.conditional(isId, image, Fn.one(splat(lookup, "id"))));
}

/** A machine's boot disk: the image on the hypervisor's disk, or a Cinder volume made from it. */
export interface BootVolume {
  /** GiB; 0 for no volume (a token: a variable). */
  readonly size: number;
  /** Cinder volume type; "" for the cloud's default. */
  readonly type: string;
}

/**
 * Gives `instance` a boot volume when `volume.size` is above 0: one `block_device` made from the
 * image and deleted with the instance; none at size 0, so the image boots from the hypervisor's
 * disk. A dynamic block, since the size is known at plan time only; written as an override
 * because cdktf's dynamic blocks iterate as `each`, which a for_each resource already uses.
 */
export function bootFromVolume(instance: ComputeInstanceV2, imageId: string, volume: BootVolume): void {
  const size = Token.asString(volume.size);
  instance.addOverride("dynamic.block_device", {
    for_each: `\${${size} > 0 ? [${size}] : []}`,
    iterator: "boot_volume",
    content: {
      uuid: imageId,
      source_type: "image",
      destination_type: "volume",
      boot_index: 0,
      volume_size: "${boot_volume.value}",
      volume_type: `\${${volume.type} == "" ? null : ${volume.type}}`,
      delete_on_termination: true,
    },
  });
}

/** What every machine construct needs besides its own role. */
export interface MachineProps {
  readonly network: Network;
  /** Glance image every machine boots from. */
  readonly imageId: string;
  /** Names and addresses of every machine. */
  readonly layout: ClusterLayout;
  /** Nova keypair for the deploy user. @default - none: access comes from cloud-init and Salt */
  readonly keyPair?: string;
  /** What every machine's cloud-init needs to know about the deployment. */
  readonly bootstrap: BootstrapSettings;
}

/** Deployment-wide values for the cloud-init of every role. Strings may be tokens. */
export interface BootstrapSettings {
  readonly dnsNameservers: string[];
  readonly saltMasterIp: string;
  readonly saltMasterFqdn: string;
  /** cloud-init chpasswd `users`, as a Terraform list expression (empty: root keeps no password). */
  readonly rootPasswordUsers: string;
  readonly privateCidr: string;
}

/**
 * The Salt release every machine installs from the Salt Project's packages; the same as the
 * toolchain's (scripts/toolchain/requirements.txt), so the states are tested with what runs.
 */
export const SALT_VERSION = "3007.15";
/**
 * Interface names on Ubuntu's cloud images, 24.04 as 20.04: Nova attaches the public port first.
 * The images name NICs by systemd's predictable scheme (since xenial: ubuntu-devel, 2016-04-20,
 * "Predictable Network Interface Names in Cloud Images", which gives ens3 as the example). A
 * virtio NIC on QEMU's default i440fx machine sits in a PCI hotplug slot, so it is named
 * `ens<slot>` (ID_NET_NAME_SLOT, systemd.net-naming-scheme(7)); libvirt gives the two NICs the
 * first free slots, 3 and 4, after the bridge (0), the PIIX3 (1) and the video card (2). Not seen
 * on a 24.04 guest here (no Ubuntu image can be had offline). A flavor or image with the q35
 * machine type puts NICs behind PCIe root ports instead, named `enp<bus>s0`.
 */
export const PUBLIC_INTERFACE = "ens3";
export const PRIVATE_INTERFACE = "ens4";
/**
 * Every instance reads its user_data from a config drive, not from the metadata service: the
 * private network has no router, and with ML2/OVS' default `enable_isolated_metadata = False`
 * its machines would reach 169.254.169.254 only through the bastion's NAT, so a worker that
 * booted before the bastion would find no user_data. A config drive is there at first boot.
 */
export const CONFIG_DRIVE = true;

/**
 * A dual-homed host takes DHCP routes and DNS only from its public interface, so its default
 * route stays on the public network; the private network is reached through the on-link route.
 */
export const DUAL_HOMED_NETPLAN = [
  "network:",
  "  version: 2",
  "  ethernets:",
  `    ${PRIVATE_INTERFACE}:`,
  "      dhcp4: true",
  "      dhcp4-overrides:",
  "        use-routes: false",
  "        use-dns: false",
  "",
].join("\n");

export interface HostIdentity {
  readonly hostname: string;
  readonly fqdn: string;
  readonly privateIp: string;
  readonly dualHomed: boolean;
  /**
   * Cinder volume the machine's cloud-init prepares (the Salt master's). It is found by its id,
   * which Nova gives the disk as its serial: the device name Nova reports is only a guess, and a
   * flavor with an ephemeral disk or swap moves the volume past /dev/vdb. @default none
   */
  readonly volumeId?: string;
}

/** A machine's user_data: the role's template filled with its identity and the deployment's values. */
function userDataFor(role: CloudInitRole, host: HostIdentity, bootstrap: BootstrapSettings): string {
  const env: Record<string, string> = {
    KOO_ROLE: role,
    KOO_SALT_VERSION: SALT_VERSION,
    KOO_SALT_MASTER: bootstrap.saltMasterIp,
    KOO_PRIVATE_CIDR: bootstrap.privateCidr,
    KOO_PUBLIC_INTERFACE: PUBLIC_INTERFACE,
    ...(host.volumeId === undefined ? {} : { KOO_SALT_VOLUME_ID: host.volumeId }),
  };
  return renderCloudInit(role, {
    hostname: host.hostname,
    fqdn: host.fqdn,
    saltMasterIp: bootstrap.saltMasterIp,
    resolvConf: `${Fn.join("\n", Fn.formatlist("nameserver %s", [bootstrap.dnsNameservers]))}\n`,
    etcHosts: `127.0.0.1 localhost\n${host.privateIp} ${host.fqdn} ${host.hostname}\n${bootstrap.saltMasterIp} ${bootstrap.saltMasterFqdn} salt\n`,
    bootstrapEnv: Object.entries(env)
      .map(([key, value]) => `${key}=${value}\n`)
      .join(""),
    rootPasswordUsers: bootstrap.rootPasswordUsers,
    netplan: host.dualHomed ? DUAL_HOMED_NETPLAN : undefined,
  });
}

/** What one server is built from, but for its ports and placement. Strings may be tokens. */
export interface InstanceRecipe {
  /** Its cloud-init template. */
  readonly role: CloudInitRole;
  /** Its names and address; its FQDN names the server too. */
  readonly host: HostIdentity;
  readonly imageId: string;
  readonly flavor: string;
  /** Whether the server keeps its flavor for life (NODE_BUILT_ONCE): the Kubernetes nodes'. @default false */
  readonly flavorKept?: boolean;
  /** @default - no keypair */
  readonly keyPair?: string;
  readonly bootstrap: BootstrapSettings;
}

/**
 * The settings every server shares, one recipe for the five kinds (bastion, Salt master,
 * Kubernetes master, the default pool's and the pools' workers): named by its FQDN, built once
 * from its image, keypair and cloud-init (BUILT_ONCE; a Kubernetes node its flavor too,
 * NODE_BUILT_ONCE), which it reads from a config drive
 * (CONFIG_DRIVE). The caller adds the ports, and the server group and zone where there are any.
 */
export function instanceConfig(recipe: InstanceRecipe) {
  return {
    name: recipe.host.fqdn,
    imageId: recipe.imageId,
    flavorName: recipe.flavor,
    keyPair: recipe.keyPair,
    userData: userDataFor(recipe.role, recipe.host, recipe.bootstrap),
    configDrive: CONFIG_DRIVE,
    lifecycle: recipe.flavorKept ? NODE_BUILT_ONCE : BUILT_ONCE,
  } satisfies Partial<ComputeInstanceV2Config>;
}

export interface FixedPortOptions {
  /** The machine's FQDN: the port is named `<fqdn>-<side>`. */
  readonly fqdn: string;
  /** The side of the network the port is on: its network and subnet. */
  readonly side: "public" | "private";
  readonly network: Network;
  readonly address: string;
  readonly securityGroups: NetworkingSecgroupV2[];
  /** More groups, by ID (a token list): the role's (Network.roleGroupIds). @default none */
  readonly roleGroupIds?: string[];
  /** Other addresses the port may send from (routed or pod traffic). @default none */
  readonly allowedAddressPairs?: string[];
  /** One port per index when the port belongs to a counted resource. */
  readonly count?: TerraformCount;
}

/** A fixed port's name: `<fqdn>-<side>`, known at plan, before the port exists. */
export function portName(fqdn: string, side: FixedPortOptions["side"]): string {
  return `${fqdn}-${side}`;
}

/** The IDs of the stack's `groups` for a port, and the role's groups when there are any. */
export function withRoleGroups(groups: NetworkingSecgroupV2[], roleGroupIds: string[] | undefined): string[] {
  const ids = groups.map((group) => group.id);
  return roleGroupIds === undefined ? ids : Token.asList(Fn.concat([ids, roleGroupIds]));
}

/** A port with one fixed address: machines never take a DHCP address, so addresses are stable. */
export function fixedPort(scope: Construct, id: string, options: FixedPortOptions): NetworkingPortV2 {
  const { network } = options;
  const [networkId, subnetId] =
    options.side === "public" ? [network.publicNetworkId, network.publicSubnetId] : [network.privateNetworkId, network.privateSubnetId];
  return new NetworkingPortV2(scope, id, {
    count: options.count,
    name: portName(options.fqdn, options.side),
    networkId,
    adminStateUp: true,
    fixedIp: [{ subnetId, ipAddress: options.address }],
    securityGroupIds: withRoleGroups(options.securityGroups, options.roleGroupIds),
    allowedAddressPairs: (options.allowedAddressPairs ?? []).map((ipAddress) => ({ ipAddress })),
  });
}

/** A floating IP and its association with a port. */
export interface AssociatedFloatingIp extends FloatingIp {
  /** Done once the address reaches the port: whatever connects to the address waits for it. */
  readonly association: NetworkingFloatingipAssociateV2;
}

export interface FloatingIpForProps {
  /** Where the floating IP comes from (its external network), and what it waits for. */
  readonly network: Network;
  /** The public port it is associated with: a fixedPort. */
  readonly port: NetworkingPortV2;
  /** The machine's FQDN, which names its public port (portName): the one port that may hold a given floating IP. */
  readonly fqdn: string;
  /** The variable that may give one, and its value (floating-ips.ts): "" allocates one. */
  readonly given: { readonly variable: string; readonly address: string };
}

/**
 * A machine's floating IP (floating-ips.ts: allocated, or the project's own by address),
 * associated with its public port. The association waits for the router interface: Neutron
 * refuses a floating IP for a subnet the router cannot reach. The allocated one had no count
 * before a floating IP could be given: moved to its instance 0, a running cluster keeps it.
 */
export function floatingIpFor(scope: Construct, id: string, props: FloatingIpForProps): AssociatedFloatingIp {
  const { network, port, given, fqdn } = props;
  const fip = floatingIp(scope, id, {
    network,
    variable: given.variable,
    given: given.address,
    owner: { portName: portName(fqdn, "public") },
  });
  new MovedToFirstInstance(fip.allocated);
  const association = new NetworkingFloatingipAssociateV2(scope, `${id}Association`, {
    floatingIp: fip.address,
    portId: port.id,
    dependsOn: network.floatingIpDependencies,
  });
  return { ...fip, association };
}
