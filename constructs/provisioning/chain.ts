import * as path from "node:path";
import { Resource as NullResource, ResourceConfig as NullResourceConfig } from "@cdktf/provider-null/lib/resource";
import {
  DataResource,
  FileProvisioner,
  Fn,
  IResolvable,
  Op,
  RemoteExecProvisioner,
  SSHProvisionerConnection,
  TerraformCount,
  Token,
} from "cdktf";
import { Construct } from "constructs";
import { NEW_CLUSTER_CHANNEL } from "../../config/parameters";
import { Bastion } from "../bastion";
import { forgetAsFormerType, splat } from "../cdktf-workarounds";
import { ClusterLayout, inMachineOrder } from "../cluster-layout";
import { KubeNodePool } from "../kube-node-pool";
import { SaltMaster } from "../salt-master";
import { WorkerPools } from "../worker-pools";
import { NodeDrains, nodeDrains } from "./node-drain";
import { nodeMembership } from "./node-membership";
import { hostKeys, REMOTE_BIN, REMOTE_SECRETS, REMOTE_STAGE, remoteExec, sshConnection, throughBastion } from "./ssh";
import { REPO_ROOT, uploadedTree } from "./tree-hash";

/**
 * The chain's steps, in the order they run: each step's `triggers` hold its predecessor's id, so
 * whatever re-runs one step re-runs every step after it, and nothing before it. Each is a
 * null_resource of that construct id, whose address is a contract (the README quotes them, and
 * state refers to them).
 */
export const CHAIN_STEPS = [
  "WaitForBastion",
  "WaitForSaltMaster",
  "SyncSaltTree",
  "AcceptMinionKeys",
  "Upgrade",
  "Orchestrate",
  "RebootForUpdates",
] as const;

export type ChainStep = (typeof CHAIN_STEPS)[number];

/** The steps added after eb9d706; the others were terraform_data resources until then. */
const STEPS_SINCE_EB9D706: readonly ChainStep[] = ["Upgrade", "RebootForUpdates"];

/** What a step has of its own: the chain adds its count and its predecessor's id. */
type StepConfig = Pick<NullResourceConfig, "dependsOn" | "provisioners"> & { readonly triggers: Record<string, string> };

export interface ProvisioningChainProps {
  readonly bastion: Bastion;
  readonly saltMaster: SaltMaster;
  readonly kubeNodes: KubeNodePool;
  /** The node pools' workers. */
  readonly workerPools: WorkerPools;
  /** The login user; its key must be in the ssh-agent of whoever runs Terraform. */
  readonly user: string;
  /**
   * The ssh_host_keys variable: the known host key (or CA key) of each host the chain logs in to,
   * by role (SSH_HOST_ROLES). A role without one is not checked. @default - none is checked
   */
  readonly sshHostKeys?: unknown;
  /** The minion ids to accept (every machine's FQDN), the Kubernetes master's, the workers. */
  readonly layout: ClusterLayout;
  /** The content of /srv/pillar/_from_terraform.sls (see saltPillar()). */
  readonly pillar: string;
  /**
   * /srv/pillar/_cloud.sls, the Kubernetes master's alone (see CloudIntegration): its sensitive
   * content, and a hash of its non-secret values that re-syncs the pillar when they change.
   * @default - no _cloud.sls is written
   */
  readonly cloudPillar?: { readonly content: string; readonly version: string };
  /** The microk8s channel the cluster runs (microk8s_channel, validated at plan time; null keeps the nodes'): the upgrade step rolls it. */
  readonly microk8sChannel: string;
  /**
   * Whether the last step reboots the Kubernetes nodes whose package updates need it (a bool
   * token, from reboot_for_updates); when false it only names them.
   */
  readonly rebootForUpdates: boolean | IResolvable;
  /**
   * Root's console password, set on every minion through Salt (as a crypt hash) before the
   * orchestration: `secret` is what set-root-password.sh reads ("" when the password is not to
   * be set), meant for the ephemeral root_password, which Terraform keeps out of plans and state;
   * a change of `version` sets it again.
   * @default - root's password is not managed by the chain
   */
  readonly rootPassword?: { readonly secret: string; readonly version: string };
  /** Whether the chain exists at all (a bool token, from run_provisioners). */
  readonly enabled: boolean | IResolvable;
  /** @default the repository's salt/ */
  readonly saltTree?: string;
  /** @default the repository's pillar/ */
  readonly pillarTree?: string;
  /** @default the repository's provisioners/ */
  readonly scripts?: string;
  /** Seconds to wait for cloud-init on each host. @default ProvisioningChain.DEFAULT_CLOUD_INIT_TIMEOUT */
  readonly cloudInitTimeout?: number;
  /** Seconds to wait for every minion's key and first answer. @default ProvisioningChain.DEFAULT_MINION_TIMEOUT */
  readonly minionTimeout?: number;
}

