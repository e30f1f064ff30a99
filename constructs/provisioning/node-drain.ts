import { DataResource, Fn, Op, TerraformCount, Token } from "cdktf";
import { Construct } from "constructs";
import { KubeNodePool } from "../kube-node-pool";
import { WorkerPools } from "../worker-pools";
import { connectionInput, NodeMembershipProps, onDestroy, perWorker } from "./node-membership";
import { REMOTE_BIN } from "./ssh";

/** NodeMembership's, less `workers`: the drain records cover every Kubernetes node. */
export interface NodeDrainProps extends Omit<NodeMembershipProps, "workers"> {
  readonly kubeNodes: KubeNodePool;
  readonly workerPools: WorkerPools;
  /**
   * The workers' NodeMembership records: a scale-down destroys a worker's drain record first, so
   * the node is drained before it leaves, not while it leaves.
   */
  readonly memberships: { readonly workers: DataResource; readonly poolWorkers: DataResource };
}

export interface NodeDrains {
  readonly master: DataResource;
  readonly workers: DataResource;
  readonly poolWorkers: DataResource;
}

/**
 * One record per Kubernetes node whose machine's replacement replaces it too (`triggers_replace`
 * is the machine's id): its destroy-time provisioner drains the node (provisioners/drain-node.sh)
 * before Terraform deletes the old machine, and orch.deploy uncordons it once the new machine is
 * Ready (microk8s.uncordon_replaced). So `-replace` of a node, and `npm run roll`, which replaces
 * every node one at a time, move its workloads first. A control-plane node drains: the master,
 * and for the master itself the next voter (the master's API goes with its machine).
 *
 * A record created for a running cluster (an upgrade to this version) does nothing: only its
 * destruction runs a script. A scale-down destroys a worker's record before its NodeMembership
 * record, which then finds the node drained and removes it; a destroy of the stack drains every
 * node on the way out.
 *
 * The records' Terraform addresses are a contract like NodeMembership's (__tests__ pin them).
 */
export function nodeDrains(scope: Construct, props: NodeDrainProps): NodeDrains {
  const { layout, kubeNodes } = props;
  const command = `sudo bash ${REMOTE_BIN}/drain-node.sh \${self.input.operator_id} \${self.input.node_id} \${self.input.address}`;
  const record = (
    id: string,
    iteration: object,
    input: { node_id: string; address: string; operator_id: string },
    machineId: string,
    membership?: DataResource,
  ) => {
    const drain = new DataResource(scope, id, {
      ...iteration,
      input: { ...input, ...connectionInput(props) },
      triggersReplace: { machine: machineId },
      dependsOn: membership === undefined ? props.after : [...props.after, membership],
    });
    onDestroy(drain, command);
    return drain;
  };
  // The master's drainer is the next voter; a master alone drains itself.
  const nextVoter = Token.asString(
    Fn.conditional(Op.gt(Fn.lengthOf(layout.controlPlane), 1), Fn.element(layout.controlPlane, 1), layout.kubeMaster.fqdn),
  );
  const master = record(
    "MasterDrain",
    { count: TerraformCount.of(Token.asNumber(Fn.conditional(props.enabled, 1, 0))) },
    { node_id: kubeNodes.master.name, address: layout.kubeMaster.privateIp, operator_id: nextVoter },
    kubeNodes.master.id,
  );
  const [workers, poolWorkers] = (["NodeDrain", "PoolNodeDrain"] as const).map((id) => {
    const defaultPool = id === "NodeDrain";
    const { iteration, worker } = perWorker(defaultPool ? kubeNodes : props.workerPools, layout, props.enabled);
    return record(
      id,
      iteration,
      { node_id: worker("name"), address: worker("access_ip_v4"), operator_id: layout.kubeMaster.fqdn },
      worker("id"),
      defaultPool ? props.memberships.workers : props.memberships.poolWorkers,
    );
  });
  return { master, workers, poolWorkers };
}
