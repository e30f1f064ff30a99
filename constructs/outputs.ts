import { Fn, TerraformOutput } from "cdktf";
import { Construct } from "constructs";
import { ApiLoadBalancer } from "./api-load-balancer";
import { Bastion } from "./bastion";
import { addressOf, hclOf } from "./cdktf-workarounds";
import { ClusterLayout } from "./cluster-layout";
import { KubeNodePool } from "./kube-node-pool";
import { Network } from "./networking";
import { Quotas } from "./quotas";
import { SaltMaster } from "./salt-master";
import { WorkerPools } from "./worker-pools";

export interface StackOutputsProps {
  readonly layout: ClusterLayout;
  readonly network: Network;
  readonly bastion: Bastion;
  readonly saltMaster: SaltMaster;
  readonly kubeNodes: KubeNodePool;
  readonly workerPools: WorkerPools;
  readonly apiLoadBalancer: ApiLoadBalancer;
  readonly quotas: Quotas;
  /** The login user on every machine. */
  readonly user: string;
  /** The data of the pillar Terraform writes (saltPillar()). */
  readonly pillarData: unknown;
}

/** What `tofu output` shows: ids, addresses, how to log in, and the minion ids. */
export function stackOutputs(scope: Construct, props: StackOutputsProps): void {
  const { layout, network, bastion, saltMaster, kubeNodes, user } = props;
  const outputs: [string, string, string][] = [
    ["external_network_id", network.externalNetwork.id, "ID of the external network the router uplinks to."],
    [
      "router_id",
      network.routerId,
      "ID of the router the public subnet is attached to, created or router_id's; null with an existing public_network_id.",
    ],
    ["public_network_id", network.publicNetworkId, "ID of the public network (bastion, Kubernetes master), created or public_network_id."],
    ["public_subnet_id", network.publicSubnetId, "ID of the public subnet, created or public_network_id's with public_network_cidr."],
    ["private_network_id", network.privateNetworkId, "ID of the private network (every machine)."],
    ["private_subnet_id", network.privateSubnetId, "ID of the private subnet, whose gateway is the bastion."],
    ["bastion_floating_ip", bastion.publicIp, "The bastion's floating IP: the SSH jump host to every machine."],
    ["master_floating_ip", kubeNodes.masterPublicIp, "The Kubernetes master's floating IP (API on 16443, ingress)."],
    [
      "api_address",
      apiAddress(props),
      "Where the Kubernetes API answers (port 16443): the API load balancer's floating IP, or the master's without one.",
    ],
    ["salt_volume_id", saltMaster.volume.id, "ID of the Salt master's persistent volume; it survives re-creating the instance."],
  ];
  for (const [name, value, description] of outputs) {
    // router_id and public_network_id are variables too: a construct id each, one name to Terraform.
    const taken = scope.node.tryFindChild(name) !== undefined;
    const output = new TerraformOutput(scope, taken ? `${name}_output` : name, { value, description });
    if (taken) output.overrideLogicalId(name);
  }
  new TerraformOutput(scope, "quota_needs", {
    description: "What this deployment counts against the project's Nova, Cinder and Neutron quotas (docs/quotas.md).",
    value: props.quotas.needsLocal.expression,
  });
  // Lists and format strings are built with format()/formatlist() rather than interpolated
  // TypeScript strings, which cannot be a function's argument (constructs/cdktf-workarounds.ts).
  const jump = `${user}@${bastion.publicIp}`;
  const jumpHost = Fn.format("%s@%s", [user, bastion.publicIp]);
  new TerraformOutput(scope, "ssh_config", {
    description: "An ~/.ssh/config snippet that reaches every machine by its FQDN, through the bastion.",
    value: Fn.join("", [
      `Host ${layout.bastion.fqdn}\n  HostName ${bastion.publicIp}\n  User ${user}\n`,
      Fn.join(
        "",
        Fn.formatlist("Host %s\n  HostName %s\n  User %s\n  ProxyJump %s\n", [
          layout.privateFqdns,
          layout.privateIps,
          user,
          layout.bastion.fqdn,
        ]),
      ),
    ]),
  });
  new TerraformOutput(scope, "ssh_commands", {
    description: "The ssh command that logs in to each machine, by FQDN (= minion id); private hosts through the bastion.",
    value: Fn.zipmap(
      Fn.concat([[layout.bastion.fqdn], layout.privateFqdns]),
      Fn.concat([[Fn.format("ssh %s", [jumpHost])], Fn.formatlist("ssh -J %s %s@%s", [jumpHost, user, layout.privateIps])]),
    ),
  });
  new TerraformOutput(scope, "kubeconfig_command", {
    description: "Fetches the cluster's kubeconfig through the bastion, pointed at api_address.",
    value:
      `ssh -J ${jump} ${user}@${layout.kubeMaster.privateIp} sudo microk8s config` +
      ` | sed 's#server: https://[^:]*:#server: https://${apiAddress(props)}:#' > kubeconfig`,
  });
  // What npm run roll replaces, one at a time (scripts/roll.js): each Kubernetes node's machine by
  // its Terraform address. Literal for-expressions (constructs/cdktf-workarounds.ts).
  const { master, workers } = props.kubeNodes;
  new TerraformOutput(scope, "kube_node_machines", {
    description:
      "Each Kubernetes node (the master, the default pool's workers, the pools'): its host name, its minion id, whether it is a dqlite voter, and its machine's Terraform address (npm run roll).",
    value:
      `\${[for node in concat(` +
      `[{ host = ${hclOf(layout.kubeMaster.host)}, fqdn = ${hclOf(layout.kubeMaster.fqdn)}, address = ${JSON.stringify(addressOf(master))} }], ` +
      `[for i, host in local.kube_worker_hosts : { host = host, fqdn = local.kube_worker_fqdns[i], address = format("${addressOf(workers)}[%d]", i) }], ` +
      `[for pool_node in local.kube_pool_nodes : { host = pool_node.host, fqdn = pool_node.fqdn, address = format("${addressOf(props.workerPools.workers)}[%q]", pool_node.host) }]` +
      `) : merge(node, { voter = contains(local.kube_control_plane, node.fqdn) })]}`,
  });
  new TerraformOutput(scope, "minion_ids", {
    description: "Salt minion ids (= FQDNs) of every machine: Salt master, bastion, Kubernetes master, workers.",
    value: layout.minionIds,
  });
  // Read from a plan by scripts/preview.js: where to reach the Salt master (the prior state's
  // value) and the candidate pillar (the planned one, whose unknown values the plan marks).
  new TerraformOutput(scope, "salt_preview", {
    description:
      "What npm run diff's Salt preview reads (docs/salt.md): the bastion's floating IP, the Salt master's minion id and address, the login user, and the pillar Terraform writes.",
    value: {
      bastion: bastion.publicIp,
      salt_master: { id: layout.saltMaster.fqdn, address: saltMaster.privateIp },
      user,
      pillar: props.pillarData,
    },
  });
}

/** The API load balancer's floating IP, or the master's without a load balancer. */
export function apiAddress(props: Pick<StackOutputsProps, "apiLoadBalancer" | "kubeNodes">): string {
  return Fn.coalesce([props.apiLoadBalancer.address, props.kubeNodes.masterPublicIp]);
}
