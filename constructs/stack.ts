import {
  Fn,
  HttpBackend,
  HttpBackendConfig,
  LocalBackend,
  Op,
  TerraformCount,
  TerraformLocal,
  TerraformOutput,
  TerraformStack,
  TerraformVariable,
  Token,
} from "cdktf";
import { NullProvider } from "@cdktf/provider-null/lib/provider";
import { Construct } from "constructs";
import { ComputeKeypairV2 } from "../.gen/providers/openstack/compute-keypair-v2";
import { OpenstackProvider } from "../.gen/providers/openstack/provider";
import { BackendKind } from "../config/load";
import { KubeOnOsConfig, VariableName } from "../config/parameters";
import { declareVariables } from "../config/terraform-variables";
import { Bastion } from "./bastion";
import { HOSTS } from "./cluster-layout";
import { KubeNodePool } from "./kube-node-pool";
import { deployKeypairName, fqdn, MachineProps, splat } from "./machine";
import { Network } from "./network";
import { Quotas } from "./quotas";
import { SaltMaster } from "./salt-master";
import { SaltProvisioner, saltPillar } from "./salt-provisioner";

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
  readonly network: Network;
  readonly bastion: Bastion;
  readonly saltMaster: SaltMaster;
  readonly kubeNodes: KubeNodePool;
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
    this.network = new Network(this, "Network", {
      externalNetworkName: v.external_network_name.stringValue,
      namePrefix: v.deploy_domain_name.stringValue,
      publicCidr: v.public_network_cidr.stringValue,
      privateCidr: v.private_network_cidr.stringValue,
      dnsNameservers: v.dns_nameservers.listValue,
      sshAllowedCidrs: v.ssh_allowed_cidrs.listValue,
      apiAllowedCidrs: v.api_allowed_cidrs.listValue,
      lastPrivateStaticHost: KubeNodePool.lastPrivateHost(v.num_kube_nodes.numberValue),
    });

    // A new keypair from deploy_ssh_public_key, or the existing keypair_name, or none.
    // (cdktf renders a falsy right operand of Op as "undefined", hence length() < 1, not == "".)
    const keypair = new ComputeKeypairV2(this, "DeployKeypair", {
      count: TerraformCount.of(Token.asNumber(Fn.conditional(Op.lt(Fn.lengthOf(v.deploy_ssh_public_key.stringValue), 1), 0, 1))),
      name: deployKeypairName(v.deploy_domain_name.stringValue),
      publicKey: v.deploy_ssh_public_key.stringValue,
    });
    const keyPair = Token.asString(
      Fn.conditional(Op.gte(Fn.lengthOf(v.keypair_name.stringValue), 1), v.keypair_name.stringValue, Fn.one(splat(keypair, "name"))),
    );
    // Root gets a console password only from a hash, and only when asked to. The plaintext
    // root_password is ephemeral, so it can never be part of user_data.
    const rootPasswordUsers = new TerraformLocal(
      this,
      "root_password_users",
      '${var.set_root_password && var.root_password_hash != null ? [{ name = "root", password = var.root_password_hash, type = "hash" }] : []}',
    );
    const machine: MachineProps = {
      network: this.network,
      imageId: v.base_image.stringValue,
      domain: v.deploy_domain_name.stringValue,
      keyPair,
      bootstrap: {
        dnsNameservers: v.dns_nameservers.listValue,
        saltMasterIp: this.network.privateAddress(HOSTS.saltMasterPrivate),
        saltMasterFqdn: fqdn(SaltMaster.HOST, v.deploy_domain_name.stringValue),
        rootPasswordUsers: rootPasswordUsers.asString,
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
      nodeCount: v.num_kube_nodes.numberValue,
      flavor: v.kube_node_flavor.stringValue,
      podCidr: v.pod_cidr.stringValue,
      serviceCidr: v.service_cidr.stringValue,
      serverGroupPolicy: v.kube_server_group_policy.stringValue,
    });

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
      newKeypairs: Token.asNumber(Fn.lengthOf(splat(keypair, "name"))),
      securityGroups: Object.keys(this.network.securityGroups).length,
      securityGroupRules: this.network.securityGroupRuleCount,
    });

    const domain = v.deploy_domain_name.stringValue;
    const minionIds = Fn.concat([
      Fn.formatlist("%s.%s", [[SaltMaster.HOST, Bastion.HOST, KubeNodePool.MASTER_HOST], domain]),
      this.kubeNodes.workerFqdns,
    ]);
    // lookup() with a null default: a role without a key is not checked.
    const hostKey = (role: string) =>
      new TerraformLocal(this, `${role}_host_key`, `\${lookup(${v.ssh_host_keys.value}, "${role}", null)}`).asString;
    this.provisioner = new SaltProvisioner(this, "SaltProvisioner", {
      bastion: this.bastion,
      saltMaster: this.saltMaster,
      kubeNodes: this.kubeNodes,
      nodeCount: v.num_kube_nodes.numberValue,
      user: v.deploy_user.stringValue,
      bastionHostKey: hostKey("bastion"),
      saltMasterHostKey: hostKey("salt_master"),
      minionIds,
      enabled: v.run_provisioners.booleanValue,
      // cdktf renders a null literal on the right of Op.neq as undefined, so the test is written out.
      rootPassword: `\${var.set_root_password && var.root_password != null ? var.root_password : ""}`,
      saltTree: props.saltTree,
      pillarTree: props.pillarTree,
      pillar: saltPillar(this, {
        users: v.users.value,
        domain,
        publicCidr: v.public_network_cidr.stringValue,
        privateCidr: v.private_network_cidr.stringValue,
        nameservers: v.dns_nameservers.listValue,
        nodeCount: v.num_kube_nodes.numberValue,
        masterFloatingIp: this.kubeNodes.masterFloatingIp.address,
        podCidr: v.pod_cidr.stringValue,
        serviceCidr: v.service_cidr.stringValue,
      }),
    });

    // Until eb9d706 the chain's five steps were terraform_data resources at these addresses; no
    // `moved` block can turn one into a null_resource (hashicorp/null implements no
    // MoveResourceState), so an existing deployment forgets them without destroying anything,
    // and the new steps run the (idempotent) chain once. cdktf 0.21 has no construct for
    // `removed` blocks, hence the override.
    this.addOverride(
      "removed",
      this.provisioner.steps.map((step) => ({ from: `terraform_data.${step.friendlyUniqueId}`, lifecycle: { destroy: false } })),
    );

    const outputs: [string, string, string][] = [
      ["external_network_id", this.network.externalNetwork.id, "ID of the external network the router uplinks to."],
      ["router_id", this.network.router.id, "ID of the cluster's router."],
      ["public_network_id", this.network.publicNetwork.id, "ID of the public network (bastion, Kubernetes master)."],
      ["public_subnet_id", this.network.publicSubnet.id, "ID of the public subnet."],
      ["private_network_id", this.network.privateNetwork.id, "ID of the private network (every machine)."],
      ["private_subnet_id", this.network.privateSubnet.id, "ID of the private subnet, whose gateway is the bastion."],
      ["bastion_floating_ip", this.bastion.publicIp, "The bastion's floating IP: the SSH jump host to every machine."],
      ["master_floating_ip", this.kubeNodes.masterFloatingIp.address, "The Kubernetes master's floating IP (API on 16443, ingress)."],
      ["salt_volume_id", this.saltMaster.volume.id, "ID of the Salt master's persistent volume; it survives re-creating the instance."],
    ];
    for (const [name, value, description] of outputs) {
      new TerraformOutput(this, name, { value, description });
    }
    new TerraformOutput(this, "quota_needs", {
      description: "What this deployment counts against the project's Nova, Cinder and Neutron quotas (docs/quotas.md).",
      value: this.quotas.needsLocal.expression,
    });
    // Lists and format strings are built with format()/formatlist() rather than interpolated
    // TypeScript strings: cdktf cannot nest a token-bearing string inside a function call.
    const user = v.deploy_user.stringValue;
    const jump = `${user}@${this.bastion.publicIp}`;
    const jumpHost = Fn.format("%s@%s", [user, this.bastion.publicIp]);
    const masterPrivateIp = this.network.privateAddress(HOSTS.kubeMasterPrivate);
    const privateHosts = Fn.concat([
      Fn.formatlist("%s.%s", [[SaltMaster.HOST, KubeNodePool.MASTER_HOST], domain]),
      this.kubeNodes.workerFqdns,
    ]);
    const privateIps = Fn.concat([[this.saltMaster.privateIp, masterPrivateIp], splat(this.kubeNodes.workers, "access_ip_v4")]);
    new TerraformOutput(this, "ssh_config", {
      description: "An ~/.ssh/config snippet that reaches every machine by its FQDN, through the bastion.",
      value: Fn.join("", [
        `Host ${this.bastion.fqdn}\n  HostName ${this.bastion.publicIp}\n  User ${user}\n`,
        Fn.join(
          "",
          Fn.formatlist("Host %s\n  HostName %s\n  User %s\n  ProxyJump %s\n", [
            privateHosts,
            privateIps,
            user,
            Fn.format("%s.%s", [Bastion.HOST, domain]),
          ]),
        ),
      ]),
    });
    new TerraformOutput(this, "ssh_commands", {
      description: "The ssh command that logs in to each machine, by FQDN (= minion id); private hosts through the bastion.",
      value: Fn.zipmap(
        Fn.concat([Fn.formatlist("%s.%s", [[Bastion.HOST], domain]), privateHosts]),
        Fn.concat([[Fn.format("ssh %s", [jumpHost])], Fn.formatlist("ssh -J %s %s@%s", [jumpHost, user, privateIps])]),
      ),
    });
    new TerraformOutput(this, "kubeconfig_command", {
      description: "Fetches the cluster's kubeconfig through the bastion, pointed at the master's floating IP.",
      value:
        `ssh -J ${jump} ${user}@${masterPrivateIp} sudo microk8s config` +
        ` | sed 's#server: https://[^:]*:#server: https://${this.kubeNodes.masterFloatingIp.address}:#' > kubeconfig`,
    });
    new TerraformOutput(this, "minion_ids", {
      description: "Salt minion ids (= FQDNs) of every machine: Salt master, bastion, Kubernetes master, workers.",
      value: minionIds,
    });
  }
}
