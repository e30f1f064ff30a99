import { DataResource, Fn, Op, TerraformResource } from "cdktf";
import { Construct } from "constructs";
import { CONTROL_PLANE_SIZE } from "../facts/cluster-size";
import { ClusterLayout } from "./cluster-layout";

/**
 * Refuses at plan time to take an HA control plane below its 3 dqlite voters.
 *
 * The voters are the first CONTROL_PLANE_SIZE Kubernetes nodes, so only a num_kube_nodes below 3
 * removes one (k8s-worker-1, then k8s-worker-0); dqlite with 2 voters loses its quorum with either
 * (go-dqlite app/roles.go keeps 3 voters where it can). Whether that is a scale-down or a small
 * cluster from the start is in no variable, only in the state: the returned record keeps the
 * number of voters the cluster was first applied with (ignore_changes: Terraform plans it with
 * its stored value), and a precondition on `guarded` fails the plan when that was 3 and the
 * planned voters are fewer. A cluster first applied with fewer than 3 nodes and grown later is
 * not covered here; its removal script refuses instead, before it touches the cluster
 * (docs/provisioning.md).
 */
export interface ControlPlaneFloorProps {
  /** The control plane, whose voters it counts. */
  readonly layout: ClusterLayout;
  /** The resource whose precondition refuses the plan: the Kubernetes master's instance. */
  readonly guarded: TerraformResource;
}

export function controlPlaneFloor(scope: Construct, id: string, props: ControlPlaneFloorProps): DataResource {
  const { layout, guarded } = props;
  const voters = Fn.lengthOf(layout.controlPlane);
  const floor = new DataResource(scope, id, {
    input: { voters },
    lifecycle: { ignoreChanges: ["input"] },
  });
  const recorded = floor.getNumberAttribute("input.voters");
  guarded.addOverride("lifecycle.precondition", [
    {
      // A cluster that never had 3 voters has no HA to keep: its spare may go (1 voter + 1 spare).
      condition: Op.or(Op.gte(voters, CONTROL_PLANE_SIZE), Op.lt(recorded, CONTROL_PLANE_SIZE)),
      error_message:
        `num_kube_nodes: the cluster's control plane has ${CONTROL_PLANE_SIZE} dqlite voters (the first ` +
        `${CONTROL_PLANE_SIZE} nodes) and must keep them; num_kube_nodes must stay at least ${CONTROL_PLANE_SIZE}.`,
    },
  ]);
  return floor;
}
