import {
  Fn,
  IResolvable,
  Op,
  ref,
  TerraformCount,
  TerraformIterator,
  TerraformLocal,
  TerraformStack,
  TerraformVariable,
  Token,
} from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackBlockstorageQuotasetV3 } from "../.gen/providers/openstack/data-openstack-blockstorage-quotaset-v3";
import { DataOpenstackComputeFlavorV2 } from "../.gen/providers/openstack/data-openstack-compute-flavor-v2";
import { DataOpenstackComputeQuotasetV2 } from "../.gen/providers/openstack/data-openstack-compute-quotaset-v2";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { DataOpenstackNetworkingQuotaV2 } from "../.gen/providers/openstack/data-openstack-networking-quota-v2";
import { CONTROL_PLANE_SIZE } from "../facts/cluster-size";
import { DUAL_HOMED, FIXED_MACHINES } from "../facts/hosts";
import { addressOf, sum } from "./cdktf-workarounds";
import { WorkerPools } from "./worker-pools";

/** What the deployment creates, as far as the project's quotas count it. Numbers may be tokens. */
export interface QuotasProps {
  /** Read the quotas and check them at plan time (a token: `check_quotas`). */
  readonly enabled: boolean | IResolvable;
  readonly nodeCount: number;
  /** The flavors by name; the control plane's is the default pool's unless it has its own. @default controlPlane - kubeNode */
  readonly flavors: { readonly bastion: string; readonly saltMaster: string; readonly kubeNode: string; readonly controlPlane?: string };
  /** "none" puts the nodes in no server group. */
  readonly serverGroupPolicy: string;
  readonly saltVolumeSize: number;
  /** 1 when the stack creates the deploy keypair, else 0. */
  readonly newKeypairs: number;
  /** The security groups the stack creates. */
  readonly securityGroups: number;
  /**
   * The security group rules the stack creates, as each construct that creates some counts them
   * (the default egress rules of its groups included).
   */
  readonly securityGroupRules: readonly number[];
  /**
   * The networks, subnets and routers the stack creates, and the ports besides the machines' (a
   * router interface, DHCP ports). @default Quotas.NEW_NETWORK: both networks and a router
   */
  readonly network?: { readonly networks: number; readonly subnets: number; readonly routers: number; readonly ports: number };
  /** The default pool's boot volume size in GiB, 0 for none. @default 0 */
  readonly kubeNodeBootVolumeSize?: number;
  /** The control plane's boot volume size in GiB, 0 for none. @default kubeNodeBootVolumeSize */
  readonly controlPlaneBootVolumeSize?: number;
  /** The API load balancers (0 or 1): a floating IP and its VIP port each. @default 0 */
  readonly apiLoadBalancers?: number;
  /** Floating IPs allocated for the cluster (a token), not the ones given. @default 2 and one per API load balancer */
  readonly floatingIps?: number;
  /** The node pools, whose workers count too. @default - none */
  readonly workerPools?: WorkerPools;
  /** The metadata items every server carries (`server_metadata`), which Nova bounds per server. @default 0 */
  readonly serverMetadataItems?: number;
  /**
   * The `quota_usage` variable: by "<service>.<quota>", what the project uses and what this
   * deployment holds of it (scripts/quota-usage.js writes it before a plan). Null, or a quota
   * it lacks, compares the limit alone.
   */
  readonly usage: TerraformVariable;
}

/** The Terraform variable the wrappers write before a plan (scripts/quota-usage.js); not a parameter. */
export const QUOTA_USAGE_VARIABLE = "quota_usage";

/** The project quotas a deployment uses, by quota name; `docs/quotas.md` explains each. */
export interface QuotaNeeds {
  readonly compute: Record<"instances" | "cores" | "ram" | "server_groups" | "server_group_members" | "key_pairs", number>;
  readonly blockStorage: Record<"volumes" | "gigabytes", number>;
  readonly network: Record<"floatingip" | "network" | "subnet" | "router" | "port" | "security_group" | "security_group_rule", number>;
}

/**
 * The machines, their ports, networks, floating IPs and volume, counted against the project's
 * Nova, Cinder and Neutron quotas at plan time. When what the deployment needs exceeds what is
 * free (the limit, less what the project uses, plus what this deployment already holds), the
 * plan fails with one line naming the quota, before anything is created. With a null
 * `quota_usage` only the limits are compared; either way, what others create after the plan can still exhaust a
 * quota at apply time, and the cloud then answers with its own error (409, 403 or 413).
 */
