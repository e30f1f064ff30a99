import { Fn, Op, TerraformCount, Token } from "cdktf";
import { Construct } from "constructs";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { ComputeServergroupV2 } from "../.gen/providers/openstack/compute-servergroup-v2";
import { NetworkingFloatingipV2 } from "../.gen/providers/openstack/networking-floatingip-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { SERVER_GROUP_POLICIES, VARIABLES } from "../config/parameters";
import { CONTROL_PLANE_SIZE } from "../facts/cluster-size";
import { addressOf, atCountIndex, eachInstance, hclNumber, hclString, splat } from "./cdktf-workarounds";
import { ControlPlaneSettings, DefaultPoolMachines, defaultPoolMachines } from "./default-pool-machines";
import { BootVolume, bootFromVolume, fixedPort, floatingIpFor, instanceConfig, MachineProps } from "./machine";

export interface KubeNodePoolProps extends MachineProps {
  /** @default VARIABLES.kube_node_flavor.default */
  readonly flavor?: string;
  /** A floating IP the project holds for the master, by address (floating-ips.ts), or "" to allocate one. @default VARIABLES.master_floating_ip.default */
  readonly floatingIp?: string;
  /** Pod and service networks: node ports may send from these. */
  readonly podCidr: string;
  readonly serviceCidr: string;
  /** Nova server group policy, or "none" for no group. @default VARIABLES.kube_server_group_policy.default */
  readonly serverGroupPolicy?: string;
  /** @default - no boot volume: the image on the hypervisor's disk */
  readonly bootVolume?: BootVolume;
  /** @default - the default pool's flavor, image and boot volume */
  readonly controlPlane?: ControlPlaneSettings;
}

/**
 * The default pool's microk8s nodes: a master on both networks with a floating IP (API and
 * ingress), and the layout's private workers, counted by Terraform, named, addressed and spread
 * over the zones by the layout. The first of them are the control plane, built from its own
 * flavor, image and boot volume where the control_plane_* variables give them.
 */
export class KubeNodePool extends Construct {
  readonly master: ComputeInstanceV2;
  readonly masterPublicPort: NetworkingPortV2;
  readonly masterPrivatePort: NetworkingPortV2;
  /** The master's floating IP, allocated here (count 0 when one is given), and its address. */
  readonly masterFloatingIp: NetworkingFloatingipV2;
  readonly masterPublicIp: string;
  /** 1 or 0 (a token): whether the master's floating IP is allocated here. */
  readonly masterFloatingIpAllocated: number;
  readonly workers: ComputeInstanceV2;
  /** Each default-pool worker's server id, in the layout's order; null for one the state lacks. */
  readonly workerIds: string[];
  readonly workerPorts: NetworkingPortV2;
  readonly serverGroup: ComputeServergroupV2;
  /** What the control plane and the default pool's workers are built from. */
  readonly machines: DefaultPoolMachines;

