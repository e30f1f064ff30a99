import { Fn, Op, TerraformCount, Token } from "cdktf";
import { Construct } from "constructs";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { ComputeServergroupV2 } from "../.gen/providers/openstack/compute-servergroup-v2";
import { NetworkingFloatingipV2 } from "../.gen/providers/openstack/networking-floatingip-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { SERVER_GROUP_POLICIES } from "../config/parameters";
import { HOSTS } from "./cluster-layout";
import { atCountIndex, CONFIG_DRIVE, fixedPort, floatingIpFor, fqdn, MachineProps, splat, userDataFor } from "./machine";

export interface KubeNodePoolProps extends MachineProps {
  /** Nodes including the master (node 0); a token keeps TF_VAR_num_kube_nodes working at plan time. */
  readonly nodeCount: number;
  /** @default KubeNodePool.DEFAULT_FLAVOR */
  readonly flavor?: string;
  /** Pod and service networks: node ports may send from these. */
  readonly podCidr: string;
  readonly serviceCidr: string;
  /** Nova server group policy, or "none" for no group. @default KubeNodePool.DEFAULT_SERVER_GROUP_POLICY */
  readonly serverGroupPolicy?: string;
}

/**
 * The microk8s nodes: a master on both networks with a floating IP (API and ingress), and
 * `nodeCount - 1` private workers at consecutive addresses, all counted by Terraform.
 */
export class KubeNodePool extends Construct {
  static readonly DEFAULT_FLAVOR = "m1.large";
  static readonly DEFAULT_SERVER_GROUP_POLICY = "soft-anti-affinity";
  static readonly MASTER_HOST = "k8s-master";
  static readonly WORKER_HOST = "k8s-worker";

  /** The highest private host number the pool's fixed addresses take for `nodeCount` nodes. */
  static lastPrivateHost(nodeCount: number): number {
    return Token.asNumber(Fn.max([HOSTS.kubeMasterPrivate, Op.add(HOSTS.firstWorkerPrivate, Op.sub(nodeCount, 2))]));
  }

  readonly master: ComputeInstanceV2;
  readonly masterPublicPort: NetworkingPortV2;
  readonly masterPrivatePort: NetworkingPortV2;
  readonly masterFloatingIp: NetworkingFloatingipV2;
  readonly workers: ComputeInstanceV2;
  readonly workerPorts: NetworkingPortV2;
  readonly serverGroup: ComputeServergroupV2;
  readonly masterFqdn: string;
  /** The workers' FQDNs (a Terraform list). */
  readonly workerFqdns: string[];

  constructor(scope: Construct, id: string, props: KubeNodePoolProps) {
    super(scope, id);
    const flavor = props.flavor ?? KubeNodePool.DEFAULT_FLAVOR;
    const policy = props.serverGroupPolicy ?? KubeNodePool.DEFAULT_SERVER_GROUP_POLICY;
    if (!Token.isUnresolved(props.nodeCount) && !(Number.isInteger(props.nodeCount) && props.nodeCount >= 1)) {
      throw new Error(`KubeNodePool: nodeCount must be a whole number of at least 1 (got ${props.nodeCount})`);
    }
    if (!Token.isUnresolved(policy) && !(SERVER_GROUP_POLICIES as readonly string[]).includes(policy)) {
      throw new Error(`KubeNodePool: serverGroupPolicy must be one of ${SERVER_GROUP_POLICIES.join(", ")} (got "${policy}")`);
    }
    const { network, domain } = props;
    const podTraffic = [props.podCidr, props.serviceCidr];
    this.masterFqdn = fqdn(KubeNodePool.MASTER_HOST, domain);

    // count = 0 when the policy is "none"; one() then gives the instances a null group.
    this.serverGroup = new ComputeServergroupV2(this, "ServerGroup", {
      count: TerraformCount.of(Token.asNumber(Fn.conditional(Op.eq(policy, "none"), 0, 1))),
      name: `${domain}-k8s-nodes`,
      policies: [policy],
    });
    const schedulerHints = [{ group: Token.asString(Fn.one(splat(this.serverGroup, "id"))) }];

    this.masterPublicPort = fixedPort(this, "MasterPublicPort", {
      name: `${this.masterFqdn}-public`,
      network: network.publicNetwork,
      subnet: network.publicSubnet,
      address: network.publicAddress(HOSTS.kubeMasterPublic),
      securityGroups: [network.securityGroups.kubeApi],
    });
    this.masterPrivatePort = fixedPort(this, "MasterPrivatePort", {
      name: `${this.masterFqdn}-private`,
      network: network.privateNetwork,
      subnet: network.privateSubnet,
      address: network.privateAddress(HOSTS.kubeMasterPrivate),
      securityGroups: [network.securityGroups.internal],
      allowedAddressPairs: podTraffic,
    });
    this.master = new ComputeInstanceV2(this, "Master", {
      name: this.masterFqdn,
      imageId: props.imageId,
      configDrive: CONFIG_DRIVE,
      flavorName: flavor,
      keyPair: props.keyPair,
      userData: userDataFor(
        "salt-minion",
        {
          hostname: KubeNodePool.MASTER_HOST,
          fqdn: this.masterFqdn,
          privateIp: network.privateAddress(HOSTS.kubeMasterPrivate),
          dualHomed: true,
        },
        props.bootstrap,
      ),
      // Public first: the default route stays on the public network.
      network: [{ port: this.masterPublicPort.id }, { port: this.masterPrivatePort.id }],
      schedulerHints,
    });
    this.masterFloatingIp = floatingIpFor(this, "MasterFloatingIp", network, this.masterPublicPort).floatingIp;

    const workerCount = Token.asNumber(Op.sub(props.nodeCount, 1));
    const portCount = TerraformCount.of(workerCount);
    const workerName = `${KubeNodePool.WORKER_HOST}-\${count.index}.${domain}`;
    this.workerPorts = fixedPort(this, "WorkerPort", {
      count: portCount,
      name: `${workerName}-private`,
      network: network.privateNetwork,
      subnet: network.privateSubnet,
      address: network.privateAddress(Token.asNumber(Op.add(HOSTS.firstWorkerPrivate, portCount.index))),
      securityGroups: [network.securityGroups.internal],
      allowedAddressPairs: podTraffic,
    });
    const instanceCount = TerraformCount.of(workerCount);
    const workerHost = `${KubeNodePool.WORKER_HOST}-${Fn.tostring(instanceCount.index)}`;
    this.workers = new ComputeInstanceV2(this, "Worker", {
      count: instanceCount,
      userData: userDataFor(
        "salt-minion",
        {
          hostname: workerHost,
          fqdn: fqdn(workerHost, domain),
          privateIp: network.privateAddress(Token.asNumber(Op.add(HOSTS.firstWorkerPrivate, instanceCount.index))),
          dualHomed: false,
        },
        props.bootstrap,
      ),
      name: workerName,
      imageId: props.imageId,
      configDrive: CONFIG_DRIVE,
      flavorName: flavor,
      keyPair: props.keyPair,
      network: [{ port: atCountIndex(this.workerPorts, "id") }],
      schedulerHints,
    });
    this.workerFqdns = splat(this.workers, "name");
  }
}
