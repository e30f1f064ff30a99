import * as fs from "node:fs";
import * as path from "node:path";
import { Testing } from "cdktf";
import { CROSS_RULES, DOMAIN_MAX, VARIABLE_NAMES, VARIABLES, VariableSpec } from "../config/parameters";
import { PARAMETER_RULES_ID } from "../constructs/variables";
import { LONGEST_HOST, POOL_NAME_MAX } from "../facts/names";
import { QUOTA_USAGE_VARIABLE } from "../constructs/quotas";
import { buildStack, resourceById, synthStack } from "./support/synth";

describe("KubeOnOsStack", () => {
  it("matches the snapshot", async () => {
    // The content hashes of salt/, pillar/ and provisioners/ change with every edit there; the
    // SaltProvisioner tests check them against the trees themselves.
    const synthesized = Testing.synth(await buildStack({})).replace(/\b[0-9a-f]{64}\b/g, "<sha256 of the tree>");
    expect(synthesized).toMatchSnapshot();
  });

  it("declares a partial http backend that TF_HTTP_* completes, locking with POST/DELETE", async () => {
    const json = await synthStack({});
    expect(json.terraform.backend).toEqual({ http: { lock_method: "POST", unlock_method: "DELETE" } });
  });

  it("declares a local backend only when asked to", async () => {
    const json = await synthStack({}, "local");
    expect(Object.keys(json.terraform.backend)).toEqual(["local"]);
  });

  it("pins the OpenStack provider by a source without a hostname (each CLI's own registry) and configures no credentials", async () => {
    const json = await synthStack({});
    expect(json.terraform.required_providers.openstack).toEqual({
      source: "terraform-provider-openstack/openstack",
      version: "3.4.0",
    });
    expect(json.provider.openstack).toEqual([{}]);
  });

  it("declares hashicorp/null for the provisioning chain at the version its bindings were generated from", async () => {
    const json = await synthStack({});
    // A source without a hostname: the registry of whichever CLI runs it (Terraform's or OpenTofu's).
    expect(json.terraform.required_providers.null).toEqual({ source: "null", version: "3.2.4" });
    expect(json.provider.null).toEqual([{}]);
  });

  it("declares every parameter as a described, typed variable, and every rule as a validation or a precondition", async () => {
    const json = await synthStack({});
    // and quota_usage, which is data the wrappers read before a plan, not a parameter
    expect(Object.keys(json.variable).sort()).toEqual([...Object.keys(VARIABLES), QUOTA_USAGE_VARIABLE].sort());
    const preconditions: { condition: string; error_message: string }[] =
      json.resource.terraform_data[PARAMETER_RULES_ID].lifecycle.precondition;
    for (const name of VARIABLE_NAMES) {
      const spec: VariableSpec<unknown> = VARIABLES[name];
      const variable = json.variable[name];
      expect(variable.description).toBe(spec.description);
      expect(variable.type).toBe(spec.type);
      const rules = [...spec.rules, ...(CROSS_RULES[name] ?? []), ...(spec.planTimeRules ?? [])];
      const checks = [...(variable.validation ?? []), ...preconditions.filter((p) => p.error_message.startsWith(`${name} must be `))];
      // A rule with a subject names the part of the value that breaks it, by an expression.
      const message = (rule: (typeof rules)[number]) =>
        `${"subject" in rule && rule.subject ? `\${${rule.subject.expression}}` : name} must be ${rule.mustBe}.`;
      expect(checks.map((check) => check.error_message).sort()).toEqual(rules.map(message).sort());
      for (const check of checks) expect(check.condition).toMatch(/^\$\{.*\}$/s);
    }
  });

  it("names every resource within Nova's and Neutron's 255 characters, and every machine within DNS's 253, at the longest domain", async () => {
    const json = await synthStack({});
    const domain = "d".repeat(DOMAIN_MAX);
    // The longest value each name expression takes: the last worker's name for a worker.
    const longest = (name: string) =>
      name
        .replace(/\$\{format\("%s[.]%s", "([a-z0-9-]+)", var[.]deploy_domain_name\)\}/g, (_, host: string) => `${host}.${domain}`)
        .replace("${element(local.kube_worker_fqdns, count.index)}", `${LONGEST_HOST}.${domain}`)
        .replace("${each.value.fqdn}", `${LONGEST_HOST}.${domain}`)
        .replace("${element(local.kube_control_plane, count.index)}", `${LONGEST_HOST}.${domain}`)
        .replace("${each.key}", "p".repeat(POOL_NAME_MAX))
        .replace('${replace(var.deploy_domain_name, ".", "_")}', domain)
        .replace("${var.deploy_domain_name}", domain);
    const names = Object.values(json.resource).flatMap((resources) =>
      Object.values(resources).flatMap((resource) => (typeof resource.name === "string" ? [longest(resource.name)] : [])),
    );
    expect(names.length).toBeGreaterThan(20);
    for (const name of names) expect(name).not.toContain("${");
    // The bound is tight: the longest name (a worker's port) takes all 255.
    expect(Math.max(...names.map((name) => name.length))).toBe(255);
    const machines = Object.values(json.resource.openstack_compute_instance_v2).map((server) => longest(server.name));
    expect(Math.max(...machines.map((name) => name.length))).toBeLessThanOrEqual(253);
  });

  it("keeps every string a failed rule would print out of validation blocks, and sensitive", async () => {
    const json = await synthStack({});
    for (const name of ["deploy_ssh_public_key", "root_password_hash"]) {
      expect(json.variable[name]).toMatchObject({ sensitive: true, validation: [] });
      for (const variable of Object.values(json.variable)) {
        for (const validation of variable.validation ?? []) expect(validation.condition).not.toContain(`var.${name}`);
      }
    }
  });

  it("keeps the wiki's nine variables with its names and defaults, but a supported image (issue 18)", async () => {
    const json = await synthStack({});
    const defaults = Object.fromEntries(Object.entries(json.variable).map(([name, v]) => [name, v.default]));
    expect(defaults).toMatchObject({
      num_kube_nodes: 3,
      kube_node_flavor: "m1.large",
      external_network_name: "vlan1066",
      // The wiki's ad156007-77bb-4e32-ac97-7f8340cab73d is one cloud's Ubuntu 20.04, past its end of life.
      base_image: "Ubuntu 24.04",
      deploy_domain_name: "kube-on-os",
      deploy_user: "ubuntu",
      set_root_password: false,
      root_password: null,
      users: [],
    });
    expect(json.variable.root_password).toMatchObject({ sensitive: true, ephemeral: true, nullable: true });
  });

  it("boots every machine from base_image: an ID as is, a name through the newest Glance image of that name", async () => {
    const json = await synthStack({});
    expect(json.data.openstack_images_image_v2.BaseImage).toEqual({
      count: "${local.base_image_is_id ? 0 : 1}",
      most_recent: true,
      name: "${var.base_image}",
    });
    expect(json.locals.base_image_is_id).toBe(
      '${can(regex("^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$", var.base_image))}',
    );
    const baseImage = "${local.base_image_is_id ? var.base_image : one(data.openstack_images_image_v2.BaseImage[*].id)}";
    const instances = json.resource.openstack_compute_instance_v2;
    expect(instances.Bastion_Instance_3BC4E4CC.image_id).toBe(baseImage);
    expect(instances.SaltMaster_Instance_6E8AABC5.image_id).toBe(baseImage);
    // The default pool's nodes through its settings, the control plane's unless it has its own
    // image (constructs/kube-node-pool.ts); the pools' workers unless their pool names another
    // (constructs/worker-pools.ts).
    const [defaults] = Object.entries(json.locals).filter(([name]) => name.startsWith("KubeNodes_default_pool_machine_"));
    expect(defaults[1]).toMatchObject({ image_id: baseImage });
    expect(instances.KubeNodes_Master_97D1ACE4.image_id).toMatch(/^\$\{local\.KubeNodes_control_plane_machine_\w+\.image_id\}$/);
    expect(instances.KubeNodes_Worker_C67D357D.image_id).toMatch(
      /^\$\{local\.KubeNodes_kube_worker_machines_\w+\[count\.index\]\.image_id\}$/,
    );
  });

  it("keeps every machine on the image it was created with: a newer image (or another default) replaces none", async () => {
    // And on the rest it was built with (constructs/machine.ts, BUILT_ONCE): boot volume, cloud-init, keypair.
    const json = await synthStack({});
    const builtOnce = ["image_id", "image_name", "block_device", "user_data", "config_drive", "key_pair"];
    for (const [address, instance] of Object.entries(json.resource.openstack_compute_instance_v2)) {
      // A Kubernetes node keeps its flavor too: a resize would stop every node of the flavor at once.
      const kubeNode = address.startsWith("KubeNodes_") || address.startsWith("WorkerPools_");
      expect([address, instance.lifecycle.ignore_changes]).toEqual([
        address,
        kubeNode ? [...builtOnce, "flavor_name", "flavor_id"] : builtOnce,
      ]);
    }
  });

  it("tags every resource whose schema takes tags, with the cluster's tag and the user's, and gives every server the user's metadata", async () => {
    const json = await synthStack({ TF_VAR_tags: '["team-a"]', TF_VAR_server_metadata: '{ owner = "team-a" }' });
    const schemas = JSON.parse(fs.readFileSync(path.join(__dirname, "..", "providers", "openstack@3.4.0.json"), "utf8")).provider_schemas;
    const [resources] = Object.values<any>(schemas).map((provider) => provider.resource_schemas);
    const taggable = Object.keys(resources).filter((type) => "tags" in resources[type].block.attributes);
    const tagged = Object.entries<Record<string, any>>(json.resource).flatMap(([type, byId]) =>
      Object.entries(byId).map(([id, resource]) => [`${type}.${id}`, resource.tags ?? null]),
    );
    expect(tagged.filter(([address]) => taggable.some((type) => address.startsWith(`${type}.`)))).toEqual(
      tagged.filter(([, tags]) => tags !== null).map(([address]) => [address, "${local.resource_tags}"]),
    );
    expect(tagged.filter(([, tags]) => tags !== null).length).toBeGreaterThan(30);
    expect(json.locals.resource_tags).toBe(
      '${distinct(concat([substr(format("kube-on-os:%s", var.deploy_domain_name), 0, 60)], var.tags))}',
    );
    // The project's own resources the stack reads are never tagged: a data source's tags filter.
    for (const byId of Object.values<Record<string, any>>(json.data))
      for (const source of Object.values(byId)) expect(source.tags).toBeUndefined();
    for (const server of Object.values<any>(json.resource.openstack_compute_instance_v2))
      expect(server.metadata).toBe("${var.server_metadata}");
  });

  it("writes microk8s_channel into the pillar as microk8s:channel", async () => {
    const json = await synthStack({ TF_VAR_microk8s_channel: "1.34/candidate" });
    expect(json.variable.microk8s_channel.default).toBe("1.34/candidate");
    expect(json.locals.salt_pillar_data.microk8s.channel).toBe("${var.microk8s_channel}");
  });

  it("records TF_VAR_ overrides as the variables' defaults", async () => {
    const json = await synthStack({
      TF_VAR_num_kube_nodes: "5",
      TF_VAR_deploy_domain_name: "prod.example",
      TF_VAR_ssh_allowed_cidrs: '["203.0.113.0/24"]',
    });
    expect(json.variable.num_kube_nodes.default).toBe(5);
    expect(json.variable.deploy_domain_name.default).toBe("prod.example");
    expect(json.variable.ssh_allowed_cidrs.default).toEqual(["203.0.113.0/24"]);
  });

  it("never writes root_password into the JSON", async () => {
    const secret = "VerySecurePassword-4b1d";
    const synthesized = Testing.synth(await buildStack({ TF_VAR_root_password: secret, TF_VAR_set_root_password: "true" }));
    expect(synthesized).not.toContain(secret);
    expect(JSON.parse(synthesized).variable.root_password.default).toBeNull();
  });

  it("wires the network to the variables, so plan-time TF_VAR_ overrides move it", async () => {
    const json = await synthStack({});
    expect(resourceById(json, "openstack_networking_subnet_v2", "PublicSubnet")).toMatchObject({
      cidr: "${var.public_network_cidr}",
      gateway_ip: "${cidrhost(var.public_network_cidr, 1)}",
      dns_nameservers: "${var.dns_nameservers}",
      name: "${var.deploy_domain_name}-public",
    });
    expect(resourceById(json, "openstack_networking_subnet_v2", "PrivateSubnet")).toMatchObject({
      cidr: "${var.private_network_cidr}",
      gateway_ip: "${cidrhost(var.private_network_cidr, 1)}",
    });
    expect(Object.values(json.data.openstack_networking_network_v2)[0].name).toBe("${var.external_network_name}");
  });

  it("outputs the network ids, floating IPs, Salt volume, ssh config, kubeconfig command, minion ids, quota needs and the Salt preview's inputs, each described", async () => {
    const json = await synthStack({});
    expect(Object.keys(json.output).sort()).toEqual([
      "api_address",
      "bastion_floating_ip",
      "external_network_id",
      "kube_node_machines",
      "kubeconfig_command",
      "master_floating_ip",
      "minion_ids",
      "private_network_id",
      "private_subnet_id",
      "public_network_id",
      "public_subnet_id",
      "quota_needs",
      "router_id",
      "salt_preview",
      "salt_volume_id",
      "ssh_commands",
      "ssh_config",
    ]);
    for (const output of Object.values(json.output)) expect(output.description).toMatch(/\.$/);
  });
});