export class Quotas extends Construct {
  /** The machines' ports besides one per worker: two for a dual-homed machine, one for the others. */
  static readonly MACHINE_PORTS = FIXED_MACHINES.reduce((ports, machine) => ports + (DUAL_HOMED.includes(machine) ? 2 : 1), 0);
  /** The machines besides the Kubernetes nodes (num_kube_nodes counts the Kubernetes master). */
  static readonly OTHER_MACHINES = FIXED_MACHINES.filter((machine) => machine !== "kubeMaster").length;
  /** A public and a private network, each with a subnet and a DHCP port, and a router with an interface. */
  static readonly NEW_NETWORK = { networks: 2, subnets: 2, routers: 1, ports: 3 } as const;

  readonly needs: QuotaNeeds;
  /** `needs` as one Terraform value (the `quota_needs` output). */
  readonly needsLocal: TerraformLocal;

  constructor(scope: Construct, id: string, props: QuotasProps) {
    super(scope, id);
    const count = () => TerraformCount.of(Token.asNumber(Fn.conditional(props.enabled, 1, 0)));
    // Read whether or not quotas are checked: a flavor name the cloud does not know fails the
    // plan here, not the apply, and `quota_needs` stays complete.
    const flavor = (flavorId: string, name: string) => new DataOpenstackComputeFlavorV2(this, flavorId, { name });
    const bastion = flavor("BastionFlavor", props.flavors.bastion);
    const saltMaster = flavor("SaltMasterFlavor", props.flavors.saltMaster);
    const kubeNode = flavor("KubeNodeFlavor", props.flavors.kubeNode);
    const controlPlane = flavor("ControlPlaneFlavor", props.flavors.controlPlane ?? props.flavors.kubeNode);
    const grouped = Fn.conditional(Op.eq(props.serverGroupPolicy, "none"), 0, 1);
    const bootVolumeSize = props.kubeNodeBootVolumeSize ?? 0;
    const cpBootVolumeSize = props.controlPlaneBootVolumeSize ?? bootVolumeSize;
    // The default pool's nodes: the control plane (its first ones, CONTROL_PLANE_SIZE at most), then the others.
    const cpNodes = Fn.min([props.nodeCount, CONTROL_PLANE_SIZE]);
    const otherNodes = Op.sub(props.nodeCount, cpNodes);
    const nodes = (cp: unknown, other: unknown) => Op.add(Op.mul(cpNodes, cp), Op.mul(otherNodes, other));
    const pools = poolNeeds(this, props.workerPools);
    const plus = (a: unknown, b: unknown) => Token.asNumber(Op.add(a, b));
    const network = props.network ?? Quotas.NEW_NETWORK;

    this.needs = {
      compute: {
        instances: plus(Op.add(Quotas.OTHER_MACHINES, props.nodeCount), pools.instances),
        cores: plus(Op.add(Op.add(bastion.vcpus, saltMaster.vcpus), nodes(controlPlane.vcpus, kubeNode.vcpus)), pools.cores),
        ram: plus(Op.add(Op.add(bastion.ram, saltMaster.ram), nodes(controlPlane.ram, kubeNode.ram)), pools.ram),
        server_groups: plus(grouped, pools.serverGroups),
        server_group_members: plus(Op.mul(grouped, props.nodeCount), pools.serverGroupMembers),
        key_pairs: props.newKeypairs,
      },
      blockStorage: {
        // signum(): 1 with a boot volume, 0 without (a conditional in an Op loses its parentheses: cdktf-workarounds.ts).
        volumes: plus(Op.add(1, nodes(Fn.signum(cpBootVolumeSize), Fn.signum(bootVolumeSize))), pools.volumes),
        gigabytes: plus(Op.add(props.saltVolumeSize, nodes(cpBootVolumeSize, bootVolumeSize)), pools.gigabytes),
      },
      network: {
        floatingip: props.floatingIps ?? Token.asNumber(Op.add(2, props.apiLoadBalancers ?? 0)),
        network: network.networks,
        subnet: network.subnets,
        router: network.routers,
        port: plus(
          Op.add(Op.add(Op.add(Quotas.MACHINE_PORTS, network.ports), Op.sub(props.nodeCount, 1)), props.apiLoadBalancers ?? 0),
          pools.instances,
        ),
        security_group: props.securityGroups,
        security_group_rule: sum(props.securityGroupRules),
      },
    };
    this.needsLocal = new TerraformLocal(this, "needs", this.needs);
    const needs = this.needsLocal;
    const need = (service: keyof QuotaNeeds, quota: string) => `${addressOf(needs)}.${service}.${quota}`;
    const usage = addressOf(props.usage);
    const check = (service: keyof QuotaNeeds, quota: string) =>
      checkQuota(SERVICE_NAMES[service], service, quota, need(service, quota), usage);

    // The project the credentials are scoped to, from the token itself.
    const authScope = new DataOpenstackIdentityAuthScopeV3(this, "Scope", { count: count(), name: "kube-on-os" });
    const projectId = Token.asString(`\${${authScope.fqn}[0].project_id}`);
    const metadataItems = Token.asString(props.serverMetadataItems ?? 0);
    new DataOpenstackComputeQuotasetV2(this, "Compute", {
      count: count(),
      projectId,
      lifecycle: {
        postcondition: [
          ...Object.keys(this.needs.compute).map((quota) => check("compute", quota)),
          // Not a usage but a bound on each server (nova/compute/api.py, _check_metadata_properties_quota).
          {
            condition: `\${self.metadata_items < 0 || ${metadataItems} <= self.metadata_items}`,
            errorMessage:
              `Quota too small: server_metadata has \${${metadataItems}} items, but the project allows a server ` +
              `\${self.metadata_items} (Nova quota metadata_items, openstack quota show); raise the quota, or give fewer items.`,
          },
        ],
      },
    });
    new DataOpenstackBlockstorageQuotasetV3(this, "BlockStorage", {
      count: count(),
      projectId,
      lifecycle: {
        postcondition: Object.keys(this.needs.blockStorage).map((quota) => check("blockStorage", quota)),
      },
    });
    new DataOpenstackNetworkingQuotaV2(this, "Network", {
      count: count(),
      projectId,
      lifecycle: { postcondition: Object.keys(this.needs.network).map((quota) => check("network", quota)) },
    });
  }
}

