import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Resource as NullResource } from "@cdktf/provider-null/lib/resource";
import {
  AssetType,
  DataResource,
  FileProvisioner,
  Fn,
  IResolvable,
  Op,
  RemoteExecProvisioner,
  SSHProvisionerConnection,
  TerraformAsset,
  TerraformCount,
  TerraformLocal,
  Token,
} from "cdktf";
import { Construct } from "constructs";
import { Bastion } from "./bastion";
import { HOSTS } from "./cluster-layout";
import { KubeNodePool } from "./kube-node-pool";
import { atCountIndex, splat } from "./machine";
import { SaltMaster } from "./salt-master";

/** The project root: the nearest directory up with cdktf.json (constructs/ runs from build/ too). */
function projectRoot(): string {
  for (let dir = __dirname; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, "cdktf.json"))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`SaltProvisioner: no cdktf.json above ${__dirname}`);
  }
}
const REPO_ROOT = projectRoot();

/**
 * Remote paths are relative to the deploy user's home: both scp (the file provisioner) and
 * remote-exec start there, and the user's home is the one place it can write without sudo
 * that no other user can prepare for it.
 */
const REMOTE_DIR = ".kube-on-os";
const REMOTE_BIN = `${REMOTE_DIR}/bin`;
const REMOTE_STAGE = `${REMOTE_DIR}/stage`;
/** Only the deploy user can enter it (mode 0700): secrets pass through it on their way to root. */
const REMOTE_SECRETS = `${REMOTE_DIR}/secrets`;

export interface SaltProvisionerProps {
  readonly bastion: Bastion;
  readonly saltMaster: SaltMaster;
  readonly kubeNodes: KubeNodePool;
  /** Kubernetes nodes including the master, as for KubeNodePool (a token at plan time). */
  readonly nodeCount: number;
  /** The login user; its key must be in the ssh-agent of whoever runs Terraform. */
  readonly user: string;
  /** The bastion's known host key (or CA key). @default - not checked */
  readonly bastionHostKey?: string;
  /** The Salt master's known host key (or CA key). @default - not checked */
  readonly saltMasterHostKey?: string;
  /** Every minion id that must be accepted: the FQDNs of all machines (a Terraform list). */
  readonly minionIds: string[];
  /** The content of /srv/pillar/_from_terraform.sls (see saltPillar()). */
  readonly pillar: string;
  /**
   * Root's console password, set on every minion through Salt (as a SHA-512 crypt hash) before
   * the orchestration: an expression that is "" when the password is not to be set, meant for
   * the ephemeral root_password, which Terraform keeps out of plans and state.
   * @default - root's password is not managed by the chain
   */
  readonly rootPassword?: string;
  /** Whether the chain exists at all (a bool token, from run_provisioners). */
  readonly enabled: boolean | IResolvable;
  /** @default the repository's salt/ */
  readonly saltTree?: string;
  /** @default the repository's pillar/ */
  readonly pillarTree?: string;
  /** @default the repository's provisioners/ */
  readonly scripts?: string;
  /** Seconds to wait for cloud-init on each host. @default SaltProvisioner.DEFAULT_CLOUD_INIT_TIMEOUT */
  readonly cloudInitTimeout?: number;
  /** Seconds to wait for every minion's key and first answer. @default SaltProvisioner.DEFAULT_MINION_TIMEOUT */
  readonly minionTimeout?: number;
}

/**
 * The provisioning chain, all through the bastion with the deployer's ssh-agent: wait for
 * cloud-init on the bastion, then on the Salt master; sync the Salt tree and the pillar that
 * Terraform writes; accept exactly the expected minion keys; run the orchestration. Each step is
 * a null_resource (hashicorp/null) whose triggers include its predecessor's id, so whatever
 * re-runs one step re-runs the steps after it. The chain has the same five steps at any number
 * of nodes: workers converge in parallel inside the orchestration. The last step also sets
 * root's console password first, when asked to.
 *
 * Each worker also gets a NodeMembership record whose destroy-time provisioner removes the node
 * from the microk8s cluster (and its key from Salt) before Terraform deletes the machine. It is
 * a terraform_data, not a null_resource: see there.
 */