/**
 * The provisioning chain, all through the bastion with the deployer's ssh-agent: wait for
 * cloud-init on the bastion, then on the Salt master; sync the Salt tree and the pillar that
 * Terraform writes; accept exactly the expected minion keys; roll a new microk8s channel through
 * the nodes that run an older one (orch.upgrade, nothing when none does); run the orchestration;
 * reboot the Kubernetes nodes whose updates need it, when asked to (orch.reboot).
 * Each step is a null_resource (hashicorp/null) whose triggers include its predecessor's id, so
 * whatever re-runs one step re-runs the steps after it. The chain has the same seven steps at any
 * number of nodes: workers converge in parallel inside the orchestrations. The orchestration step also
 * sets root's console password first, when asked to.
 *
 * Each worker also gets a NodeMembership record (./node-membership.ts) whose destroy-time
 * provisioner removes the node from the microk8s cluster before Terraform deletes the machine,
 * and each Kubernetes node a drain record (./node-drain.ts) that its machine's replacement
 * replaces, draining the node first.
 *
 * The steps' Terraform addresses are a contract (the README quotes them, and state refers to
 * them): the construct ids here stay as they are, and so does this construct's in the stack,
 * "SaltProvisioner", the class's name before it was called for what it does (its errors still
 * name it so).
 */
export class ProvisioningChain extends Construct {
  static readonly DEFAULT_CLOUD_INIT_TIMEOUT = 1800;
  static readonly DEFAULT_MINION_TIMEOUT = 900;

  /** The steps, by their ids (CHAIN_STEPS). */
  readonly steps: { readonly [S in ChainStep]: NullResource };
  /** One per worker: removing one removes that node from the cluster first. */
  readonly nodeMembership: DataResource;
  /** The same for the node pools' workers, by host name. */
  readonly poolNodeMembership: DataResource;
  /** One per Kubernetes node, replaced with its machine: the old node is drained first. */
  readonly nodeDrains: NodeDrains;