  constructor(scope: Construct, id: string, props: KubeNodePoolProps) {
    super(scope, id);
    const flavor = props.flavor ?? VARIABLES.kube_node_flavor.default;
    const policy = props.serverGroupPolicy ?? VARIABLES.kube_server_group_policy.default;
    if (!Token.isUnresolved(policy) && !(SERVER_GROUP_POLICIES as readonly string[]).includes(policy)) {
      throw new Error(`KubeNodePool: serverGroupPolicy must be one of ${SERVER_GROUP_POLICIES.join(", ")} (got "${policy}")`);
    }
    const { network, layout } = props;
    const master = layout.kubeMaster;
    const bootVolume = props.bootVolume ?? { size: 0, type: "" };
    const expression = (hcl: string) => hclString(this, hcl);
    this.machines = defaultPoolMachines(this, {
      flavor,
      imageId: props.imageId,
      bootVolume,
      controlPlane: props.controlPlane,
      workerCount: layout.workerCount,
    });
    const workerMachine = (attribute: string) => `${addressOf(this.machines.workers)}[count.index].${attribute}`;
    const podTraffic = [props.podCidr, props.serviceCidr];

    // count = 0 when the policy is "none"; one() then gives the instances a null group.
    this.serverGroup = new ComputeServergroupV2(this, "ServerGroup", {
      count: TerraformCount.of(Token.asNumber(Fn.conditional(Op.eq(policy, "none"), 0, 1))),
      name: `${layout.domain}-k8s-nodes`,
      policies: [policy],
    });
    const schedulerHints = [{ group: Token.asString(Fn.one(splat(this.serverGroup, "id"))) }];

    this.masterPublicPort = fixedPort(this, "MasterPublicPort", {
      fqdn: master.fqdn,
      side: "public",
      network,
      address: master.publicIp,
      securityGroups: [network.securityGroups.kubeApi],
      roleGroupIds: network.roleGroupIds.control_plane,
    });
    this.masterPrivatePort = fixedPort(this, "MasterPrivatePort", {
      fqdn: master.fqdn,
      side: "private",
      network,
      address: master.privateIp,
      securityGroups: network.kubeNodePrivateGroups,
      roleGroupIds: network.roleGroupIds.control_plane,
      allowedAddressPairs: podTraffic,
    });
    this.master = new ComputeInstanceV2(this, "Master", {
      ...instanceConfig({
        ...props,
        role: "salt-minion",
        host: { hostname: master.host, fqdn: master.fqdn, privateIp: master.privateIp, dualHomed: true },
        imageId: this.machines.controlPlane.imageId,
        flavor: this.machines.controlPlane.flavor,
        flavorKept: true,
      }),
      // Public first: the default route stays on the public network.
      network: [{ port: this.masterPublicPort.id }, { port: this.masterPrivatePort.id }],
      schedulerHints,
      availabilityZone: layout.kubeMasterZone,
    });
    bootFromVolume(this.master, this.machines.controlPlane.imageId, this.machines.controlPlane.bootVolume);
    ({
      allocated: this.masterFloatingIp,
      address: this.masterPublicIp,
      allocates: this.masterFloatingIpAllocated,
    } = floatingIpFor(this, "MasterFloatingIp", {
      network,
      port: this.masterPublicPort,
      fqdn: master.fqdn,
      given: { variable: "master_floating_ip", address: props.floatingIp ?? VARIABLES.master_floating_ip.default },
    }));

    const portCount = TerraformCount.of(layout.workerCount);
    const portWorker = layout.worker(portCount.index);
    this.workerPorts = fixedPort(this, "WorkerPort", {
      count: portCount,
      fqdn: portWorker.fqdn,
      side: "private",
      network,
      address: portWorker.privateIp,
      securityGroups: network.kubeNodePrivateGroups,
      // The control plane is the master and the first workers (ClusterLayout.controlPlane).
      roleGroupIds: Token.asList(
        Fn.conditional(Op.lt(portCount.index, CONTROL_PLANE_SIZE - 1), network.roleGroupIds.control_plane, network.roleGroupIds.worker),
      ),
      allowedAddressPairs: podTraffic,
    });
    const instanceCount = TerraformCount.of(layout.workerCount);
    const worker = layout.worker(instanceCount.index);
    this.workers = new ComputeInstanceV2(this, "Worker", {
      count: instanceCount,
      ...instanceConfig({
        ...props,
        role: "salt-minion",
        host: { hostname: worker.host, fqdn: worker.fqdn, privateIp: worker.privateIp, dualHomed: false },
        imageId: expression(workerMachine("image_id")),
        flavor: expression(workerMachine("flavor")),
        flavorKept: true,
      }),
      network: [{ port: atCountIndex(this.workerPorts, "id") }],
      schedulerHints,
      availabilityZone: worker.zone,
    });
    bootFromVolume(this.workers, expression(workerMachine("image_id")), {
      size: hclNumber(this, workerMachine("volume_size")),
      type: expression(workerMachine("volume_type")),
    });
    // By index, null where the state lacks one (eachInstance): a splat would shift the ids.
    const range = `i in range(${Token.asString(layout.workerCount)})`;
    this.workerIds = eachInstance(this, "default_pool_worker_ids", this.workers, { head: range, key: "i" }, "id");
  }
}
