import { TerraformLocal, TerraformStack } from "cdktf";
import { addressOf } from "./cdktf-workarounds";
import { ClusterLayout } from "./cluster-layout";
import { KubeNodePool } from "./kube-node-pool";
import { WorkerPools } from "./worker-pools";

export interface KubeNodeBuildsProps {
  readonly layout: ClusterLayout;
  readonly kubeNodes: KubeNodePool;
  readonly workerPools: WorkerPools;
}

/** The Terraform check that warns about nodes built otherwise. */
const KUBE_NODE_BUILDS_CHECK = "kube_node_builds";

/**
 * The Kubernetes nodes built otherwise than the configuration now says, and how: a node keeps its
 * flavor, image and boot volume for life (NODE_BUILT_ONCE, constructs/machine.ts), so a new value
 * plans no change and reaches new and replaced nodes only. A `check` block makes that visible:
 * every plan warns, naming each node that differs and the `npm run roll` that replaces them one
 * at a time. A warning, not an error: a cluster of mixed machines is sound, and the roll is the
 * user's to start. A machine's planned values are its state's for what it keeps, the
 * configuration's for a new one, which therefore never differs.
 */
export function kubeNodeBuilds(stack: TerraformStack, props: KubeNodeBuildsProps): TerraformLocal {
  const { layout, kubeNodes, workerPools } = props;
  const settings = addressOf(workerPools.settings);
  const poolWorkers = addressOf(workerPools.workers);
  const nodes =
    `concat(` +
    `[{ host = ${JSON.stringify(layout.kubeMaster.host)}, server = ${addressOf(kubeNodes.master)}, want = ${addressOf(kubeNodes.machines.controlPlaneLocal)} }], ` +
    `[for i, w in ${addressOf(kubeNodes.workers)} : { host = local.kube_worker_hosts[i], server = w, want = ${addressOf(kubeNodes.machines.workers)}[i] }], ` +
    `[for n in local.kube_pool_nodes : { host = n.host, server = ${poolWorkers}[n.host], ` +
    `want = { flavor = ${settings}[n.pool].flavor, image_id = ${addressOf(workerPools.imageIds)}[n.pool], volume_size = ${settings}[n.pool].volume_size } }])`;
  const size = "length(node.server.block_device) > 0 ? node.server.block_device[0].volume_size : 0";
  // A server booted from a volume has the provider's placeholder for image_id ("Attempt to boot
  // from volume - no image supplied"); its image is its boot volume's source.
  const image = "length(node.server.block_device) > 0 ? node.server.block_device[0].uuid : node.server.image_id";
  const builds = new TerraformLocal(
    stack,
    "kube_nodes_built_otherwise",
    `\${[for node in [for node in ${nodes} : { host = node.host, differences = compact([` +
      `node.server.flavor_name == node.want.flavor ? "" : format("flavor %s, now %s", node.server.flavor_name, node.want.flavor), ` +
      `(${image}) == node.want.image_id ? "" : format("image %s, now %s", ${image}, node.want.image_id), ` +
      `(${size}) == node.want.volume_size ? "" : format("boot volume %d GiB, now %d", ${size}, node.want.volume_size)` +
      `]) }] : node if length(node.differences) > 0]}`,
  );
  const otherwise = addressOf(builds);
  stack.addOverride(`check.${KUBE_NODE_BUILDS_CHECK}`, {
    assert: [
      {
        condition: `\${length(${otherwise}) == 0}`,
        error_message:
          `Kubernetes nodes built otherwise than now configured keep what they were built with until they are replaced: ` +
          `\${join("; ", [for node in ${otherwise} : format("%s (%s)", node.host, join(", ", node.differences))])}. ` +
          `npm run roll -- --nodes \${join(",", [for node in ${otherwise} : node.host])} replaces them one at a time, each drained first ` +
          `(docs/deploying.md, "Changing what nodes are built from").`,
      },
    ],
  });
  return builds;
}
