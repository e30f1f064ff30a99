import {
  Fn,
  HttpBackend,
  HttpBackendConfig,
  LocalBackend,
  Op,
  TerraformCount,
  TerraformLocal,
  TerraformStack,
  TerraformVariable,
  Token,
} from "cdktf";
import { NullProvider } from "@cdktf/provider-null/lib/provider";
import { Construct } from "constructs";
import { ComputeKeypairV2 } from "../.gen/providers/openstack/compute-keypair-v2";
import { DataOpenstackComputeKeypairV2 } from "../.gen/providers/openstack/data-openstack-compute-keypair-v2";
import { OpenstackProvider } from "../.gen/providers/openstack/provider";
import { BackendKind } from "../config/load";
import { KubeOnOsConfig, VariableName } from "../config/parameters";
import { declareQuotaUsage, declareVariables } from "./variables";
import { ApiLoadBalancer } from "./api-load-balancer";
import { AvailabilityZones } from "./availability-zones";
import { VolumeTypes } from "./volume-types";
import { Bastion } from "./bastion";
import { forgetAsFormerType, splat } from "./cdktf-workarounds";
import { CloudIntegration } from "./cloud-integration";
import { ClusterLayout, inMachineOrder } from "./cluster-layout";
import { controlPlaneFloor } from "./control-plane-floor";
import { KubeNodePool } from "./kube-node-pool";
import { baseImageId, deployKeypairName, MachineProps } from "./machine";
import { Network } from "./network";
import { stackOutputs } from "./outputs";
import { SaltProvisioner } from "./provisioning/chain";
import { saltPillar } from "./provisioning/pillar";
import { Quotas } from "./quotas";
import { RootPassword } from "./root-password";
import { SaltMaster } from "./salt-master";
import { withoutTerraformVersionProbes } from "./version-probes";
import { WorkerPools } from "./worker-pools";

export interface KubeOnOsStackProps {
  /** Validated parameters; they become the Terraform variables' defaults. */
  readonly config: KubeOnOsConfig;
  /**
   * `http` leaves the backend partial, for TF_HTTP_* (GitLab-managed state) to complete;
   * `local` keeps state in a local file, for experiments.
   * @default "http"
   */
  readonly backend?: BackendKind;
  /** The Salt states the chain uploads to /srv/salt. @default the repository's salt/ */
  readonly saltTree?: string;
  /** The pillar the chain uploads to /srv/pillar. @default the repository's pillar/ */
  readonly pillarTree?: string;
}

/** The HTTP methods GitLab's Terraform state API uses for locking. */
export const HTTP_BACKEND_LOCKING = { lockMethod: "POST", unlockMethod: "DELETE" } as const;

/** Everything kube-on-os deploys into one OpenStack project. */
export class KubeOnOsStack extends TerraformStack {
  /** One Terraform variable per parameter, by its Terraform name. */
  readonly variables: { readonly [K in VariableName]: TerraformVariable };
  readonly layout: ClusterLayout;
  readonly network: Network;
  readonly bastion: Bastion;
  readonly saltMaster: SaltMaster;
  readonly kubeNodes: KubeNodePool;
  /** The node pools' workers (node_pools). */
  readonly workerPools: WorkerPools;
  /** The Octavia load balancer in front of the control plane (count 0 without one). */
  readonly apiLoadBalancer: ApiLoadBalancer;
  /** The cloud controller manager's and Cinder CSI's application credential and settings. */
  readonly cloudIntegration: CloudIntegration;
  /** The plan-time quota check. */
  readonly quotas: Quotas;
  readonly provisioner: SaltProvisioner;

