import { Fn, Lazy, Op, TerraformLocal, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";
import { CONTROL_PLANE_SIZE } from "../facts/cluster-size";
import { FIXED_MACHINES, FixedMachine, HOST_NAMES, HOST_NUMBERS } from "../facts/hosts";
import { hclOf } from "./cdktf-workarounds";

/**
 * The cluster's layout, in one place: FQDNs (= Salt minion ids) and addresses, the workers, the
 * dqlite voters, built from the host names and numbers of facts/hosts.ts. Every construct, the
 * pillar and the outputs read it, so changing how workers are named or numbered is an edit here
 * (and in facts/) only (docs/architecture.md, "Addresses"). Lists are Terraform locals, evaluated at
 * plan time from the variables: a plan shows every name and address before any machine exists.
 */

/**
 * A value of each machine, as a Terraform list in the machine order (facts/hosts.ts,
 * FIXED_MACHINES): those of the fixed machines that `fixed` has, then every worker of the default
 * pool, then the pools' workers. `order` is for a list that was written in another order before
 * this one existed, and must keep it.
 */
export function inMachineOrder(
  fixed: Partial<Record<FixedMachine, string>>,
  workers: string[],
  poolWorkers: string[],
  order: readonly FixedMachine[] = FIXED_MACHINES,
): string[] {
  return Fn.concat([order.flatMap((machine) => fixed[machine] ?? []), workers, poolWorkers]);
}

/** One machine's identity. Strings may be tokens. */
export interface HostPlan {
  readonly host: string;
  /** Hostname, OpenStack name and Salt minion id at once. */
  readonly fqdn: string;
  readonly privateIp: string;
  /** Its fixed address on the public network, for the dual-homed hosts. */
  readonly publicIp?: string;
}

export interface ClusterLayoutProps {
  readonly domain: string;
  readonly publicCidr: string;
  readonly privateCidr: string;
  /** Kubernetes nodes of the default pool, the master included (a token keeps TF_VAR_num_kube_nodes working at plan time). */
  readonly nodeCount: number;
  /** Zones the default pool's nodes take round-robin, from the master. @default [] - the cloud's default */
  readonly zones?: string[];
  /**
   * The node_pools variable: a map of pool name to an object with `count` and `availability_zones`.
   * @default - no pool besides the default pool
   */
  readonly pools?: unknown;
}

/** A worker of a pool, as the layout names it (the `kube_pool_nodes` local's elements). */
export interface PoolNodePlan {
  readonly pool: string;
  readonly index: number;
  readonly host: string;
  readonly fqdn: string;
  /** Its availability zone, or null for the cloud's default. */
  readonly zone: string;
}

export class ClusterLayout {
  readonly domain: string;
  readonly bastion: Required<HostPlan>;
  readonly saltMaster: HostPlan;
  readonly kubeMaster: Required<HostPlan>;
  /** The master's availability zone: the first of the default pool's, or null. */
  readonly kubeMasterZone: string;
  /** Kubernetes nodes of the default pool after the master. */
  readonly workerCount: number;
  /** `k8s-worker-<n>` for n = 0 … workerCount - 1 (a Terraform list, as are the lists below). */
  readonly workerHosts: string[];
  readonly workerFqdns: string[];
  /** Worker n at host number firstWorkerPrivate + n of the private network. */
  readonly workerPrivateIps: string[];
  /**
   * Every pool's workers, pool by pool (in the names' order), each in order of its number: a
   * list of PoolNodePlan. Their addresses are the ones Neutron gives their ports from the DHCP
   * range (`providePoolAddresses`).
   */
  readonly poolNodes: string[];
  /** The same, keyed by host name: what the pools' resources iterate over. */
  readonly poolNodesByHost: string;
  /** Every Kubernetes node's id and address: the master, the default pool's workers, the pools' workers. */
  readonly kubeNodeIds: string[];
  readonly kubeNodeAddresses: string[];
  /** The dqlite voters: the first CONTROL_PLANE_SIZE node ids of the default pool. */
  readonly controlPlane: string[];
  /** Every machine's minion id: Salt master, bastion, Kubernetes master, workers (the default pool's, then the pools'). */
  readonly minionIds: string[];
  /** The machines behind the bastion (Salt master, Kubernetes master, workers) and their private addresses. */
  readonly privateFqdns: string[];
  readonly privateIps: string[];
  /** The highest private host number the fixed addresses take. */
  readonly lastPrivateHost: number;
  /** The locals themselves, for literal expressions that iterate over them. */
  readonly locals: {
    readonly kubeNodeIds: TerraformLocal;
    readonly kubeNodeAddresses: TerraformLocal;
    readonly poolNodes: TerraformLocal;
    readonly poolNodesByHost: TerraformLocal;
  };
  private readonly zones: string[];
  private poolAddresses?: string[];

  constructor(scope: Construct, props: ClusterLayoutProps) {
    // The locals live at the stack's top level under fixed names, as the pillar and the docs name them.
    const stack = TerraformStack.of(scope);
    const locals: Record<string, TerraformLocal> = {};
    const local = (name: string, expression: unknown) => {
      locals[name] = new TerraformLocal(stack, name, expression);
      return Token.asList(locals[name].expression);
    };
    const { domain, publicCidr, privateCidr, nodeCount } = props;
    if (!Token.isUnresolved(nodeCount) && !(Number.isInteger(nodeCount) && nodeCount >= 1)) {
      throw new Error(`ClusterLayout: nodeCount must be a whole number of at least 1 (got ${nodeCount})`);
    }
    // format(), not a TypeScript template, for a token: the FQDNs nest inside other functions.
    const fqdn = (host: string) => (Token.isUnresolved(domain) ? Fn.format("%s.%s", [host, domain]) : `${host}.${domain}`);
    const plan = (host: string, privateHost: number): HostPlan => ({
      host,
      fqdn: fqdn(host),
      privateIp: Fn.cidrhost(privateCidr, privateHost),
    });
    const dualHomed = (host: string, privateHost: number, publicHost: number): Required<HostPlan> => ({
      ...plan(host, privateHost),
      publicIp: Fn.cidrhost(publicCidr, publicHost),
    });

    this.domain = domain;
    this.zones = props.zones ?? [];
    // Without pools there are no pool workers to address.
    if (props.pools === undefined) this.poolAddresses = [];
    this.bastion = dualHomed(HOST_NAMES.bastion, HOST_NUMBERS.bastionPrivate, HOST_NUMBERS.bastionPublic);
    this.saltMaster = plan(HOST_NAMES.saltMaster, HOST_NUMBERS.saltMasterPrivate);
    this.kubeMaster = dualHomed(HOST_NAMES.kubeMaster, HOST_NUMBERS.kubeMasterPrivate, HOST_NUMBERS.kubeMasterPublic);
    this.kubeMasterZone = this.zoneAt(0);
    this.workerCount = Token.asNumber(Op.sub(nodeCount, 1));
    this.lastPrivateHost = Token.asNumber(
      Fn.max([HOST_NUMBERS.kubeMasterPrivate, Op.add(HOST_NUMBERS.firstWorkerPrivate, Op.sub(nodeCount, 2))]),
    );

    this.workerHosts = local("kube_worker_hosts", Fn.formatlist(`${HOST_NAMES.worker}-%d`, [Fn.range(0, this.workerCount)]));
    this.workerFqdns = local("kube_worker_fqdns", Fn.formatlist("%s.%s", [this.workerHosts, domain]));
    // A literal for-expression (constructs/cdktf-workarounds.ts).
    this.workerPrivateIps = local(
      "kube_worker_private_ips",
      `\${[for n in range(${Token.asString(this.workerCount)}) : cidrhost(${hclOf(privateCidr)}, ${HOST_NUMBERS.firstWorkerPrivate} + n)]}`,
    );
    // Pools in their names' order (a map's), workers in their numbers'; element() wraps around
    // the zones. Literal for-expressions again, with no token after a literal `}`, and
    // zipmap([], []) for no pools' empty map (constructs/cdktf-workarounds.ts).
    const pools = props.pools === undefined ? "zipmap([], [])" : Token.asString(props.pools);
    this.poolNodes = local(
      "kube_pool_nodes",
      `\${flatten([for name, pool in ${pools} : [for i in range(pool.count) : ` +
        `{ pool = name, index = i, host = format("${HOST_NAMES.poolWorker}-%s-%d", name, i), ` +
        `fqdn = format("${HOST_NAMES.poolWorker}-%s-%d.%s", name, i, ${hclOf(domain)}), ` +
        `zone = length(pool.availability_zones) > 0 ? element(pool.availability_zones, i) : null }]])}`,
    );
    locals.kube_pool_nodes_by_host = new TerraformLocal(
      stack,
      "kube_pool_nodes_by_host",
      "${{ for node in local.kube_pool_nodes : node.host => node }}",
    );
    this.poolNodesByHost = Token.asString(locals.kube_pool_nodes_by_host.expression);
    const poolFqdns = local("kube_pool_fqdns", "${[for node in local.kube_pool_nodes : node.fqdn]}");
    // A local whose expression the construct that creates the pool workers' ports provides.
    const poolAddresses = local(
      "kube_pool_addresses",
      Lazy.anyValue({
        produce: () => {
          if (this.poolAddresses === undefined) throw new Error("ClusterLayout: no construct provided the pool workers' addresses");
          return this.poolAddresses;
        },
      }),
    );
    const defaultPoolIds = Fn.concat([[this.kubeMaster.fqdn], this.workerFqdns]);
    this.kubeNodeIds = local("kube_node_ids", Fn.concat([defaultPoolIds, poolFqdns]));
    this.kubeNodeAddresses = local(
      "kube_node_addresses",
      inMachineOrder({ kubeMaster: this.kubeMaster.privateIp }, this.workerPrivateIps, poolAddresses),
    );
    this.controlPlane = local("kube_control_plane", Fn.slice(defaultPoolIds, 0, Fn.min([CONTROL_PLANE_SIZE, nodeCount])));
    this.minionIds = local(
      "salt_minion_ids",
      inMachineOrder(
        { saltMaster: this.saltMaster.fqdn, bastion: this.bastion.fqdn, kubeMaster: this.kubeMaster.fqdn },
        this.workerFqdns,
        poolFqdns,
      ),
    );
    this.locals = {
      kubeNodeIds: locals.kube_node_ids,
      kubeNodeAddresses: locals.kube_node_addresses,
      poolNodes: locals.kube_pool_nodes,
      poolNodesByHost: locals.kube_pool_nodes_by_host,
    };
    this.privateFqdns = inMachineOrder({ saltMaster: this.saltMaster.fqdn, kubeMaster: this.kubeMaster.fqdn }, this.workerFqdns, poolFqdns);
    this.privateIps = inMachineOrder(
      { saltMaster: this.saltMaster.privateIp, kubeMaster: this.kubeMaster.privateIp },
      this.workerPrivateIps,
      poolAddresses,
    );
  }

  /** Worker `index` (a counted resource's `count.index`) of the default pool, by the layout's lists. */
  worker(index: number): HostPlan & { readonly zone: string } {
    return {
      host: Fn.element(this.workerHosts, index),
      fqdn: Fn.element(this.workerFqdns, index),
      privateIp: Fn.element(this.workerPrivateIps, index),
      zone: this.zoneAt(Token.asNumber(Op.add(index, 1))),
    };
  }

  /**
   * The pool workers' private addresses, in `poolNodes`' order: the construct that creates their
   * ports gives them, once (Neutron picks them, so they exist only as the ports' attributes).
   */
  providePoolAddresses(addresses: string[]): void {
    if (this.poolAddresses !== undefined) throw new Error("ClusterLayout: the pool workers' addresses were already provided");
    this.poolAddresses = addresses;
  }

  /** The default pool's zone for node `position` (0 is the master): round-robin, or null when no zone is given. */
  private zoneAt(position: number): string {
    // Literal: Op drops a falsy right operand, and Fn.conditional cannot give null (constructs/cdktf-workarounds.ts).
    const zones = Token.asString(this.zones);
    return Token.asString(`\${length(${zones}) > 0 ? element(${zones}, ${Token.asString(position)}) : null}`);
  }
}
