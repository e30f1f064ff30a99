import { Testing } from "cdktf";
import { VARIABLES, VariableSpec } from "../config/parameters";
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

  it("declares every parameter as a described, typed variable with its validations", async () => {
    const json = await synthStack({});
    expect(Object.keys(json.variable).sort()).toEqual(Object.keys(VARIABLES).sort());
    for (const [name, spec] of Object.entries(VARIABLES)) {
      const variable = json.variable[name];
      expect(variable.description).toBe(spec.description);
      expect(variable.type).toBe(spec.type);
      expect(variable.validation ?? []).toHaveLength(spec.rules.length + ((spec as VariableSpec<unknown>).planTimeRules?.length ?? 0));
      for (const validation of variable.validation ?? []) {
        expect(validation.condition).toMatch(/^\$\{.*\}$/s);
        expect(validation.error_message).toMatch(new RegExp(`^${name} must be .*\\.$`));
      }
    }
  });

  it("keeps the wiki's nine variables with its names and defaults", async () => {
    const json = await synthStack({});
    const defaults = Object.fromEntries(Object.entries(json.variable).map(([name, v]) => [name, v.default]));
    expect(defaults).toMatchObject({
      num_kube_nodes: 3,
      kube_node_flavor: "m1.large",
      external_network_name: "vlan1066",
      base_image: "ad156007-77bb-4e32-ac97-7f8340cab73d",
      deploy_domain_name: "kube-on-os",
      deploy_user: "ubuntu",
      set_root_password: false,
      root_password: null,
      users: [],
    });
    expect(json.variable.root_password).toMatchObject({ sensitive: true, ephemeral: true, nullable: true });
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

  it("outputs the network ids, floating IPs, Salt volume, ssh config, kubeconfig command, minion ids and quota needs, each described", async () => {
    const json = await synthStack({});
    expect(Object.keys(json.output).sort()).toEqual([
      "bastion_floating_ip",
      "external_network_id",
      "kubeconfig_command",
      "master_floating_ip",
      "minion_ids",
      "private_network_id",
      "private_subnet_id",
      "public_network_id",
      "public_subnet_id",
      "quota_needs",
      "router_id",
      "salt_volume_id",
      "ssh_commands",
      "ssh_config",
    ]);
    for (const output of Object.values(json.output)) expect(output.description).toMatch(/\.$/);
  });
});