const SERVICE_NAMES: Record<keyof QuotaNeeds, string> = { compute: "Nova", blockStorage: "Cinder", network: "Neutron" };

/**
 * One quota: -1 is unlimited. With the quota's usage, what is free to this deployment is the
 * limit, less what the project uses, plus what the deployment already holds (at most what is
 * used); without it (a null `usage`, or a quota the read did not report), the limit. Terraform
 * does not short-circuit `||`; both sides are always valid here.
 */
function checkQuota(service: string, group: keyof QuotaNeeds, quota: string, need: string, usage: string) {
  const limit = `self.${quota}`;
  // try(): a null variable, or a quota it lacks.
  const entry = `${usage}["${group}.${quota}"]`;
  const used = `try(${entry}.used, 0)`;
  const own = `min(try(${entry}.own, 0), ${used})`;
  const held = `${own} > 0 ? format(" (%d more than the %d it holds)", ${need} - ${own}, ${own}) : ""`;
  const free =
    `can(${entry}.used) ? format("%d free (%d allowed, %d in use; openstack quota show --usage)", ${limit} - ${used}, ${limit}, ${used}) ` +
    `: format("but the project allows %d (openstack quota show)", ${limit})`;
  return {
    condition: `\${${limit} < 0 || ${limit} - ${used} + ${own} >= ${need}}`,
    errorMessage:
      `Quota too small: this deployment needs ${service} quota ${quota} = \${${need}}\${${held}}, \${${free}}; ` +
      `raise the quota, or deploy fewer or smaller machines.`,
  };
}

/** What the node pools' workers count against the quotas; 0 each without pools. */
function poolNeeds(scope: Construct, workerPools: WorkerPools | undefined) {
  const none = { instances: 0, cores: 0, ram: 0, serverGroups: 0, serverGroupMembers: 0, volumes: 0, gigabytes: 0 };
  if (workerPools === undefined) return none;
  const settings = addressOf(workerPools.settings);
  // Each pool's flavor, read like the other flavors: an unknown name fails the plan.
  const flavorNames = new TerraformLocal(scope, "pool_flavors", `\${[for s in values(${settings}) : s.flavor]}`);
  const flavors = new DataOpenstackComputeFlavorV2(scope, "PoolFlavors", {
    forEach: TerraformIterator.fromList(Token.asList(flavorNames.expression)),
    name: "${each.value}",
  });
  const flavorsRef = addressOf(flavors);
  // sum() refuses an empty list, hence the 0 in front.
  const total = (term: string, filter = "true") => `sum(concat([0], [for s in values(${settings}) : ${term} if ${filter}]))`;
  const needs = new TerraformLocal(scope, "pool_needs", {
    instances: `\${${total("s.count")}}`,
    cores: `\${${total(`s.count * ${flavorsRef}[s.flavor].vcpus`)}}`,
    ram: `\${${total(`s.count * ${flavorsRef}[s.flavor].ram`)}}`,
    serverGroups: `\${${total("1", "s.grouped")}}`,
    serverGroupMembers: `\${${total("s.count", "s.grouped")}}`,
    volumes: `\${${total("s.count", "s.volume_size > 0")}}`,
    gigabytes: `\${${total("s.count * s.volume_size")}}`,
  });
  const stack = TerraformStack.of(scope);
  const need = (name: keyof typeof none) => Token.asNumber(ref(`${addressOf(needs)}.${name}`, stack));
  return {
    instances: need("instances"),
    cores: need("cores"),
    ram: need("ram"),
    serverGroups: need("serverGroups"),
    serverGroupMembers: need("serverGroupMembers"),
    volumes: need("volumes"),
    gigabytes: need("gigabytes"),
  };
}
