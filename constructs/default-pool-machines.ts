import { TerraformCount, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { CONTROL_PLANE_SIZE } from "../facts/cluster-size";
import { addressOf, hclNumber, hclString } from "./cdktf-workarounds";
import { BootVolume, imageLookup, isImageId } from "./machine";

/**
 * The control plane's own machine settings, the control_plane_* variables: each null (unset)
 * takes the default pool's. Tokens.
 */
export interface ControlPlaneSettings {
  readonly flavor: string | null;
  /** An image ID or name, looked up as base_image is. */
  readonly image: string | null;
  readonly bootVolumeSize: number | null;
  readonly bootVolumeType: string | null;
}

/** What a node is built from, which it keeps for life (NODE_BUILT_ONCE, constructs/machine.ts). Tokens. */
export interface NodeMachine {
  readonly flavor: string;
  readonly imageId: string;
  readonly bootVolume: BootVolume;
}

export interface DefaultPoolMachinesProps extends NodeMachine {
  /** @default - the default pool's flavor, image and boot volume */
  readonly controlPlane?: ControlPlaneSettings;
  /** The default pool's workers (a token): its nodes but the master. */
  readonly workerCount: number;
}

/** What the default pool's nodes are built from. */
export interface DefaultPoolMachines {
  /** The control plane's machine: its settings, each unset one the default pool's. */
  readonly controlPlane: NodeMachine;
  /** The same as one local: { flavor, image_id, volume_size, volume_type }. */
  readonly controlPlaneLocal: TerraformLocal;
  /** Each worker's, by index, in one local: the first ones are the control plane's, the others the pool's. */
  readonly workers: TerraformLocal;
}

/**
 * The default pool's machines: the control plane (the master and the first workers) from the
 * control_plane_* settings, the other workers from the pool's own. In `scope`, the KubeNodePool.
 */
export function defaultPoolMachines(scope: Construct, props: DefaultPoolMachinesProps): DefaultPoolMachines {
  // The control plane's settings, and the default pool's that an unset one takes, as locals:
  // the expressions below are literal HCL over them, so no token follows a literal `}` (the
  // image ID pattern's; constructs/cdktf-workarounds.ts).
  const cp = props.controlPlane ?? { flavor: null, image: null, bootVolumeSize: null, bootVolumeType: null };
  const given = addressOf(
    new TerraformLocal(scope, "control_plane_settings", {
      flavor: cp.flavor,
      image: cp.image,
      volume_size: cp.bootVolumeSize,
      volume_type: cp.bootVolumeType,
    }),
  );
  const defaults = new TerraformLocal(scope, "default_pool_machine", {
    flavor: props.flavor,
    image_id: props.imageId,
    volume_size: props.bootVolume.size,
    volume_type: props.bootVolume.type,
  });
  // An image name is looked up once, as base_image is (constructs/machine.ts); an ID is used as is.
  const cpImageIsId = isImageId(`${given}.image`);
  const cpImage = imageLookup(scope, "ControlPlaneImage", {
    count: TerraformCount.of(hclNumber(scope, `${given}.image == null ? 0 : ${cpImageIsId} ? 0 : 1`)),
    name: hclString(scope, `${given}.image`),
  });
  const otherwise = (attribute: string) => `${given}.${attribute} == null ? ${addressOf(defaults)}.${attribute} : ${given}.${attribute}`;
  const cpMachine = new TerraformLocal(
    scope,
    "control_plane_machine",
    `\${{ flavor = ${otherwise("flavor")}, ` +
      `image_id = ${given}.image == null ? ${addressOf(defaults)}.image_id : ${cpImageIsId} ? ${given}.image : one(${addressOf(cpImage)}[*].id), ` +
      `volume_size = ${otherwise("volume_size")}, volume_type = ${otherwise("volume_type")} }}`,
  );
  const cpRef = addressOf(cpMachine);
  const controlPlane: NodeMachine = {
    flavor: hclString(scope, `${cpRef}.flavor`),
    imageId: hclString(scope, `${cpRef}.image_id`),
    bootVolume: { size: hclNumber(scope, `${cpRef}.volume_size`), type: hclString(scope, `${cpRef}.volume_type`) },
  };
  // The control plane is the master and the first workers (ClusterLayout.controlPlane).
  const workers = new TerraformLocal(
    scope,
    "kube_worker_machines",
    `\${[for n in range(${Token.asString(props.workerCount)}) : n < ${CONTROL_PLANE_SIZE - 1} ? ${cpRef} : ${addressOf(defaults)}]}`,
  );
  return { controlPlane, controlPlaneLocal: cpMachine, workers };
}