export class SaltProvisioner extends Construct {
  static readonly DEFAULT_CLOUD_INIT_TIMEOUT = 1800;
  static readonly DEFAULT_MINION_TIMEOUT = 900;
  /** How long SSH keeps retrying while a machine boots. */
  static readonly CONNECTION_TIMEOUT = "15m";

  readonly waitForBastion: NullResource;
  readonly waitForSaltMaster: NullResource;
  readonly syncSaltTree: NullResource;
  readonly acceptMinionKeys: NullResource;
  readonly orchestrate: NullResource;
  /** The five steps in order, for those that name their addresses (the stack's `removed` blocks). */
  readonly steps: readonly NullResource[];
  /** One per worker: removing one removes that node from the cluster first. */
  readonly nodeMembership: DataResource;
  /** Content hashes of what the sync uploads. */
  readonly hashes: { readonly saltTree: string; readonly pillarTree: string; readonly scripts: string };

  constructor(scope: Construct, id: string, props: SaltProvisionerProps) {
    super(scope, id);
    const cloudInitTimeout = props.cloudInitTimeout ?? SaltProvisioner.DEFAULT_CLOUD_INIT_TIMEOUT;
    const minionTimeout = props.minionTimeout ?? SaltProvisioner.DEFAULT_MINION_TIMEOUT;
    for (const [name, value] of [
      ["cloudInitTimeout", cloudInitTimeout],
      ["minionTimeout", minionTimeout],
    ] as const) {
      if (!Token.isUnresolved(value) && !(Number.isInteger(value) && value > 0)) {
        throw new Error(`SaltProvisioner: ${name} must be a whole number of seconds above 0 (got ${value})`);
      }
    }
    const saltTree = this.asset("SaltTree", props.saltTree ?? path.join(REPO_ROOT, "salt"), "saltTree");
    const pillarTree = this.asset("PillarTree", props.pillarTree ?? path.join(REPO_ROOT, "pillar"), "pillarTree");
    const scripts = this.asset("Scripts", props.scripts ?? path.join(REPO_ROOT, "provisioners"), "scripts");
    this.hashes = { saltTree: saltTree.hash, pillarTree: pillarTree.hash, scripts: scripts.hash };

    const { bastion, saltMaster, kubeNodes } = props;
    const count = () => TerraformCount.of(Token.asNumber(Fn.conditional(props.enabled, 1, 0)));
    const idOf = (step: NullResource) => Fn.one(splat(step, "id"));
    const toBastion = sshConnection(props.user, bastion.publicIp, props.bastionHostKey);
    const toSaltMaster: SSHProvisionerConnection = {
      ...sshConnection(props.user, saltMaster.privateIp, props.saltMasterHostKey),
      bastionHost: bastion.publicIp,
      bastionUser: props.user,
      bastionHostKey: props.bastionHostKey,
    };
    const uploadScripts = (connection: SSHProvisionerConnection): (RemoteExecProvisioner | FileProvisioner)[] => [
      remoteExec(connection, `rm -rf ${REMOTE_BIN}`, `mkdir -p ${REMOTE_BIN}`),
      // The trailing slash uploads the directory's contents into REMOTE_BIN, not a directory named after the asset's hash.
      { type: "file", source: `${scripts.asset.path}/`, destination: REMOTE_BIN, connection },
    ];
    const waitForCloudInit = (connection: SSHProvisionerConnection) =>
      remoteExec(connection, `bash ${REMOTE_BIN}/wait-cloud-init.sh ${cloudInitTimeout}`);

    // null_resource triggers are a map of strings: lists go in as jsonencode().
    this.waitForBastion = new NullResource(this, "WaitForBastion", {
      count: count(),
      triggers: { instance: bastion.instance.id, scripts: scripts.hash },
      dependsOn: [bastion.floatingIpAssociation],
      provisioners: [...uploadScripts(toBastion), waitForCloudInit(toBastion)],
    });

    this.waitForSaltMaster = new NullResource(this, "WaitForSaltMaster", {
      count: count(),
      triggers: {
        after: idOf(this.waitForBastion),
        instance: saltMaster.instance.id,
        volume: saltMaster.volumeAttachment.id,
      },
      provisioners: [...uploadScripts(toSaltMaster), waitForCloudInit(toSaltMaster)],
    });

    this.syncSaltTree = new NullResource(this, "SyncSaltTree", {
      count: count(),
      triggers: {
        after: idOf(this.waitForSaltMaster),
        salt_tree: saltTree.hash,
        pillar_tree: pillarTree.hash,
        pillar_data: Fn.sha256(props.pillar),
      },
      provisioners: [
        remoteExec(toSaltMaster, `rm -rf ${REMOTE_STAGE}`, `mkdir -p ${REMOTE_STAGE}/salt ${REMOTE_STAGE}/pillar`),
        { type: "file", source: `${saltTree.asset.path}/`, destination: `${REMOTE_STAGE}/salt`, connection: toSaltMaster },
        { type: "file", source: `${pillarTree.asset.path}/`, destination: `${REMOTE_STAGE}/pillar`, connection: toSaltMaster },
        { type: "file", content: props.pillar, destination: `${REMOTE_STAGE}/_from_terraform.sls`, connection: toSaltMaster },
        remoteExec(toSaltMaster, `sudo bash ${REMOTE_BIN}/install-salt-tree.sh ${REMOTE_STAGE}`),
      ],
    });

    const machineIds = Fn.concat([[bastion.instance.id, saltMaster.instance.id, kubeNodes.master.id], splat(kubeNodes.workers, "id")]);
    // The same machines in minionIds' order (Salt master, bastion, Kubernetes master, workers).
    const minionMachineIds = Fn.concat([
      [saltMaster.instance.id, bastion.instance.id, kubeNodes.master.id],
      splat(kubeNodes.workers, "id"),
    ]);
    this.acceptMinionKeys = new NullResource(this, "AcceptMinionKeys", {
      count: count(),
      // A re-created machine brings a new key, so the machines' ids are triggers too.
      triggers: { after: idOf(this.syncSaltTree), minions: Fn.jsonencode(props.minionIds), machines: Fn.jsonencode(machineIds) },
      provisioners: [
        remoteExec(
          toSaltMaster,
          // ID=MACHINE: the script deletes an id's old key when its machine was replaced.
          Fn.format(`sudo bash ${REMOTE_BIN}/accept-minion-keys.sh --timeout %d %s`, [
            minionTimeout,
            Fn.join(" ", Fn.formatlist("%s=%s", [props.minionIds, minionMachineIds])),
          ]),
        ),
      ],
    });

    // An ephemeral value cannot be a trigger: the password is set again whenever the orchestration runs.
    const setRootPassword: (RemoteExecProvisioner | FileProvisioner)[] =
      props.rootPassword === undefined
        ? []
        : [
            remoteExec(toSaltMaster, `install -d -m 0700 ${REMOTE_SECRETS}`),
            { type: "file", content: props.rootPassword, destination: `${REMOTE_SECRETS}/root-password`, connection: toSaltMaster },
            remoteExec(
              toSaltMaster,
              Fn.format(`sudo bash ${REMOTE_BIN}/set-root-password.sh ${REMOTE_SECRETS}/root-password %s`, [Fn.join(" ", props.minionIds)]),
            ),
          ];
    this.orchestrate = new NullResource(this, "Orchestrate", {
      count: count(),
      triggers: { after: idOf(this.acceptMinionKeys) },
      provisioners: [...setRootPassword, remoteExec(toSaltMaster, `sudo bash ${REMOTE_BIN}/orchestrate.sh orch.deploy`)],
    });

    this.steps = [this.waitForBastion, this.waitForSaltMaster, this.syncSaltTree, this.acceptMinionKeys, this.orchestrate];

    // Destroy-time provisioners may only read `self`, so the record keeps its connection in input.
    //
    // It stays a terraform_data: its destroy-time provisioner forgets a worker from the cluster,
    // so the record must never be replaced while its worker lives, yet what it stores must stay
    // current (a new host key in ssh_host_keys, a new bastion address), or a later scale-down
    // would log in with stale details and leave the departed node in the cluster. terraform_data
    // updates `input` in place. A null_resource can only store data in `triggers`, and replaces
    // itself on any change of them, running remove-node.sh against a healthy worker; with
    // `ignore_changes = [triggers]` it would not, but would then keep the details of the day it
    // was created. Neither is safe, so this one record stays built in.
    const memberCount = TerraformCount.of(Token.asNumber(Fn.conditional(props.enabled, Op.sub(props.nodeCount, 1), 0)));
    this.nodeMembership = new DataResource(this, "NodeMembership", {
      count: memberCount,
      input: {
        node_id: atCountIndex(kubeNodes.workers, "name"),
        address: atCountIndex(kubeNodes.workers, "access_ip_v4"),
        master_id: kubeNodes.masterFqdn,
        user: props.user,
        host: saltMaster.privateIp,
        host_key: props.saltMasterHostKey ?? null,
        bastion_host: bastion.publicIp,
        bastion_host_key: props.bastionHostKey ?? null,
      },
      // Created after the orchestration, so on a scale-down it is destroyed (the node leaves)
      // before the orchestration re-runs, and before its machine is deleted.
      dependsOn: [this.orchestrate, saltMaster.instance, bastion.floatingIpAssociation],
    });
    // cdktf's RemoteExecProvisioner has no `when`/`on_failure`. A failed removal must not block
    // destroying a broken cluster, so it continues (and says so in the log).
    this.nodeMembership.addOverride("provisioner", [
      {
        "remote-exec": {
          when: "destroy",
          on_failure: "continue",
          inline: [
            "set -eu",
            `sudo bash ${REMOTE_BIN}/remove-node.sh \${self.input.master_id} \${self.input.node_id} \${self.input.address}`,
          ],
          connection: {
            type: "ssh",
            host: "${self.input.host}",
            user: "${self.input.user}",
            agent: true,
            host_key: "${self.input.host_key}",
            bastion_host: "${self.input.bastion_host}",
            bastion_user: "${self.input.user}",
            bastion_host_key: "${self.input.bastion_host_key}",
            timeout: SaltProvisioner.CONNECTION_TIMEOUT,
          },
        },
      },
    ]);
  }

