import { TerraformIterator, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { ComputeServergroupV2 } from "../.gen/providers/openstack/compute-servergroup-v2";
import { DataOpenstackImagesImageV2 } from "../.gen/providers/openstack/data-openstack-images-image-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { VARIABLES } from "../config/parameters";
import { addressOf, eachInstance, hclNumber, hclOf, hclString } from "./cdktf-workarounds";
import { bootFromVolume, imageLookup, instanceConfig, isImageId, MachineProps, withRoleGroups } from "./machine";

export interface WorkerPoolsProps extends MachineProps {
  /**
   * The node_pools variable: pool name → { count, flavor, image, availability_zones,
   * boot_volume_size, boot_volume_type, labels, taints } (config/node-pools.ts, NODE_POOLS_TYPE).
   */
  readonly pools: unknown;
  /** The flavor of a pool without its own. @default VARIABLES.kube_node_flavor.default */
  readonly defaultFlavor?: string;
  /** The image (ID or name) of a pool without its own: base_image. */
  readonly defaultImage: string;
  /** Pod and service networks: node ports may send from these. */
  readonly podCidr: string;
  readonly serviceCidr: string;
  /** Nova server group policy of every pool's group, or "none". @default VARIABLES.kube_server_group_policy.default */
  readonly serverGroupPolicy?: string;
}

/**
 * The node pools' workers: per pool a server group, per worker a private port whose address
 * Neutron picks from the DHCP range (and keeps for the port's life) and an instance in its zone,
 * with its pool's flavor, image and boot volume. Names and zones are the layout's
 * (`kube_pool_nodes`); the resources are keyed by host name, so adding or removing a pool, or
 * workers at a pool's end, touches no other worker.
 *
 * The expressions are literal HCL over fixed local names and addresses: a token may only open
 * them, never follow a literal `}` such as a regular expression's `{8}`
 * (constructs/cdktf-workarounds.ts).
 */
export class WorkerPools extends Construct {
  readonly serverGroups: ComputeServergroupV2;
  readonly ports: NetworkingPortV2;
  readonly workers: ComputeInstanceV2;
  /** The image names the pools look up in Glance (IDs need no lookup). */
  readonly images: DataOpenstackImagesImageV2;
  /**
   * Each pool's settings with the defaults applied, by pool name: { count, flavor, image,
   * volume_size, volume_type, grouped (in a server group) }.
   */
  readonly settings: TerraformLocal;
  /** Each pool's image ID, by pool name: its image, or base_image, looked up when a name. */
  readonly imageIds: TerraformLocal;
  /** The workers' instance ids, in the layout's order (`kube_pool_nodes`). */
  readonly workerIds: string[];

  constructor(scope: Construct, id: string, props: WorkerPoolsProps) {
    super(scope, id);
    const flavor = hclOf(props.defaultFlavor ?? VARIABLES.kube_node_flavor.default);
    const policy = props.serverGroupPolicy ?? VARIABLES.kube_server_group_policy.default;
    const { network, layout } = props;
    const pools = Token.asString(props.pools);

    // Each pool's machine settings, defaults applied: what its workers are built from.
    const settings = new TerraformLocal(
      this,
      "settings",
      `\${{ for name, pool in ${pools} : name => { count = pool.count, flavor = coalesce(pool.flavor, ${flavor}), ` +
        `image = coalesce(pool.image, ${hclOf(props.defaultImage)}), volume_size = pool.boot_volume_size, ` +
        `volume_type = pool.boot_volume_type, grouped = ${hclOf(policy)} != "none" } }}`,
    );
    this.settings = settings;
    const settingsRef = addressOf(settings);
    // An image name is looked up once, as base_image is (constructs/machine.ts); an ID is used as is.
    const imageNames = new TerraformLocal(
      this,
      "image_names",
      `\${toset([for s in values(${settingsRef}) : s.image if !${isImageId("s.image")}])}`,
    );
    this.images = imageLookup(this, "Images", {
      forEach: TerraformIterator.fromList(Token.asList(imageNames.expression)),
      name: "${each.value}",
    });
    const imagesRef = addressOf(this.images);
    const imageIds = (this.imageIds = new TerraformLocal(
      this,
      "image_ids",
      `\${{ for name, s in ${settingsRef} : name => ${isImageId("s.image")} ? s.image : ${imagesRef}[s.image].id }}`,
    ));
    const groupedPools = new TerraformLocal(this, "grouped", `\${{ for name, s in ${settingsRef} : name => s if s.grouped }}`);

    this.serverGroups = new ComputeServergroupV2(this, "ServerGroup", {
      forEach: TerraformIterator.fromMap(Token.asAnyMap(groupedPools.expression)),
      name: `${layout.domain}-k8s-\${each.key}`,
      policies: [policy],
    });
    const groupsRef = addressOf(this.serverGroups);

    const nodes = TerraformIterator.fromMap(Token.asAnyMap(layout.poolNodesByHost));
    this.ports = new NetworkingPortV2(this, "Port", {
      forEach: nodes,
      name: "${each.value.fqdn}-private",
      networkId: network.privateNetworkId,
      adminStateUp: true,
      // No address: Neutron picks one from the DHCP range, and the port keeps it.
      fixedIp: [{ subnetId: network.privateSubnetId }],
      securityGroupIds: withRoleGroups(network.kubeNodePrivateGroups, network.roleGroupIds.worker),
      allowedAddressPairs: [props.podCidr, props.serviceCidr].map((ipAddress) => ({ ipAddress })),
    });
    const portsRef = addressOf(this.ports);
    layout.providePoolAddresses(Token.asList(`\${[for node in local.kube_pool_nodes : ${portsRef}[node.host].all_fixed_ips[0]]}`));

    const pool = (attribute: string) => `${settingsRef}[each.value.pool].${attribute}`;
    // References as tokens, which cdktf unwraps where they nest (user_data, bootFromVolume).
    const expression = (hcl: string) => hclString(this, hcl);
    const imageId = `\${${addressOf(imageIds)}[each.value.pool]}`;
    this.workers = new ComputeInstanceV2(this, "Worker", {
      forEach: nodes,
      ...instanceConfig({
        ...props,
        role: "salt-minion",
        host: {
          hostname: expression("each.value.host"),
          fqdn: expression("each.value.fqdn"),
          privateIp: expression(`${portsRef}[each.key].all_fixed_ips[0]`),
          dualHomed: false,
        },
        imageId,
        flavor: `\${${pool("flavor")}}`,
        flavorKept: true,
      }),
      network: [{ port: `\${${portsRef}[each.key].id}` }],
      schedulerHints: [{ group: `\${try(${groupsRef}[each.value.pool].id, null)}` }],
      availabilityZone: "${each.value.zone}",
    });
    this.workerIds = eachInstance(this, "worker_ids", this.workers, { head: "node in local.kube_pool_nodes", key: "node.host" }, "id");
    bootFromVolume(this.workers, imageId, {
      size: hclNumber(this, pool("volume_size")),
      type: expression(pool("volume_type")),
    });
  }
}
