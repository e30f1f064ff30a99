import { DataResource, Fn, IResolvable, ITerraformDependable, ITerraformIterator, TerraformCount, TerraformIterator, Token } from "cdktf";
import { Construct } from "constructs";
import { Bastion } from "../bastion";
import { addressOf, atCountIndex } from "../cdktf-workarounds";
import { ClusterLayout } from "../cluster-layout";
import { KubeNodePool } from "../kube-node-pool";
import { WorkerPools } from "../worker-pools";
import { SaltMaster } from "../salt-master";
import { CONNECTION_TIMEOUT, REMOTE_BIN } from "./ssh";

export interface NodeMembershipProps {
  readonly bastion: Bastion;
  readonly saltMaster: SaltMaster;
  /** The workers, one record each: the default pool's (KubeNodePool) or the node pools' (WorkerPools). */
  readonly workers: KubeNodePool | WorkerPools;
  /** The master that forgets them. */
  readonly layout: ClusterLayout;
  readonly user: string;
  readonly bastionHostKey?: string;
  readonly saltMasterHostKey?: string;
  /** Whether the records exist at all (a bool token, from run_provisioners). */
  readonly enabled: boolean | IResolvable;
  /** What creates the records: they are destroyed before it re-runs on a scale-down. */
  readonly after: ITerraformDependable[];
}

/**
 * One record per worker (of the default pool or of the node pools) whose destroy-time provisioner removes the node from the microk8s
 * cluster (and its key from Salt) before Terraform deletes the machine.
 *
 * Its Terraform address is a contract: a record destroyed by a rename would remove a healthy
 * worker from the cluster (__tests__ pin every address of the default stack).
 *
 * It stays a terraform_data: its destroy-time provisioner forgets a worker from the cluster, so
 * the record must never be replaced while its worker lives, yet what it stores must stay current
 * (a new host key in ssh_host_keys, a new bastion address), or a later scale-down would log in
 * with stale details and leave the departed node in the cluster. terraform_data updates `input`
 * in place. A null_resource can only store data in `triggers`, and replaces itself on any change
 * of them, running remove-node.sh against a healthy worker; with `ignore_changes = [triggers]` it
 * would not, but would then keep the details of the day it was created. Neither is safe, so this
 * one record stays built in.
 */
export function nodeMembership(scope: Construct, id: string, props: NodeMembershipProps): DataResource {
  const { iteration, worker } = perWorker(props.workers, props.layout, props.enabled);
  // Destroy-time provisioners may only read `self`, so the record keeps its connection in input.
  const membership = new DataResource(scope, id, {
    ...iteration,
    input: {
      node_id: worker("name"),
      address: worker("access_ip_v4"),
      master_id: props.layout.kubeMaster.fqdn,
      ...connectionInput(props),
    },
    // Created after the orchestration, so on a scale-down it is destroyed (the node leaves)
    // before the orchestration re-runs, and before its machine is deleted.
    dependsOn: props.after,
  });
  onDestroy(membership, `sudo bash ${REMOTE_BIN}/remove-node.sh \${self.input.master_id} \${self.input.node_id} \${self.input.address}`);
  return membership;
}

/** A record per worker of the default pool (by count) or of the node pools (by host name), as their machines are. */
export function perWorker(
  workers: KubeNodePool | WorkerPools,
  layout: ClusterLayout,
  enabled: boolean | IResolvable,
): { iteration: { count?: TerraformCount; forEach?: ITerraformIterator }; worker: (attribute: string) => string } {
  if (workers instanceof KubeNodePool) {
    return {
      iteration: { count: TerraformCount.of(Token.asNumber(Fn.conditional(enabled, layout.workerCount, 0))) },
      worker: (attribute) => atCountIndex(workers.workers, attribute),
    };
  }
  return {
    iteration: { forEach: TerraformIterator.fromMap(Token.asAnyMap(Fn.conditional(enabled, layout.poolNodesByHost, {}))) },
    worker: (attribute) => `\${${addressOf(workers.workers)}[each.key].${attribute}}`,
  };
}

/** What a destroy-time provisioner reads of its connection from `self.input` (onDestroy). */
export function connectionInput(
  props: Pick<NodeMembershipProps, "bastion" | "saltMaster" | "user" | "bastionHostKey" | "saltMasterHostKey">,
) {
  return {
    user: props.user,
    host: props.saltMaster.privateIp,
    host_key: props.saltMasterHostKey ?? null,
    bastion_host: props.bastion.publicIp,
    bastion_host_key: props.bastionHostKey ?? null,
  };
}

/**
 * Runs `command` on the Salt master, through the bastion, when `record` is destroyed, with the
 * connection its input keeps (connectionInput). cdktf's RemoteExecProvisioner has no
 * `when`/`on_failure`. A failure must not block destroying a broken cluster, so it continues
 * (and says so in the log).
 */
export function onDestroy(record: DataResource, command: string): void {
  record.addOverride("provisioner", [
    {
      "remote-exec": {
        when: "destroy",
        on_failure: "continue",
        inline: ["set -eu", command],
        connection: {
          type: "ssh",
          host: "${self.input.host}",
          user: "${self.input.user}",
          agent: true,
          host_key: "${self.input.host_key}",
          bastion_host: "${self.input.bastion_host}",
          bastion_user: "${self.input.user}",
          bastion_host_key: "${self.input.bastion_host_key}",
          timeout: CONNECTION_TIMEOUT,
        },
      },
    },
  ]);
}