  /** A directory uploaded by the chain, copied without build debris, with its content hash. */
  private asset(id: string, dir: string, prop: string): { asset: TerraformAsset; hash: string } {
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
      throw new Error(`SaltProvisioner: ${prop} must be a directory (got "${dir}")`);
    }
    const { copy, hash } = cleanCopy(dir);
    return { asset: new TerraformAsset(this, id, { path: copy, type: AssetType.DIRECTORY, assetHash: hash }), hash };
  }
}

function sshConnection(user: string, host: string, hostKey: string | undefined): SSHProvisionerConnection {
  return {
    type: "ssh",
    host,
    user,
    // The private key stays in the deployer's ssh-agent. cdktf types `agent` as a string,
    // Terraform as a bool; the cast writes the bool.
    agent: true as unknown as string,
    hostKey,
    timeout: SaltProvisioner.CONNECTION_TIMEOUT,
  };
}

/** remote-exec runs its lines as one /bin/sh script; `set -eu` makes any failing line fail the step. */
function remoteExec(connection: SSHProvisionerConnection, ...commands: string[]): RemoteExecProvisioner {
  return { type: "remote-exec", inline: ["set -eu", ...commands], connection };
}

/** Files that tests and editors leave in the trees and that must neither ship nor change a hash. */
const DEBRIS = new Set(["__pycache__", ".pytest_cache", ".ruff_cache", ".DS_Store"]);

