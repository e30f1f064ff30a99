import { Fn, IResolvable, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { DEFAULT_POOL, POOL_LABEL } from "../../config/node-pools";
import { ApiLoadBalancer } from "../api-load-balancer";
import { ClusterLayout, inMachineOrder } from "../cluster-layout";
import { KubeNodePool } from "../kube-node-pool";
import { WorkerPools } from "../worker-pools";

export interface SaltPillarProps {
  /** Names, addresses and the control plane. */
  readonly layout: ClusterLayout;
  /** The users variable: a list of { username, ssh_public_key }. */
  readonly users: unknown;
  readonly publicCidr: string;
  readonly privateCidr: string;
  readonly nameservers: string[];
  readonly masterFloatingIp: string;
  /** The API load balancer, whose addresses the API certificate must name too. */
  readonly apiLoadBalancer: ApiLoadBalancer;
  readonly podCidr: string;
  readonly serviceCidr: string;
  /** The snap channel microk8s is installed from (microk8s:channel; Salt's default is the same). */
  readonly microk8sChannel: string;
  /** The default pool's nodes (num_kube_nodes), and their labels and taints. */
  readonly defaultPool: { readonly nodeCount: number; readonly labels: unknown; readonly taints: unknown };
  /** The node_pools variable, whose entries give their workers' labels and taints. */
  readonly pools: unknown;
  /** The Kubernetes nodes of the default pool and of the pools, whose Nova server ids are the nodes' providerIDs. */
  readonly kubeNodes: KubeNodePool;
  readonly workerPools: WorkerPools;
  /**
   * Whether a cloud controller manager runs (cloud_integration, a bool token): the kubelets then
   * run with --cloud-provider=external (microk8s:external_cloud_provider). @default false
   */
  readonly externalCloudProvider?: boolean | IResolvable;
}

/**
 * The first line of /srv/pillar/_from_terraform.sls. Without it Salt renders the file as Jinja
 * before YAML, so a user's key comment `{{ 7*7 }}` would arrive as 49, or run Salt functions on
 * the master. YAML rather than JSON: yamlencode() double-quotes every string, which Salt's
 * YAML 1.1 loader reads back unchanged (`yes`, `off`, `null`, `~`, `0x1F`, `1e3`, `2001-01-01`
 * stay strings), and the file keeps the example's format.
 */
export const PILLAR_RENDERER = "#!yaml";

/** The pillar Terraform writes: the file's content, and the data it holds (an object token). */
export interface SaltPillar {
  readonly content: string;
  readonly data: unknown;
}

/**
 * /srv/pillar/_from_terraform.sls: the data-only renderer line, then a yamlencode() of Terraform
 * values, following pillar/_from_terraform.sls.example. Node ids and addresses are the layout's, which the machines
 * take theirs from too: a plan shows the node list before any machine exists. Only the master's
 * floating IP waits for its allocation.
 */
export function saltPillar(scope: Construct, props: SaltPillarProps): SaltPillar {
  const { layout } = props;
  // Each node's labels (its pool's name always among them) and taints, in kube_node_ids' order.
  // Literal for-expressions, where a token may open them, never follow a literal `}`
  // (constructs/cdktf-workarounds.ts), so no token comes after an object literal here.
  const { nodeCount, labels, taints } = props.defaultPool;
  const perNode = (name: string, defaultPool: string, pools: string) => {
    const forDefault = new TerraformLocal(
      scope,
      `kube_default_pool_${name}`,
      `\${[for i in range(${Token.asString(nodeCount)}) : ${defaultPool}]}`,
    );
    const forPools = new TerraformLocal(scope, `kube_pool_${name}`, `\${[for node in local.kube_pool_nodes : ${pools}]}`);
    return new TerraformLocal(
      scope,
      `kube_${name}_by_node`,
      Fn.concat([Token.asList(forDefault.expression), Token.asList(forPools.expression)]),
    );
  };
  const poolsRef = Token.asString(props.pools);
  perNode(
    "labels",
    `merge(${Token.asString(labels)}, { "${POOL_LABEL}" = "${DEFAULT_POOL}" })`,
    `merge(${poolsRef}[node.pool].labels, { "${POOL_LABEL}" = node.pool })`,
  );
  perNode("taints", Token.asString(taints), `${poolsRef}[node.pool].taints`);
  const apiAddresses = new TerraformLocal(
    scope,
    "kube_api_addresses",
    `\${[for address in [${Token.asString(props.masterFloatingIp)}, ${Token.asString(props.apiLoadBalancer.address)}, ${Token.asString(props.apiLoadBalancer.vipAddress)}] : address if address != null]}`,
  );
  // In kube_node_ids' order.
  new TerraformLocal(
    scope,
    "kube_instance_ids",
    inMachineOrder({ kubeMaster: props.kubeNodes.master.id }, props.kubeNodes.workerIds, props.workerPools.workerIds),
  );
  const nodes = new TerraformLocal(
    scope,
    "kube_nodes",
    `\${[for i, id in ${layout.locals.kubeNodeIds.expression} : ` +
      `{ id = id, address = local.kube_node_addresses[i], labels = local.kube_labels_by_node[i], taints = local.kube_taints_by_node[i], ` +
      `instance_id = local.kube_instance_ids[i] }]}`,
  );
  // The data on its own too, for the salt_preview output: a plan shows it, unknown values apart.
  const data = new TerraformLocal(scope, "salt_pillar_data", {
    users: props.users,
    mine_functions: { "network.ip_addrs": { cidr: props.privateCidr } },
    network: { public_cidr: props.publicCidr, private_cidr: props.privateCidr },
    core: { nameservers: props.nameservers },
    microk8s: {
      master: layout.kubeMaster.fqdn,
      allowed_csr_ip: props.masterFloatingIp,
      // Every address clients reach the API at, for its certificate: the master's floating IP,
      // and the load balancer's floating IP and VIP when there is one.
      api_addresses: apiAddresses.expression,
      pod_cidr: props.podCidr,
      service_cidr: props.serviceCidr,
      channel: props.microk8sChannel,
      external_cloud_provider: props.externalCloudProvider ?? false,
      nodes: nodes.expression,
      control_plane: layout.controlPlane,
    },
  });
  const pillar = new TerraformLocal(scope, "salt_pillar", Fn.join("\n", [PILLAR_RENDERER, Fn.yamlencode(data.expression)]));
  return { content: pillar.asString, data: data.expression };
}
