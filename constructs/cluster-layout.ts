import { Fn, Op, TerraformLocal, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";

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

/** Host names: the first label of each machine's FQDN. Worker n is `<worker>-<n>`. */
export const HOST_NAMES = {
  bastion: "bastion",
  saltMaster: "salt",
  kubeMaster: "k8s-master",
  worker: "k8s-worker",
} as const;

/**
 * The most workers the layout can name: their lists come from Terraform's range(), which stops
 * at 1024 values (go-cty's function/stdlib/sequence.go: "more than 1024 values were generated").
 */
export const MAX_WORKERS = 1024;

/** The longest host name the layout gives: the last worker's. */
export const LONGEST_HOST = `${HOST_NAMES.worker}-${MAX_WORKERS - 1}`;

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
  /** Kubernetes nodes including the master (a token keeps TF_VAR_num_kube_nodes working at plan time). */
  readonly nodeCount: number;
}

export class ClusterLayout {
  readonly domain: string;
  readonly bastion: Required<HostPlan>;
  readonly saltMaster: HostPlan;
  readonly kubeMaster: Required<HostPlan>;
  /** Kubernetes nodes after the master. */
  readonly workerCount: number;
  /** `k8s-worker-<n>` for n = 0 … workerCount - 1 (a Terraform list, as are the lists below). */
  readonly workerHosts: string[];
  readonly workerFqdns: string[];
  /** Worker n at host number firstWorkerPrivate + n of the private network. */
  readonly workerPrivateIps: string[];
  /** Every Kubernetes node's id and address, the master first. */
  readonly kubeNodeIds: string[];
  readonly kubeNodeAddresses: string[];
  /** The dqlite voters: the first CONTROL_PLANE_SIZE node ids. */
  readonly controlPlane: string[];
  /** Every machine's minion id: Salt master, bastion, Kubernetes master, workers. */
  readonly minionIds: string[];
  /** The machines behind the bastion (Salt master, Kubernetes master, workers) and their private addresses. */
  readonly privateFqdns: string[];
  readonly privateIps: string[];
  /** The highest private host number the fixed addresses take. */
  readonly lastPrivateHost: number;
  /** The locals themselves, for literal expressions that iterate over them. */
  readonly locals: { readonly kubeNodeIds: TerraformLocal; readonly kubeNodeAddresses: TerraformLocal };

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
    this.bastion = dualHomed(HOST_NAMES.bastion, HOSTS.bastionPrivate, HOSTS.bastionPublic);
    this.saltMaster = plan(HOST_NAMES.saltMaster, HOSTS.saltMasterPrivate);
    this.kubeMaster = dualHomed(HOST_NAMES.kubeMaster, HOSTS.kubeMasterPrivate, HOSTS.kubeMasterPublic);
    this.workerCount = Token.asNumber(Op.sub(nodeCount, 1));
    this.lastPrivateHost = Token.asNumber(Fn.max([HOSTS.kubeMasterPrivate, Op.add(HOSTS.firstWorkerPrivate, Op.sub(nodeCount, 2))]));

    this.workerHosts = local("kube_worker_hosts", Fn.formatlist(`${HOST_NAMES.worker}-%d`, [Fn.range(0, this.workerCount)]));
    this.workerFqdns = local("kube_worker_fqdns", Fn.formatlist("%s.%s", [this.workerHosts, domain]));
    // A literal for-expression: cdktf has no construct for one.
    this.workerPrivateIps = local(
      "kube_worker_private_ips",
      `\${[for n in range(${Token.asString(this.workerCount)}) : cidrhost(${privateCidr}, ${HOSTS.firstWorkerPrivate} + n)]}`,
    );
    this.kubeNodeIds = local("kube_node_ids", Fn.concat([[this.kubeMaster.fqdn], this.workerFqdns]));
    this.kubeNodeAddresses = local("kube_node_addresses", Fn.concat([[this.kubeMaster.privateIp], this.workerPrivateIps]));
    this.controlPlane = local(
      "kube_control_plane",
      Fn.slice(this.kubeNodeIds, 0, Fn.min([CONTROL_PLANE_SIZE, Fn.lengthOf(this.kubeNodeIds)])),
    );
    this.minionIds = local(
      "salt_minion_ids",
      Fn.concat([[this.saltMaster.fqdn, this.bastion.fqdn, this.kubeMaster.fqdn], this.workerFqdns]),
    );
    this.locals = { kubeNodeIds: locals.kube_node_ids, kubeNodeAddresses: locals.kube_node_addresses };
    this.privateFqdns = Fn.concat([[this.saltMaster.fqdn, this.kubeMaster.fqdn], this.workerFqdns]);
    this.privateIps = Fn.concat([[this.saltMaster.privateIp, this.kubeMaster.privateIp], this.workerPrivateIps]);
  }

  /** Worker `index` (a counted resource's `count.index`) by the layout's lists. */
  worker(index: number): HostPlan {
    return {
      host: Fn.element(this.workerHosts, index),
      fqdn: Fn.element(this.workerFqdns, index),
      privateIp: Fn.element(this.workerPrivateIps, index),
    };
  }
}
