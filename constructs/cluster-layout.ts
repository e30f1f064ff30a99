import { Fn, Lazy, Op, TerraformLocal, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";
import { hclOf } from "./hcl";

/**
 * The cluster's layout, in one place: host names, FQDNs (= Salt minion ids), fixed host numbers
 * and addresses, the workers, the dqlite voters. Every construct, the pillar and the outputs read
 * it, so changing how workers are named or numbered is an edit here only (docs/architecture.md,
 * "Addresses"). Lists are Terraform locals, evaluated at plan time from the variables: a plan
 * shows every name and address before any machine exists.
 */

/** Static host numbers within each network, by role. */
export const HOSTS = {
  publicGateway: 1,
  bastionPublic: 10,
  kubeMasterPublic: 11,
  bastionPrivate: 1,
  saltMasterPrivate: 5,
  kubeMasterPrivate: 10,
  firstWorkerPrivate: 100,
} as const;

/**
 * Host names: the first label of each machine's FQDN. Worker n of the default pool is
 * `<worker>-<n>`, worker n of pool p is `<poolWorker>-<p>-<n>`: every Kubernetes node's name starts
 * with `k8s-`, which the Salt and pillar top files match.
 */
export const HOST_NAMES = {
  bastion: "bastion",
  saltMaster: "salt",
  kubeMaster: "k8s-master",
  worker: "k8s-worker",
  poolWorker: "k8s",
} as const;

/** The longest pool name (config/node-pools.ts): `k8s-<pool>-<n>` is a host name. */
export const POOL_NAME_MAX = 20;

/**
 * The most workers the layout can name: their lists come from Terraform's range(), which stops
 * at 1024 values (go-cty's function/stdlib/sequence.go: "more than 1024 values were generated").
 */
export const MAX_WORKERS = 1024;

/**
 * The most Kubernetes nodes a cluster has, the master and every pool's workers counted: a plan's
 * time grows faster than its nodes (`npm run bench` on 2 cores: 100 nodes 6.6 s, this cap 32 s;
 * 1,025 nodes took 285 s, and only then failed on a quota read of its first seconds).
 */
export const MAX_NODES = 256;

/** The longest host name the layout gives: the last worker's of a pool with the longest name. */
export const LONGEST_HOST = [
  `${HOST_NAMES.worker}-${MAX_WORKERS - 1}`,
  `${HOST_NAMES.poolWorker}-${"p".repeat(POOL_NAME_MAX)}-${MAX_WORKERS - 1}`,
].reduce((longest, host) => (host.length > longest.length ? host : longest));

/**
 * The longest suffix a resource's name adds to a machine's FQDN (a port's `-private`); names built
 * on the domain alone stay shorter. __tests__/l0-stack.test.ts checks every name in the
 * synthesized stack, at the longest domain, against Nova's and Neutron's limit.
 */
export const LONGEST_NAME_SUFFIX = "-private";

/** microk8s HA needs three dqlite voters: the first nodes (the master first) are the control plane. */
export const CONTROL_PLANE_SIZE = 3;

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
    this.bastion = dualHomed(HOST_NAMES.bastion, HOSTS.bastionPrivate, HOSTS.bastionPublic);
    this.saltMaster = plan(HOST_NAMES.saltMaster, HOSTS.saltMasterPrivate);
    this.kubeMaster = dualHomed(HOST_NAMES.kubeMaster, HOSTS.kubeMasterPrivate, HOSTS.kubeMasterPublic);
    this.kubeMasterZone = this.zoneAt(0);
    this.workerCount = Token.asNumber(Op.sub(nodeCount, 1));
    this.lastPrivateHost = Token.asNumber(Fn.max([HOSTS.kubeMasterPrivate, Op.add(HOSTS.firstWorkerPrivate, Op.sub(nodeCount, 2))]));

    this.workerHosts = local("kube_worker_hosts", Fn.formatlist(`${HOST_NAMES.worker}-%d`, [Fn.range(0, this.workerCount)]));
    this.workerFqdns = local("kube_worker_fqdns", Fn.formatlist("%s.%s", [this.workerHosts, domain]));
    // A literal for-expression: cdktf has no construct for one.
    this.workerPrivateIps = local(
      "kube_worker_private_ips",
      `\${[for n in range(${Token.asString(this.workerCount)}) : cidrhost(${hclOf(privateCidr)}, ${HOSTS.firstWorkerPrivate} + n)]}`,
    );
    // Pools in their names' order (a map's), workers in their numbers'; element() wraps around
    // the zones. Literal for-expressions again, with no token after an object literal's `}`.
    // zipmap([], []) for no pools: an empty map without the `}` that would garble the domain's token.
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
    this.kubeNodeAddresses = local("kube_node_addresses", Fn.concat([[this.kubeMaster.privateIp], this.workerPrivateIps, poolAddresses]));
    this.controlPlane = local("kube_control_plane", Fn.slice(defaultPoolIds, 0, Fn.min([CONTROL_PLANE_SIZE, nodeCount])));
    this.minionIds = local(
      "salt_minion_ids",
      Fn.concat([[this.saltMaster.fqdn, this.bastion.fqdn, this.kubeMaster.fqdn], this.workerFqdns, poolFqdns]),
    );
    this.locals = {
      kubeNodeIds: locals.kube_node_ids,
      kubeNodeAddresses: locals.kube_node_addresses,
      poolNodes: locals.kube_pool_nodes,
      poolNodesByHost: locals.kube_pool_nodes_by_host,
    };
    this.privateFqdns = Fn.concat([[this.saltMaster.fqdn, this.kubeMaster.fqdn], this.workerFqdns, poolFqdns]);
    this.privateIps = Fn.concat([[this.saltMaster.privateIp, this.kubeMaster.privateIp], this.workerPrivateIps, poolAddresses]);
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
    // Literal: cdktf renders Op's right operand 0 as "undefined", and Fn.conditional cannot give null.
    const zones = Token.asString(this.zones);
    return Token.asString(`\${length(${zones}) > 0 ? element(${zones}, ${Token.asString(position)}) : null}`);
  }
}
