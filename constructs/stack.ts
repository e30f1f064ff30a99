import { Fn, HttpBackend, HttpBackendConfig, LocalBackend, Op, TerraformStack, TerraformVariable, Token } from "cdktf";
import { NullProvider } from "@cdktf/provider-null/lib/provider";
import { Construct } from "constructs";
import { OpenstackProvider } from "../.gen/providers/openstack/provider";
import { BackendKind } from "../config/load";
import { DHCP_RESERVE, KubeOnOsConfig, VariableName } from "../config/parameters";
import { declareQuotaUsage, declareVariables } from "./variables";
import { ApiLoadBalancer } from "./api-load-balancer";
import { AvailabilityZones } from "./availability-zones";
import { VolumeTypes } from "./volume-types";
import { sum } from "./cdktf-workarounds";
import { Bastion } from "./bastion";
import { CloudIntegration } from "./cloud-integration";
import { ClusterLayout } from "./cluster-layout";
import { controlPlaneFloor } from "./control-plane-floor";
import { KubeNodePool } from "./kube-node-pool";
import { kubeNodeBuilds } from "./kube-node-builds";
import { resourceTags } from "./resource-tags";
import { deployKeypair } from "./keypair";
import { baseImageId, MachineProps, portName } from "./machine";
import { Network } from "./networking";
import { stackOutputs } from "./outputs";
import { ProvisioningChain } from "./provisioning/chain";
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
  /** The provisioning chain, under its construct id of old, SaltProvisioner. */
  readonly provisioner: ProvisioningChain;

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

    this.network = new Network(this, "Network", {
      externalNetworkName: v.external_network_name.stringValue,
      routerId: v.router_id.stringValue,
      publicNetworkId: v.public_network_id.stringValue,
      privateNetworkId: v.private_network_id.stringValue,
      privateDhcpAddresses: Token.asNumber(Op.add(Fn.lengthOf(this.layout.poolNodes), DHCP_RESERVE)),
      privateGatewayPortName: portName(this.layout.bastion.fqdn, "private"),
      namePrefix: v.deploy_domain_name.stringValue,
      publicCidr: v.public_network_cidr.stringValue,
      privateCidr: v.private_network_cidr.stringValue,
      dnsNameservers: v.dns_nameservers.listValue,
      sshAllowedCidrs: v.ssh_allowed_cidrs.listValue,
      apiAllowedCidrs: v.api_allowed_cidrs.listValue,
      access: {
        bastion: { ingressRules: v.bastion_ingress_rules.listValue, securityGroups: v.bastion_security_groups.listValue },
        control_plane: {
          ingressRules: v.control_plane_ingress_rules.listValue,
          securityGroups: v.control_plane_security_groups.listValue,
        },
        worker: { ingressRules: v.worker_ingress_rules.listValue, securityGroups: v.worker_security_groups.listValue },
      },
      lastPrivateStaticHost: this.layout.lastPrivateHost,
    });

    const keypair = deployKeypair(this, "DeployKeypair", {
      domain: v.deploy_domain_name.stringValue,
      publicKey: v.deploy_ssh_public_key.stringValue,
      existingName: v.keypair_name.stringValue,
    });
    const rootPassword = new RootPassword(this);
    const machine: MachineProps = {
      network: this.network,
      imageId: baseImageId(this, "BaseImage", { image: v.base_image.stringValue }),
      layout: this.layout,
      keyPair: keypair.name,
      bootstrap: {
        dnsNameservers: v.dns_nameservers.listValue,
        saltMasterIp: this.layout.saltMaster.privateIp,
        saltMasterFqdn: this.layout.saltMaster.fqdn,
        rootPasswordUsers: rootPassword.cloudInitUsers,
        privateCidr: v.private_network_cidr.stringValue,
      },
    };
    this.bastion = new Bastion(this, "Bastion", {
      ...machine,
      flavor: v.bastion_flavor.stringValue,
      floatingIp: v.bastion_floating_ip.stringValue,
    });
    this.saltMaster = new SaltMaster(this, "SaltMaster", {
      ...machine,
      flavor: v.salt_master_flavor.stringValue,
      volumeSize: v.salt_volume_size.numberValue,
    });
    this.kubeNodes = new KubeNodePool(this, "KubeNodes", {
      ...machine,
      flavor: v.kube_node_flavor.stringValue,
      floatingIp: v.master_floating_ip.stringValue,
      podCidr: v.pod_cidr.stringValue,
      serviceCidr: v.service_cidr.stringValue,
      serverGroupPolicy: v.kube_server_group_policy.stringValue,
      bootVolume: { size: v.kube_node_boot_volume_size.numberValue, type: v.kube_node_boot_volume_type.stringValue },
      controlPlane: {
        flavor: v.control_plane_flavor.stringValue,
        image: v.control_plane_image.stringValue,
        bootVolumeSize: v.control_plane_boot_volume_size.numberValue,
        bootVolumeType: v.control_plane_boot_volume_type.stringValue,
      },
    });
    new VolumeTypes(this, "VolumeTypes", {
      defaultPool: v.kube_node_boot_volume_type.stringValue,
      controlPlane: this.kubeNodes.machines.controlPlane.bootVolume.type,
      pools: v.node_pools.value,
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
      floatingIp: v.api_floating_ip.stringValue,
    });
    this.cloudIntegration = new CloudIntegration(this, "CloudIntegration", {
      enabled: v.cloud_integration.booleanValue,
      domain: v.deploy_domain_name.stringValue,
      network: this.network,
      caCertificate: v.openstack_ca_certificate.stringValue,
      loadBalancerProvider: v.lb_provider.stringValue,
      loadBalancerMethod: v.lb_method.stringValue,
    });
    kubeNodeBuilds(this, { layout: this.layout, kubeNodes: this.kubeNodes, workerPools: this.workerPools });
    controlPlaneFloor(this, "ControlPlaneFloor", { layout: this.layout, guarded: this.kubeNodes.master });

    this.quotas = new Quotas(this, "Quotas", {
      enabled: v.check_quotas.booleanValue,
      nodeCount: v.num_kube_nodes.numberValue,
      flavors: {
        bastion: v.bastion_flavor.stringValue,
        saltMaster: v.salt_master_flavor.stringValue,
        kubeNode: v.kube_node_flavor.stringValue,
        controlPlane: this.kubeNodes.machines.controlPlane.flavor,
      },
      serverGroupPolicy: v.kube_server_group_policy.stringValue,
      saltVolumeSize: v.salt_volume_size.numberValue,
      newKeypairs: keypair.created,
      securityGroups: this.network.securityGroupCount,
      securityGroupRules: [
        this.network.securityGroupRuleCount,
        this.cloudIntegration.securityGroupRules,
        this.apiLoadBalancer.securityGroupRules,
      ],
      network: this.network.created,
      kubeNodeBootVolumeSize: v.kube_node_boot_volume_size.numberValue,
      controlPlaneBootVolumeSize: this.kubeNodes.machines.controlPlane.bootVolume.size,
      apiLoadBalancers: this.apiLoadBalancer.count,
      floatingIps: sum([
        this.bastion.floatingIpAllocated,
        this.kubeNodes.masterFloatingIpAllocated,
        this.apiLoadBalancer.floatingIpAllocated,
      ]),
      workerPools: this.workerPools,
      serverMetadataItems: Token.asNumber(Fn.lengthOf(v.server_metadata.value)),
      usage: declareQuotaUsage(this),
    });

    const pillar = saltPillar(this, {
      layout: this.layout,
      users: v.users.value,
      publicCidr: v.public_network_cidr.stringValue,
      privateCidr: v.private_network_cidr.stringValue,
      nameservers: v.dns_nameservers.listValue,
      masterFloatingIp: this.kubeNodes.masterPublicIp,
      apiLoadBalancer: this.apiLoadBalancer,
      podCidr: v.pod_cidr.stringValue,
      serviceCidr: v.service_cidr.stringValue,
      microk8sChannel: v.microk8s_channel.stringValue,
      defaultPool: { nodeCount: v.num_kube_nodes.numberValue, labels: v.kube_node_labels.value, taints: v.kube_node_taints.value },
      pools: v.node_pools.value,
      kubeNodes: this.kubeNodes,
      workerPools: this.workerPools,
      externalCloudProvider: v.cloud_integration.booleanValue,
    });
    this.provisioner = new ProvisioningChain(this, "SaltProvisioner", {
      bastion: this.bastion,
      saltMaster: this.saltMaster,
      kubeNodes: this.kubeNodes,
      workerPools: this.workerPools,
      user: v.deploy_user.stringValue,
      sshHostKeys: v.ssh_host_keys.value,
      layout: this.layout,
      enabled: v.run_provisioners.booleanValue,
      rootPassword: { secret: rootPassword.secret, version: rootPassword.hashVersion },
      saltTree: props.saltTree,
      pillarTree: props.pillarTree,
      microk8sChannel: v.microk8s_channel.stringValue,
      rebootForUpdates: v.reboot_for_updates.booleanValue,
      cloudPillar: { content: this.cloudIntegration.pillar, version: this.cloudIntegration.pillarVersion },
      pillar: pillar.content,
    });

    resourceTags(this, {
      domain: v.deploy_domain_name.stringValue,
      tags: v.tags.listValue,
      serverMetadata: Token.asStringMap(v.server_metadata.value),
    });
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
      pillarData: pillar.data,
    });
    withoutTerraformVersionProbes(this);
  }
}