function treeFiles(dir: string, relative = ""): string[] {
  return fs
    .readdirSync(path.join(dir, relative), { withFileTypes: true })
    .filter((entry) => !DEBRIS.has(entry.name) && !entry.name.endsWith(".pyc"))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    .flatMap((entry) => {
      const name = path.posix.join(relative, entry.name);
      if (entry.isDirectory()) return treeFiles(dir, name);
      if (entry.isFile()) return [name];
      throw new Error(`SaltProvisioner: ${path.join(dir, name)} is neither a file nor a directory; the tree must hold plain files only`);
    });
}

/**
 * sha256 over every file's path and content (cdktf's own asset hash ignores names, so a renamed
 * SLS would not re-sync), and a content-addressed copy without debris for the asset to ship.
 */
export function cleanCopy(dir: string): { copy: string; hash: string } {
  const files = treeFiles(dir);
  const digest = createHash("sha256");
  for (const file of files) {
    digest.update(`${file}\0`);
    digest.update(fs.readFileSync(path.join(dir, file)));
    digest.update("\0");
  }
  const hash = digest.digest("hex");
  const copy = path.join(os.tmpdir(), "kube-on-os-assets", hash);
  if (!fs.existsSync(copy)) {
    // Built beside its final name and renamed, so parallel syntheses never see a partial copy.
    fs.mkdirSync(path.dirname(copy), { recursive: true });
    const partial = fs.mkdtempSync(`${copy}.partial-`);
    for (const file of files) {
      fs.mkdirSync(path.dirname(path.join(partial, file)), { recursive: true });
      fs.copyFileSync(path.join(dir, file), path.join(partial, file));
    }
    try {
      fs.renameSync(partial, copy);
    } catch (error) {
      fs.rmSync(partial, { recursive: true, force: true });
      if (!fs.existsSync(copy)) throw error;
    }
  }
  return { copy, hash };
}