  constructor(scope: Construct, id: string, props: KubeOnOsStackProps) {
    super(scope, id);
    const backend = props.backend ?? "http";

    if (backend === "local") {
      new LocalBackend(this, {});
    } else {
      // No address: TF_HTTP_ADDRESS, TF_HTTP_LOCK_ADDRESS, TF_HTTP_UNLOCK_ADDRESS,
      // TF_HTTP_USERNAME and TF_HTTP_PASSWORD complete it at init time, so no state URL or
      // credential is ever written into the synthesized JSON. cdktf types `address` as required
      // although Terraform accepts a partial backend block, hence the cast.
      new HttpBackend(this, { ...HTTP_BACKEND_LOCKING } as unknown as HttpBackendConfig);
    }

    // Credentials come from OS_* / OS_CLOUD (clouds.yaml) / application credentials only.
    new OpenstackProvider(this, "openstack", {});
    // hashicorp/null for the provisioning chain, at the version its bindings were generated
    // from: the registry's for real deploys, the toolchain's stand-in in the offline tests.
    new NullProvider(this, "null", {});

    this.variables = declareVariables(this, props.config);

    const v = this.variables;
    this.layout = new ClusterLayout(this, {
      domain: v.deploy_domain_name.stringValue,
      publicCidr: v.public_network_cidr.stringValue,
      privateCidr: v.private_network_cidr.stringValue,
      nodeCount: v.num_kube_nodes.numberValue,
      zones: v.kube_node_availability_zones.listValue,
      pools: v.node_pools.value,
    });
    new AvailabilityZones(this, "AvailabilityZones", { defaultPool: v.kube_node_availability_zones.listValue, pools: v.node_pools.value });
    new VolumeTypes(this, "VolumeTypes", { defaultPool: v.kube_node_boot_volume_type.stringValue, pools: v.node_pools.value });
    this.network = new Network(this, "Network", {
      externalNetworkName: v.external_network_name.stringValue,
      routerId: v.router_id.stringValue,
      publicNetworkId: v.public_network_id.stringValue,
      namePrefix: v.deploy_domain_name.stringValue,
      publicCidr: v.public_network_cidr.stringValue,
      privateCidr: v.private_network_cidr.stringValue,
      dnsNameservers: v.dns_nameservers.listValue,
      sshAllowedCidrs: v.ssh_allowed_cidrs.listValue,
      apiAllowedCidrs: v.api_allowed_cidrs.listValue,
      lastPrivateStaticHost: this.layout.lastPrivateHost,
    });

    // A new keypair from deploy_ssh_public_key, or the existing keypair_name, or none.
    // (length() < 1, not == "": Op drops a falsy right operand, constructs/cdktf-workarounds.ts.)
    // The key is sensitive to Terraform (constructs/variables.ts); whether one is given is not.
    const newKeypairs = Token.asNumber(Fn.conditional(Fn.nonsensitive(Op.lt(Fn.lengthOf(v.deploy_ssh_public_key.stringValue), 1)), 0, 1));
    const keypair = new ComputeKeypairV2(this, "DeployKeypair", {
      count: TerraformCount.of(newKeypairs),
      name: deployKeypairName(v.deploy_domain_name.stringValue),
      publicKey: v.deploy_ssh_public_key.stringValue,
    });
    const keyPair = Token.asString(
      Fn.conditional(Op.gte(Fn.lengthOf(v.keypair_name.stringValue), 1), v.keypair_name.stringValue, Fn.one(splat(keypair, "name"))),
    );
    // An existing keypair is read at plan time: a name the project lacks fails the plan, naming
    // it, rather than each server at apply time after the network was created.
    new DataOpenstackComputeKeypairV2(this, "ExistingKeypair", {
      count: TerraformCount.of(Token.asNumber(Fn.conditional(Op.gte(Fn.lengthOf(v.keypair_name.stringValue), 1), 1, 0))),
      name: v.keypair_name.stringValue,
    }).overrideLogicalId("keypair_name");
    const rootPassword = new RootPassword(this);
    const machine: MachineProps = {
      network: this.network,
      imageId: baseImageId(this, v.base_image.stringValue),
      layout: this.layout,
      keyPair,
      bootstrap: {
        dnsNameservers: v.dns_nameservers.listValue,
        saltMasterIp: this.layout.saltMaster.privateIp,
        saltMasterFqdn: this.layout.saltMaster.fqdn,
        rootPasswordUsers: rootPassword.cloudInitUsers,
        privateCidr: v.private_network_cidr.stringValue,
      },
    };
    this.bastion = new Bastion(this, "Bastion", { ...machine, flavor: v.bastion_flavor.stringValue });
    this.saltMaster = new SaltMaster(this, "SaltMaster", {
      ...machine,
      flavor: v.salt_master_flavor.stringValue,
      volumeSize: v.salt_volume_size.numberValue,
    });
    this.kubeNodes = new KubeNodePool(this, "KubeNodes", {
      ...machine,
      flavor: v.kube_node_flavor.stringValue,
      podCidr: v.pod_cidr.stringValue,
      serviceCidr: v.service_cidr.stringValue,
      serverGroupPolicy: v.kube_server_group_policy.stringValue,
      bootVolume: { size: v.kube_node_boot_volume_size.numberValue, type: v.kube_node_boot_volume_type.stringValue },
    });
    this.workerPools = new WorkerPools(this, "WorkerPools", {
      ...machine,
      pools: v.node_pools.value,
      defaultFlavor: v.kube_node_flavor.stringValue,
      defaultImage: v.base_image.stringValue,
      podCidr: v.pod_cidr.stringValue,
      serviceCidr: v.service_cidr.stringValue,
      serverGroupPolicy: v.kube_server_group_policy.stringValue,
    });
    this.apiLoadBalancer = new ApiLoadBalancer(this, "ApiLoadBalancer", {
      network: this.network,
      layout: this.layout,
      mode: v.api_load_balancer.stringValue,
      allowedCidrs: v.api_allowed_cidrs.listValue,
    });
    this.cloudIntegration = new CloudIntegration(this, "CloudIntegration", {
      enabled: v.cloud_integration.booleanValue,
      domain: v.deploy_domain_name.stringValue,
      network: this.network,
      caCertificate: v.openstack_ca_certificate.stringValue,
      loadBalancerProvider: v.lb_provider.stringValue,
      loadBalancerMethod: v.lb_method.stringValue,
    });
    controlPlaneFloor(this, "ControlPlaneFloor", this.layout, this.kubeNodes.master);

    this.quotas = new Quotas(this, "Quotas", {
      enabled: v.check_quotas.booleanValue,
      nodeCount: v.num_kube_nodes.numberValue,
      flavors: {
        bastion: v.bastion_flavor.stringValue,
        saltMaster: v.salt_master_flavor.stringValue,
        kubeNode: v.kube_node_flavor.stringValue,
      },
      serverGroupPolicy: v.kube_server_group_policy.stringValue,
      saltVolumeSize: v.salt_volume_size.numberValue,
      // From the variable, as the keypair's count: a reference to the keypair would make the quota
      // reads wait for it, so they would run during the apply, after the keypair.
      newKeypairs,
      securityGroups: Object.keys(this.network.securityGroups).length,
      // Each construct counts the rules it creates.
      securityGroupRules: Token.asNumber(
        [this.network.securityGroupRuleCount, this.cloudIntegration.securityGroupRules, this.apiLoadBalancer.securityGroupRules].reduce(
          (sum, rules) => Op.add(sum, rules),
        ),
      ),
      network: this.network.created,
      kubeNodeBootVolumeSize: v.kube_node_boot_volume_size.numberValue,
      apiLoadBalancers: this.apiLoadBalancer.count,
      workerPools: this.workerPools,
      usage: declareQuotaUsage(this),
    });

    // lookup() with a null default: a role without a key is not checked.
    const hostKey = (role: string) =>
      new TerraformLocal(this, `${role}_host_key`, `\${lookup(${v.ssh_host_keys.value}, "${role}", null)}`).asString;
    this.provisioner = new SaltProvisioner(this, "SaltProvisioner", {
      bastion: this.bastion,
      saltMaster: this.saltMaster,
      kubeNodes: this.kubeNodes,
      workerPools: this.workerPools,
      user: v.deploy_user.stringValue,
      bastionHostKey: hostKey("bastion"),
      saltMasterHostKey: hostKey("salt_master"),
      layout: this.layout,
      enabled: v.run_provisioners.booleanValue,
      rootPassword: { secret: rootPassword.secret, version: rootPassword.hashVersion },
      saltTree: props.saltTree,
      pillarTree: props.pillarTree,
      microk8sChannel: v.microk8s_channel.stringValue,
      rebootForUpdates: v.reboot_for_updates.booleanValue,
      cloudPillar: { content: this.cloudIntegration.pillar, version: this.cloudIntegration.pillarVersion },
      pillar: saltPillar(this, {
        layout: this.layout,
        users: v.users.value,
        publicCidr: v.public_network_cidr.stringValue,
        privateCidr: v.private_network_cidr.stringValue,
        nameservers: v.dns_nameservers.listValue,
        masterFloatingIp: this.kubeNodes.masterFloatingIp.address,
        apiLoadBalancer: this.apiLoadBalancer,
        podCidr: v.pod_cidr.stringValue,
        serviceCidr: v.service_cidr.stringValue,
        microk8sChannel: v.microk8s_channel.stringValue,
        defaultPool: { nodeCount: v.num_kube_nodes.numberValue, labels: v.kube_node_labels.value, taints: v.kube_node_taints.value },
        pools: v.node_pools.value,
        instanceIds: inMachineOrder(
          { kubeMaster: this.kubeNodes.master.id },
          splat(this.kubeNodes.workers, "id"),
          this.workerPools.workerIds,
        ),
        externalCloudProvider: v.cloud_integration.booleanValue,
      }),
    });

    // Until eb9d706 the chain's five steps were terraform_data resources at these addresses; no
    // `moved` block can turn one into a null_resource (hashicorp/null implements no
    // MoveResourceState), so an existing deployment forgets them without destroying anything,
    // and the new steps run the (idempotent) chain once.
    forgetAsFormerType(this.provisioner.steps, "terraform_data");

    stackOutputs(this, {
      layout: this.layout,
      network: this.network,
      bastion: this.bastion,
      saltMaster: this.saltMaster,
      kubeNodes: this.kubeNodes,
      workerPools: this.workerPools,
      apiLoadBalancer: this.apiLoadBalancer,
      quotas: this.quotas,
      user: v.deploy_user.stringValue,
    });
    withoutTerraformVersionProbes(this);
  }
}