/**
 * Every resource address of the default stack. State refers to these: a construct renamed or
 * moved changes an address, and Terraform would destroy and re-create the resource; for a
 * NodeMembership record that destroy removes a healthy worker from the cluster. A change here
 * ships a `moved` block (cdktf: `resource.moveTo()`/`moveFromId()`), and the upgrade test in
 * l5-chain-over-ssh.test.ts applies the old stack before the new one.
 */
const ADDRESSES = [
  "data.openstack_blockstorage_quotaset_v3.Quotas_BlockStorage_71E29EE3",
  "data.openstack_blockstorage_quotaset_v3.VolumeTypes_Quotas_8DF3CECE",
  "data.openstack_compute_availability_zones_v2.AvailabilityZones_F5EF4A83",
  "data.openstack_compute_flavor_v2.Quotas_BastionFlavor_DD0482BC",
  "data.openstack_compute_flavor_v2.Quotas_ControlPlaneFlavor_20BC1F50",
  "data.openstack_compute_flavor_v2.Quotas_KubeNodeFlavor_EBC4EC2D",
  "data.openstack_compute_flavor_v2.Quotas_PoolFlavors_13D0BAAA",
  "data.openstack_compute_flavor_v2.Quotas_SaltMasterFlavor_6E037E8A",
  "data.openstack_compute_keypair_v2.keypair_name",
  "data.openstack_compute_quotaset_v2.Quotas_Compute_EAC7774A",
  "data.openstack_identity_auth_scope_v3.ApiLoadBalancer_Catalog_C2AB9A31",
  "data.openstack_identity_auth_scope_v3.ApiLoadBalancer_FloatingIpProject_2768587F",
  "data.openstack_identity_auth_scope_v3.Bastion_FloatingIpProject_BAE4D027",
  "data.openstack_identity_auth_scope_v3.CloudIntegration_Scope_85703375",
  "data.openstack_identity_auth_scope_v3.KubeNodes_MasterFloatingIpProject_142F1C5D",
  "data.openstack_identity_auth_scope_v3.Network_PrivateProject_1FBC4B98",
  "data.openstack_identity_auth_scope_v3.Network_Project_C449E980",
  "data.openstack_identity_auth_scope_v3.Network_SecurityGroupsProject_A3BB66E4",
  "data.openstack_identity_auth_scope_v3.Quotas_Scope_2C9E6C9C",
  "data.openstack_identity_auth_scope_v3.VolumeTypes_Scope_05EAE721",
  "data.openstack_images_image_v2.BaseImage",
  "data.openstack_images_image_v2.KubeNodes_ControlPlaneImage_328B7EA9",
  "data.openstack_images_image_v2.WorkerPools_Images_864D13A7",
  "data.openstack_lb_loadbalancer_v2.ApiLoadBalancer_FloatingIpHolderLoadBalancer_98ACB78D",
  "data.openstack_networking_floatingip_v2.api_floating_ip",
  "data.openstack_networking_floatingip_v2.bastion_floating_ip",
  "data.openstack_networking_floatingip_v2.master_floating_ip",
  "data.openstack_networking_network_v2.Network_ExternalNetwork_2FE1A5D2",
  "data.openstack_networking_port_ids_v2.Network_PrivateGatewayHolders_F7DE58DE",
  "data.openstack_networking_port_v2.ApiLoadBalancer_FloatingIpHolder_A502C9FD",
  "data.openstack_networking_port_v2.Bastion_FloatingIpHolder_FDB9280E",
  "data.openstack_networking_port_v2.KubeNodes_MasterFloatingIpHolder_01CE6F50",
  "data.openstack_networking_port_v2.Network_PrivateGatewayHolder_15A49734",
  "data.openstack_networking_quota_v2.Quotas_Network_ED06D85E",
  "data.openstack_networking_router_v2.router_id",
  "data.openstack_networking_secgroup_v2.bastion_security_groups",
  "data.openstack_networking_secgroup_v2.control_plane_security_groups",
  "data.openstack_networking_secgroup_v2.worker_security_groups",
  "data.openstack_networking_subnet_ids_v2.Network_ExistingPrivateSubnets_F5F5FE23",
  "data.openstack_networking_subnet_ids_v2.Network_ExistingPublicSubnets_3362AB0D",
  "data.openstack_networking_subnet_ids_v2.Network_ExternalSubnetIds_BBE16123",
  "data.openstack_networking_subnet_v2.Network_ExistingPrivateSubnet_B65815D3",
  "data.openstack_networking_subnet_v2.Network_ExistingPublicSubnet_DBB1425F",
  "data.openstack_networking_subnet_v2.Network_ExternalSubnets_7CE190AE",
  "null_resource.SaltProvisioner_AcceptMinionKeys_D0003BB4",
  "null_resource.SaltProvisioner_Orchestrate_4246D273",
  "null_resource.SaltProvisioner_RebootForUpdates_D93A43C5",
  "null_resource.SaltProvisioner_SyncSaltTree_700E2940",
  "null_resource.SaltProvisioner_Upgrade_E4BEBE9B",
  "null_resource.SaltProvisioner_WaitForBastion_D3BD5F38",
  "null_resource.SaltProvisioner_WaitForSaltMaster_639D0072",
  "openstack_blockstorage_volume_v3.SaltMaster_Volume_FF9AB832",
  "openstack_compute_instance_v2.Bastion_Instance_3BC4E4CC",
  "openstack_compute_instance_v2.KubeNodes_Master_97D1ACE4",
  "openstack_compute_instance_v2.KubeNodes_Worker_C67D357D",
  "openstack_compute_instance_v2.SaltMaster_Instance_6E8AABC5",
  "openstack_compute_instance_v2.WorkerPools_Worker_3ABAD5E8",
  "openstack_compute_keypair_v2.DeployKeypair",
  "openstack_compute_servergroup_v2.KubeNodes_ServerGroup_8FFC6899",
  "openstack_compute_servergroup_v2.WorkerPools_ServerGroup_4748A170",
  "openstack_compute_volume_attach_v2.SaltMaster_VolumeAttachment_EB429AB7",
  "openstack_identity_application_credential_v3.CloudIntegration_Credential_0F2B3D85",
  "openstack_lb_listener_v2.ApiLoadBalancer_Listener_55E752F7",
  "openstack_lb_loadbalancer_v2.ApiLoadBalancer_66CFEFA1",
  "openstack_lb_member_v2.ApiLoadBalancer_Member_A6014F77",
  "openstack_lb_monitor_v2.ApiLoadBalancer_Monitor_41198EB2",
  "openstack_lb_pool_v2.ApiLoadBalancer_Pool_46650E06",
  "openstack_networking_floatingip_associate_v2.ApiLoadBalancer_FloatingIpAssociation_C06585B5",
  "openstack_networking_floatingip_associate_v2.Bastion_FloatingIpAssociation_26B29183",
  "openstack_networking_floatingip_associate_v2.KubeNodes_MasterFloatingIpAssociation_2C4B22FE",
  "openstack_networking_floatingip_v2.ApiLoadBalancer_FloatingIp_288223E0",
  "openstack_networking_floatingip_v2.Bastion_FloatingIp_8C4B8B22",
  "openstack_networking_floatingip_v2.KubeNodes_MasterFloatingIp_091CDBB9",
  "openstack_networking_network_v2.Network_PrivateNetwork_04AC6DEA",
  "openstack_networking_network_v2.Network_PublicNetwork_95DA8D1B",
  "openstack_networking_port_v2.Bastion_PrivatePort_AF6AFA36",
  "openstack_networking_port_v2.Bastion_PublicPort_1F30E9F8",
  "openstack_networking_port_v2.KubeNodes_MasterPrivatePort_C7D2FCC3",
  "openstack_networking_port_v2.KubeNodes_MasterPublicPort_A6B6EB02",
  "openstack_networking_port_v2.KubeNodes_WorkerPort_64251A27",
  "openstack_networking_port_v2.SaltMaster_Port_E3A9FF6C",
  "openstack_networking_port_v2.WorkerPools_Port_91649301",
  "openstack_networking_router_interface_v2.Network_PublicRouterInterface_C5176AB2",
  "openstack_networking_router_v2.Network_Router_B43C5A1B",
  "openstack_networking_secgroup_rule_v2.ApiLoadBalancer_MemberRule_FF4A088D",
  "openstack_networking_secgroup_rule_v2.CloudIntegration_NodePortRule_9A7693CB",
  "openstack_networking_secgroup_rule_v2.Network_BastionIngressRule_56A0C552",
  "openstack_networking_secgroup_rule_v2.Network_BastionSshRule_B1994367",
  "openstack_networking_secgroup_rule_v2.Network_ControlPlaneIngressRule_B74C646F",
  "openstack_networking_secgroup_rule_v2.Network_InternalRule_E2C95BCE",
  "openstack_networking_secgroup_rule_v2.Network_KubeApiRule_26A019B7",
  "openstack_networking_secgroup_rule_v2.Network_KubeHttpRule_D661F9E1",
  "openstack_networking_secgroup_rule_v2.Network_KubeHttpsRule_088A7C3C",
  "openstack_networking_secgroup_rule_v2.Network_SaltMasterRule_EEDC02ED",
  "openstack_networking_secgroup_rule_v2.Network_WorkerIngressRule_5CDFCFEA",
  "openstack_networking_secgroup_v2.Network_BastionIngressGroup_F6A6A790",
  "openstack_networking_secgroup_v2.Network_BastionSecurityGroup_2EFEA316",
  "openstack_networking_secgroup_v2.Network_ControlPlaneIngressGroup_DA13AEE9",
  "openstack_networking_secgroup_v2.Network_InternalSecurityGroup_A68E4A6A",
  "openstack_networking_secgroup_v2.Network_KubeApiSecurityGroup_A4073833",
  "openstack_networking_secgroup_v2.Network_KubeNodesSecurityGroup_E7544C50",
  "openstack_networking_secgroup_v2.Network_SaltMasterSecurityGroup_4E3E921C",
  "openstack_networking_secgroup_v2.Network_WorkerIngressGroup_103FC18E",
  "openstack_networking_subnet_v2.Network_PrivateSubnet_43E99EF4",
  "openstack_networking_subnet_v2.Network_PublicSubnet_F7F151DA",
  "terraform_data.ControlPlaneFloor",
  "terraform_data.ParameterRules",
  "terraform_data.SaltProvisioner_MasterDrain_11C86A1E",
  "terraform_data.SaltProvisioner_NodeDrain_E9F0136D",
  "terraform_data.SaltProvisioner_NodeMembership_FE0F49D1",
  "terraform_data.SaltProvisioner_PoolNodeDrain_56B3128F",
  "terraform_data.SaltProvisioner_PoolNodeMembership_3B79CA21",
];