export interface SaltPillarProps {
  /** The users variable: a list of { username, ssh_public_key }. */
  readonly users: unknown;
  readonly domain: string;
  readonly publicCidr: string;
  readonly privateCidr: string;
  readonly nameservers: string[];
  /** Kubernetes nodes including the master. */
  readonly nodeCount: number;
  readonly masterFloatingIp: string;
  readonly podCidr: string;
  readonly serviceCidr: string;
}

/** The first nodes are the dqlite voters, as microk8s' HA needs three. */
export const CONTROL_PLANE_SIZE = 3;

/**
 * /srv/pillar/_from_terraform.sls as a yamlencode() of Terraform values, following
 * pillar/_from_terraform.sls.example. Node ids and addresses are computed the way the machines
 * get theirs (`<host>.<domain>`, cidrhost of the fixed host numbers): a plan shows the node list
 * before any machine exists. Only the master's floating IP waits for its allocation.
 */
export function saltPillar(scope: Construct, props: SaltPillarProps): string {
  // Literal HCL for the for-expressions: cdktf renders a token that follows a literal `}`
  // inside an expression as a nested `${...}`, so no token comes after an object literal here.
  const master = Fn.format("%s.%s", [KubeNodePool.MASTER_HOST, props.domain]);
  const ids = new TerraformLocal(
    scope,
    "kube_node_ids",
    Fn.concat([[master], Fn.formatlist(`${KubeNodePool.WORKER_HOST}-%d.%s`, [Fn.range(0, Op.sub(props.nodeCount, 1)), props.domain])]),
  );
  const addresses = new TerraformLocal(
    scope,
    "kube_node_addresses",
    `\${[for i in range(length(${ids.expression})) : cidrhost(${props.privateCidr}, i == 0 ? ${HOSTS.kubeMasterPrivate} : ${HOSTS.firstWorkerPrivate} + i - 1)]}`,
  );
  const nodes = new TerraformLocal(
    scope,
    "kube_nodes",
    `\${[for i, id in ${ids.expression} : { id = id, address = ${addresses.expression}[i] }]}`,
  );
  const controlPlane = new TerraformLocal(
    scope,
    "kube_control_plane",
    Fn.slice(ids.expression, 0, Fn.min([CONTROL_PLANE_SIZE, Fn.lengthOf(ids.expression)])),
  );
  const pillar = new TerraformLocal(
    scope,
    "salt_pillar",
    Fn.yamlencode({
      users: props.users,
      mine_functions: { "network.ip_addrs": { cidr: props.privateCidr } },
      network: {
        domain: props.domain,
        public_cidr: props.publicCidr,
        private_cidr: props.privateCidr,
        external_gateway: Fn.cidrhost(props.publicCidr, HOSTS.publicGateway),
      },
      core: { nameservers: props.nameservers },
      microk8s: {
        master,
        allowed_csr_ip: props.masterFloatingIp,
        pod_cidr: props.podCidr,
        service_cidr: props.serviceCidr,
        nodes: nodes.expression,
        control_plane: controlPlane.expression,
      },
    }),
  );
  return pillar.asString;
}
