import { Token } from "cdktf";
import { Construct } from "constructs";
import { BlockstorageVolumeV3 } from "../.gen/providers/openstack/blockstorage-volume-v3";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { ComputeVolumeAttachV2 } from "../.gen/providers/openstack/compute-volume-attach-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { VARIABLES } from "../config/parameters";
import { fixedPort, instanceConfig, MachineProps } from "./machine";

export interface SaltMasterProps extends MachineProps {
  /** @default VARIABLES.salt_master_flavor.default */
  readonly flavor?: string;
  /** Size of the persistent Salt volume in GiB. @default VARIABLES.salt_volume_size.default */
  readonly volumeSize?: number;
}

/**
 * The Salt master on the private network, with a Cinder volume for /srv/salt and the Salt PKI.
 * The volume is its own resource, attached separately, so that re-creating the instance keeps
 * the minion keys and the state tree.
 */
export class SaltMaster extends Construct {
  readonly instance: ComputeInstanceV2;
  readonly port: NetworkingPortV2;
  readonly volume: BlockstorageVolumeV3;
  readonly volumeAttachment: ComputeVolumeAttachV2;
  readonly privateIp: string;
  readonly fqdn: string;

  constructor(scope: Construct, id: string, props: SaltMasterProps) {
    super(scope, id);
    const flavor = props.flavor ?? VARIABLES.salt_master_flavor.default;
    const volumeSize = props.volumeSize ?? VARIABLES.salt_volume_size.default;
    if (!Token.isUnresolved(volumeSize) && !(Number.isInteger(volumeSize) && volumeSize >= 1)) {
      throw new Error(`SaltMaster: volumeSize must be a whole number of GiB, at least 1 (got ${volumeSize})`);
    }
    const { network } = props;
    const host = props.layout.saltMaster;
    this.fqdn = host.fqdn;
    this.privateIp = host.privateIp;

    this.port = fixedPort(this, "Port", {
      fqdn: this.fqdn,
      side: "private",
      network,
      address: this.privateIp,
      securityGroups: [network.securityGroups.internal, network.securityGroups.saltMaster],
    });
    this.volume = new BlockstorageVolumeV3(this, "Volume", {
      name: `${this.fqdn}-srv`,
      description: "Salt state tree, pillar and PKI; outlives the instance",
      size: volumeSize,
    });
    this.instance = new ComputeInstanceV2(this, "Instance", {
      ...instanceConfig({
        ...props,
        role: "salt-master",
        host: { hostname: host.host, fqdn: this.fqdn, privateIp: this.privateIp, dualHomed: false, volumeId: this.volume.id },
        flavor,
      }),
      network: [{ port: this.port.id }],
    });
    this.volumeAttachment = new ComputeVolumeAttachV2(this, "VolumeAttachment", {
      instanceId: this.instance.id,
      volumeId: this.volume.id,
    });
  }
}