describe("resource addresses", () => {
  it("are the pinned ones, so that an existing deployment keeps every resource", async () => {
    const json = await synthStack({});
    const addresses = [
      ...Object.entries(json.resource).flatMap(([type, resources]) => Object.keys(resources).map((name) => `${type}.${name}`)),
      ...Object.entries(json.data).flatMap(([type, sources]) => Object.keys(sources).map((name) => `data.${type}.${name}`)),
    ];
    expect(addresses.sort()).toEqual(ADDRESSES);
  });

  it("move the resources that gained a count (router_id, public_network_id, bastion_floating_ip, master_floating_ip, private_network_id) to their index 0", async () => {
    const json: any = await synthStack({});
    const gainedCount = [
      "openstack_networking_floatingip_v2.Bastion_FloatingIp_8C4B8B22",
      "openstack_networking_floatingip_v2.KubeNodes_MasterFloatingIp_091CDBB9",
      "openstack_networking_network_v2.Network_PrivateNetwork_04AC6DEA",
      "openstack_networking_network_v2.Network_PublicNetwork_95DA8D1B",
      "openstack_networking_router_interface_v2.Network_PublicRouterInterface_C5176AB2",
      "openstack_networking_router_v2.Network_Router_B43C5A1B",
      "openstack_networking_subnet_v2.Network_PrivateSubnet_43E99EF4",
      "openstack_networking_subnet_v2.Network_PublicSubnet_F7F151DA",
    ];
    expect(json.moved.map((m: any) => `${m.from} -> ${m.to}`).sort()).toEqual(gainedCount.map((a) => `${a} -> ${a}[0]`));
    // Each has one instance by default.
    expect(json.locals.Network_creates_router_0208F909).toBe(
      "${((length(var.router_id) < 1) && (length(var.public_network_id) < 1)) ? 1 : 0}",
    );
    expect(json.variable.router_id.default).toBe("");
    expect(json.variable.public_network_id.default).toBe("");
    expect(json.locals.Network_creates_private_network_3CB9D5A5).toBe("${(length(var.private_network_id) < 1) ? 1 : 0}");
    expect(json.variable.private_network_id.default).toBe("");
    expect(json.locals.Bastion_bastion_floating_ip_allocated_B5127FBE).toBe("${(length(var.bastion_floating_ip) < 1) ? 1 : 0}");
    expect(json.variable.bastion_floating_ip.default).toBe("");
    expect(json.variable.master_floating_ip.default).toBe("");
  });
});