  constructor(scope: Construct, id: string, props: ProvisioningChainProps) {
    super(scope, id);
    const cloudInitTimeout = props.cloudInitTimeout ?? ProvisioningChain.DEFAULT_CLOUD_INIT_TIMEOUT;
    const minionTimeout = props.minionTimeout ?? ProvisioningChain.DEFAULT_MINION_TIMEOUT;
    for (const [name, value] of [
      ["cloudInitTimeout", cloudInitTimeout],
      ["minionTimeout", minionTimeout],
    ] as const) {
      if (!Token.isUnresolved(value) && !(Number.isInteger(value) && value > 0)) {
        throw new Error(`SaltProvisioner: ${name} must be a whole number of seconds above 0 (got ${value})`);
      }
    }
    const saltTree = uploadedTree(this, "SaltTree", { dir: props.saltTree ?? path.join(REPO_ROOT, "salt"), prop: "saltTree" });
    const pillarTree = uploadedTree(this, "PillarTree", { dir: props.pillarTree ?? path.join(REPO_ROOT, "pillar"), prop: "pillarTree" });
    const scripts = uploadedTree(this, "Scripts", { dir: props.scripts ?? path.join(REPO_ROOT, "provisioners"), prop: "scripts" });

    const { bastion, saltMaster, kubeNodes } = props;
    const minionIds = props.layout.minionIds;
    const count = () => TerraformCount.of(Token.asNumber(Fn.conditional(props.enabled, 1, 0)));
    const idOf = (step: NullResource) => Fn.one(splat(step, "id"));
    const { bastion: bastionHostKey, salt_master: saltMasterHostKey } =
      props.sshHostKeys === undefined ? { bastion: undefined, salt_master: undefined } : hostKeys(this, props.sshHostKeys);
    const toBastion = sshConnection(props.user, bastion.publicIp, bastionHostKey);
    const toSaltMaster = throughBastion(
      sshConnection(props.user, saltMaster.privateIp, saltMasterHostKey),
      bastion.publicIp,
      bastionHostKey,
    );
    const uploadScripts = (connection: SSHProvisionerConnection): (RemoteExecProvisioner | FileProvisioner)[] => [
      remoteExec(connection, `rm -rf ${REMOTE_BIN}`, `mkdir -p ${REMOTE_BIN}`),
      // The trailing slash uploads the directory's contents into REMOTE_BIN, not a directory named after the asset's hash.
      { type: "file", source: `${scripts.asset.path}/`, destination: REMOTE_BIN, connection },
    ];
    const waitForCloudInit = (connection: SSHProvisionerConnection) =>
      remoteExec(connection, `bash ${REMOTE_BIN}/wait-cloud-init.sh ${cloudInitTimeout}`);

    // Each step's own triggers and provisioners, by step; the loop below chains them in
    // CHAIN_STEPS' order. null_resource triggers are a map of strings: lists go in as jsonencode().
    const fixedIds = { saltMaster: saltMaster.instance.id, bastion: bastion.instance.id, kubeMaster: kubeNodes.master.id };
    const workerIds = kubeNodes.workerIds;
    // Each minion id's machine, in minionIds' order (the machine order).
    const minionMachineIds = inMachineOrder(fixedIds, workerIds, props.workerPools.workerIds);
    // The trigger keeps the order it was first written in, the bastion first: any other would
    // change its value, and re-run the chain on every deployment.
    const machineIds = inMachineOrder(fixedIds, workerIds, props.workerPools.workerIds, ["bastion", "saltMaster", "kubeMaster"]);
    // An ephemeral value cannot be a trigger: the password is set again whenever the orchestration
    // runs, and when root_password_hash changes.
    const setRootPassword: (RemoteExecProvisioner | FileProvisioner)[] =
      props.rootPassword === undefined
        ? []
        : [
            remoteExec(toSaltMaster, `install -d -m 0700 ${REMOTE_SECRETS}`),
            { type: "file", content: props.rootPassword.secret, destination: `${REMOTE_SECRETS}/root-password`, connection: toSaltMaster },
            remoteExec(
              toSaltMaster,
              Fn.format(`sudo bash ${REMOTE_BIN}/set-root-password.sh ${REMOTE_SECRETS}/root-password %s`, [Fn.join(" ", minionIds)]),
            ),
          ];
    const unset = Op.eq(props.microk8sChannel, Token.nullValue());
    const steps: Record<ChainStep, StepConfig> = {
      WaitForBastion: {
        triggers: { instance: bastion.instance.id, scripts: scripts.hash },
        dependsOn: [bastion.floatingIpAssociation],
        provisioners: [...uploadScripts(toBastion), waitForCloudInit(toBastion)],
      },
      WaitForSaltMaster: {
        triggers: { instance: saltMaster.instance.id, volume: saltMaster.volumeAttachment.id },
        provisioners: [...uploadScripts(toSaltMaster), waitForCloudInit(toSaltMaster)],
      },
      SyncSaltTree: {
        triggers: {
          salt_tree: saltTree.hash,
          pillar_tree: pillarTree.hash,
          pillar_data: Fn.sha256(props.pillar),
          ...(props.cloudPillar === undefined ? {} : { cloud_pillar: props.cloudPillar.version }),
        },
        provisioners: [
          // 0700: the staged _cloud.sls holds the cloud credential until install-salt-tree.sh moves it.
          remoteExec(
            toSaltMaster,
            `rm -rf ${REMOTE_STAGE}`,
            `install -d -m 0700 ${REMOTE_STAGE}`,
            `mkdir -p ${REMOTE_STAGE}/salt ${REMOTE_STAGE}/pillar`,
          ),
          { type: "file", source: `${saltTree.asset.path}/`, destination: `${REMOTE_STAGE}/salt`, connection: toSaltMaster },
          { type: "file", source: `${pillarTree.asset.path}/`, destination: `${REMOTE_STAGE}/pillar`, connection: toSaltMaster },
          { type: "file", content: props.pillar, destination: `${REMOTE_STAGE}/_from_terraform.sls`, connection: toSaltMaster },
          ...(props.cloudPillar === undefined
            ? []
            : [
                {
                  type: "file",
                  content: props.cloudPillar.content,
                  destination: `${REMOTE_STAGE}/_cloud.sls`,
                  connection: toSaltMaster,
                } as const,
              ]),
          remoteExec(toSaltMaster, `sudo bash ${REMOTE_BIN}/install-salt-tree.sh ${REMOTE_STAGE}`),
        ],
      },
      AcceptMinionKeys: {
        // A re-created machine brings a new key, so the machines' ids are triggers too.
        triggers: { minions: Fn.jsonencode(minionIds), machines: Fn.jsonencode(machineIds) },
        provisioners: [
          remoteExec(
            toSaltMaster,
            // ID=MACHINE: the script deletes an id's old key when its machine was replaced.
            Fn.format(`sudo bash ${REMOTE_BIN}/accept-minion-keys.sh --timeout %d %s`, [
              minionTimeout,
              Fn.join(" ", Fn.formatlist("%s=%s", [minionIds, minionMachineIds])),
            ]),
          ),
        ],
      },
      // Before orch.deploy, whose release check stops while the cluster runs another minor. What
      // the step will do is in the triggers, one line for the plan to show; a changed channel
      // re-runs the sync anyway (the pillar holds it). Unset, upgrade.sh gets "" and keeps the
      // channel the nodes track.
      Upgrade: {
        triggers: {
          channel: Fn.conditional(
            unset,
            `unset: every node keeps the channel the cluster's nodes track (a new cluster installs ${NEW_CLUSTER_CHANNEL})`,
            Fn.format("%s: the nodes below it roll up one minor at a time, one node at a time", [props.microk8sChannel]),
          ),
        },
        provisioners: [
          remoteExec(
            toSaltMaster,
            Fn.format(`sudo bash ${REMOTE_BIN}/upgrade.sh %s '%s'`, [
              props.layout.kubeMaster.fqdn,
              Fn.conditional(unset, "", props.microk8sChannel),
            ]),
          ),
        ],
      },
      Orchestrate: {
        triggers: props.rootPassword === undefined ? {} : { root_password_hash: props.rootPassword.version },
        provisioners: [...setRootPassword, remoteExec(toSaltMaster, `sudo bash ${REMOTE_BIN}/orchestrate.sh orch.deploy`)],
      },
      // After orch.deploy, whose highstate updates the packages (core.packages). The variable is in
      // the triggers: turning it on reboots what needs it without another orchestration.
      RebootForUpdates: {
        triggers: { roll: Fn.tostring(props.rebootForUpdates) },
        provisioners: [
          remoteExec(
            toSaltMaster,
            Fn.format(`sudo bash ${REMOTE_BIN}/reboot.sh %s %s`, [
              Fn.tostring(props.rebootForUpdates),
              Fn.join(" ", props.layout.kubeNodeIds),
            ]),
          ),
        ],
      },
    };
    // Each step after the first is triggered by its predecessor's id too: whatever re-runs a step
    // re-runs every step after it.
    const created: Partial<Record<ChainStep, NullResource>> = {};
    let previous: NullResource | undefined;
    for (const step of CHAIN_STEPS) {
      const { triggers, ...config } = steps[step];
      previous = new NullResource(this, step, {
        count: count(),
        triggers: previous === undefined ? triggers : { after: idOf(previous), ...triggers },
        ...config,
      });
      created[step] = previous;
    }
    this.steps = created as Record<ChainStep, NullResource>;

    // Until eb9d706 the steps the chain had then were terraform_data resources at these addresses;
    // no `moved` block can turn one into a null_resource (hashicorp/null implements no
    // MoveResourceState), so an existing deployment forgets them without destroying anything,
    // and the new steps run the (idempotent) chain once.
    forgetAsFormerType(
      CHAIN_STEPS.filter((step) => !STEPS_SINCE_EB9D706.includes(step)).map((step) => this.steps[step]),
      "terraform_data",
    );

    const membership = {
      bastion,
      saltMaster,
      layout: props.layout,
      user: props.user,
      bastionHostKey,
      saltMasterHostKey,
      enabled: props.enabled,
      after: [this.steps.Orchestrate, saltMaster.instance, bastion.floatingIpAssociation],
    };
    this.nodeMembership = nodeMembership(this, "NodeMembership", { ...membership, workers: kubeNodes });
    this.poolNodeMembership = nodeMembership(this, "PoolNodeMembership", { ...membership, workers: props.workerPools });
    this.nodeDrains = nodeDrains(this, {
      ...membership,
      kubeNodes,
      workerPools: props.workerPools,
      memberships: { workers: this.nodeMembership, poolWorkers: this.poolNodeMembership },
    });
  }
}
