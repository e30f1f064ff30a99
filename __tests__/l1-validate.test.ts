/**
 * L1: the synthesized JSON checked by real OpenTofu with the real OpenStack provider schema, and
 * the variables' plan-time validations checked against the synth-time ones.
 */
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ConfigError } from "../config/config-error";
import { loadConfig } from "../config/load";
import { DOMAIN_MAX } from "../config/parameters";
import { CA_CERTIFICATE } from "./support/arbitraries";
import { parameterRules, planVerdict, planVerdicts, synthVerdict, variablesOnlyDir, Verdict } from "./support/plan-variables";
import { synthToDir } from "./support/synth";
import { describeEachCli, initOffline, runTf, runTfAsync, TfCli } from "./support/tofu";

function tempDir(prefix: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `kube-on-os-${prefix}-`));
}

function readJson(file: string): any {
  return JSON.parse(fs.readFileSync(file, "utf8"));
}

function validate(cli: TfCli, stackDir: string): { valid: boolean; diagnostics: { severity: string; summary: string; detail: string }[] } {
  initOffline(stackDir, cli);
  const result = runTf(cli, ["validate", "-json"], stackDir);
  return JSON.parse(result.stdout);
}

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhU0xQm2c2RZkzC9M7tRrFSe0Q5sQm8l8S3ZzQxYw1a someone@example";

/** Where each CLI resolves a provider source without a hostname. */
const DEFAULT_REGISTRY = { tofu: "registry.opentofu.org", terraform: "registry.terraform.io" } as const;

describeEachCli("L1: validate with the real provider", (cli) => {
  let stackDir: string;

  beforeAll(async () => {
    stackDir = await synthToDir(tempDir("l1"));
  });

  it("initialises offline from the provider mirror", () => {
    const init = initOffline(stackDir, cli);
    expect(init.stdout).toContain("terraform-provider-openstack/openstack v3.4.0");
    // The toolchain's stand-in (__tests__/toolchain-null-provider.test.ts), under the real provider's name.
    expect(init.stdout).toContain("hashicorp/null v3.2.4");
    const lock = fs.readFileSync(path.join(stackDir, ".terraform.lock.hcl"), "utf8");
    expect(lock).toContain(`provider "${DEFAULT_REGISTRY[cli.name]}/terraform-provider-openstack/openstack"`);
    expect(lock).toContain(`provider "${DEFAULT_REGISTRY[cli.name]}/hashicorp/null"`);
  });

  it("generates the bindings from exactly the schema the mirrored provider binary reports", () => {
    // Only the OpenStack provider's requirement: `providers schema` needs no backend then.
    const dir = tempDir("schema");
    const { openstack } = readJson(path.join(stackDir, "cdk.tf.json")).terraform.required_providers;
    fs.writeFileSync(path.join(dir, "main.tf.json"), JSON.stringify({ terraform: { required_providers: { openstack } } }));
    initOffline(dir, cli);
    const reported = JSON.parse(runTf(cli, ["providers", "schema", "-json"], dir).stdout);
    const committed = readJson(path.join(__dirname, "..", "providers", "openstack@3.4.0.json"));
    const address = `${DEFAULT_REGISTRY[cli.name]}/terraform-provider-openstack/openstack`;
    expect(Object.keys(reported.provider_schemas)).toEqual([address]);
    // The committed file is keyed by where tofu found the provider; the schema is the same.
    expect(Object.values(committed.provider_schemas)).toEqual([reported.provider_schemas[address]]);
  });

  it("accepts the synthesized stack", () => {
    expect(validate(cli, stackDir)).toMatchObject({ valid: true, diagnostics: [] });
  });

  it("accepts the stack synthesized with TF_VAR_ overrides", async () => {
    const dir = await synthToDir(tempDir("l1-env"), {
      TF_VAR_num_kube_nodes: "7",
      TF_VAR_ssh_allowed_cidrs: '["203.0.113.0/24", "198.51.100.0/24"]',
      TF_VAR_api_allowed_cidrs: "[]",
      TF_VAR_deploy_domain_name: "prod.example.org",
    });
    expect(validate(cli, dir)).toMatchObject({ valid: true });
  });

  it.each([
    [{ TF_VAR_router_id: "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d" }],
    [{ TF_VAR_public_network_id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93", TF_VAR_public_network_cidr: "10.20.0.0/16" }],
  ])("accepts the stack synthesized with an existing router or public network: %j", async (env) => {
    expect(validate(cli, await synthToDir(tempDir("l1-existing"), env))).toMatchObject({ valid: true, diagnostics: [] });
  });

  describe("fails on a deliberately broken stack", () => {
    function breakStack(mutate: (json: any) => void): string {
      const dir = tempDir("l1-broken");
      const json = readJson(path.join(stackDir, "cdk.tf.json"));
      mutate(json);
      fs.writeFileSync(path.join(dir, "cdk.tf.json"), JSON.stringify(json, null, 2));
      return dir;
    }

    it("rejects an attribute the provider does not have", () => {
      const dir = breakStack((json) => {
        const subnet = Object.values(json.resource.openstack_networking_subnet_v2)[0] as any;
        subnet.gateway_address = subnet.gateway_ip;
      });
      const result = validate(cli, dir);
      expect(result.valid).toBe(false);
      expect(result.diagnostics).toEqual(
        expect.arrayContaining([
          expect.objectContaining({
            severity: "error",
            summary: "Extraneous JSON object property",
            detail: 'No argument or block type is named "gateway_address".',
          }),
        ]),
      );
    });

    it("rejects a missing required attribute", () => {
      const dir = breakStack((json) => {
        const rule = Object.values(json.resource.openstack_networking_secgroup_rule_v2)[0] as any;
        delete rule.direction;
      });
      const result = validate(cli, dir);
      expect(result.valid).toBe(false);
      expect(result.diagnostics.map((d) => d.summary)).toContain("Missing required argument");
    });

    it("rejects a value of the wrong type", () => {
      const dir = breakStack((json) => {
        const network = Object.values(json.resource.openstack_networking_network_v2)[0] as any;
        network.admin_state_up = { yes: "please" };
      });
      const result = validate(cli, dir);
      expect(result.valid).toBe(false);
      expect(result.diagnostics.map((d) => d.summary)).toContain("Incorrect attribute value type");
    });
  });
});

/**
 * The plan verdicts of `envs` (TF_VAR_ values alone) against the rules in `varsDir`, judged side by
 * side in a few plans (planVerdicts; l1-synth-plan-agreement holds that to one plan each), keyed by
 * each environment's JSON.
 */
function judgeAll(cli: TfCli, varsDir: string, envs: NodeJS.ProcessEnv[]): Map<string, Verdict> {
  const verdicts = planVerdicts(cli, varsDir, envs);
  return new Map(envs.map((env, index) => [JSON.stringify(env), verdicts[index]]));
}

/** CA certificates: values on several lines, each named in its test's title. */
const CA_CERTIFICATES: [string, boolean, string][] = [
  ["a CA certificate", true, CA_CERTIFICATE],
  ["a CA certificate without its last line break", true, CA_CERTIFICATE.trimEnd()],
  ["two CA certificates", true, `${CA_CERTIFICATE}\n${CA_CERTIFICATE}`],
  ["a CA certificate with CRLF line breaks", false, CA_CERTIFICATE.replace(/\n/g, "\r\n")],
  ["a comment before a CA certificate", false, `# my CA\n${CA_CERTIFICATE}`],
];

describeEachCli("L1: plan-time variable validation agrees with synth-time validation", (cli) => {
  let varsDir: string;

  /** Each listed case's plan, judged side by side with the others (planVerdicts), by its environment. */
  let judged: Map<string, Verdict>;

  beforeAll(async () => {
    // Only the variable blocks: planning them needs no provider and no network.
    varsDir = await variablesOnlyDir(cli);
    judged = judgeAll(cli, varsDir, [
      ...cases.map(([name, value]) => ({ [`TF_VAR_${name}`]: value })),
      ...CA_CERTIFICATES.map(([, , value]) => ({ TF_VAR_openstack_ca_certificate: value })),
    ]);
  });

  const cases: [string, string, boolean][] = [
    ["num_kube_nodes", "1", true],
    ["num_kube_nodes", "100", true],
    ["num_kube_nodes", "256", true],
    ["num_kube_nodes", "257", false],
    ["num_kube_nodes", "1025", false],
    ["num_kube_nodes", "1026", false],
    ["num_kube_nodes", "0", false],
    ["num_kube_nodes", "-1", false],
    ["num_kube_nodes", "2.5", false],
    ["deploy_domain_name", "test.kube-on-os.ecida.org", true],
    ["deploy_domain_name", "my domain", false],
    ["deploy_domain_name", "UPPER.example", false],
    ["deploy_domain_name", "trailing-.example", false],
    ["deploy_user", "ubuntu", true],
    ["deploy_user", "root", false],
    ["deploy_user", "9lives", false],
    ["base_image", "ad156007-77bb-4e32-ac97-7f8340cab73d", true],
    ["base_image", "ubuntu-focal", true],
    ["base_image", "Ubuntu 24.04", true],
    ["base_image", "AD156007-77BB-4E32-AC97-7F8340CAB73D", true],
    ["base_image", "x".repeat(255), true],
    ["base_image", "x".repeat(256), false],
    ["base_image", "", false],
    ["base_image", "Ubuntu 24.04\n", false],
    ["microk8s_channel", "1.35/stable", true],
    ["microk8s_channel", "1.28/edge", true],
    ["microk8s_channel", "1.100/beta", true],
    ["microk8s_channel", "1.27/stable", false],
    ["microk8s_channel", "1.035/stable", false],
    ["microk8s_channel", "latest/stable", false],
    ["microk8s_channel", "1.35-strict/stable", false],
    ["microk8s_channel", "1.35/stable/hotfix", false],
    ["microk8s_channel", " 1.35/stable", false],
    ["keypair_name", "", true],
    ["keypair_name", "lab.example.org-deploy", true],
    ["keypair_name", "a/b", false],
    ["keypair_name", "k".repeat(255), true],
    ["keypair_name", "k".repeat(256), false],
    ["kube_node_flavor", "m1.small", true],
    ["kube_node_flavor", " m1.small", false],
    ["external_network_name", "", false],
    ["router_id", "", true],
    ["router_id", "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d", true],
    ["router_id", "0B5C9A5E-4A0F-4C1E-9D3B-7E6F5A4B3C2D", false],
    ["router_id", "0b5c9a5e4a0f4c1e9d3b7e6f5a4b3c2d", false],
    ["router_id", "lab-router", false],
    ["router_id", " 0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d", false],
    ["public_network_id", "", true],
    ["public_network_id", "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93", true],
    ["public_network_id", "{5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93}", false],
    ["public_network_id", "campus", false],
    ["private_network_id", "", true],
    ["private_network_id", "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93", true],
    ["private_network_id", "lab-private", false],
    ["public_network_cidr", "192.168.0.0/24", true],
    ["public_network_cidr", "192.168.0.1/24", false],
    ["public_network_cidr", "192.168.0.0/25", false],
    ["public_network_cidr", "300.0.0.0/16", false],
    ["public_network_cidr", "fd00::/64", false],
    ["pod_cidr", "172.16.0.0/12", true],
    ["pod_cidr", "127.16.0.0/16", false],
    ["service_cidr", "169.254.0.0/24", false],
    ["public_network_cidr", "169.0.0.0/8", false],
    ["ssh_allowed_cidrs", '["0.0.0.0/0"]', true],
    ["ssh_allowed_cidrs", '["203.0.113.7/32", "198.51.100.0/24"]', true],
    ["ssh_allowed_cidrs", "[]", false],
    ["ssh_allowed_cidrs", '["203.0.113.7"]', false],
    ["api_allowed_cidrs", "[]", true],
    ["api_allowed_cidrs", '["10.0.0.0/33"]', false],
    ["worker_ingress_rules", "[]", true],
    ["worker_ingress_rules", '["tcp/30000-32767 from 10.20.0.0/16", "udp/51820 from 0.0.0.0/0", "icmp from 10.0.0.0/8"]', true],
    ["bastion_ingress_rules", '["tcp/65535 from 203.0.113.7/32"]', true],
    ["bastion_ingress_rules", '["tcp/65536 from 203.0.113.7/32"]', false],
    ["bastion_ingress_rules", '["tcp/0 from 203.0.113.7/32"]', false],
    ["control_plane_ingress_rules", '["tcp/22-22 from 10.0.0.0/8"]', false],
    ["control_plane_ingress_rules", '["tcp/80-22 from 10.0.0.0/8"]', false],
    ["control_plane_ingress_rules", '["tcp/022 from 10.0.0.0/8"]', false],
    ["control_plane_ingress_rules", '["icmp/8 from 10.0.0.0/8"]', false],
    ["control_plane_ingress_rules", '["tcp from 10.0.0.0/8"]', false],
    ["control_plane_ingress_rules", '["sctp/9 from 10.0.0.0/8"]', false],
    ["worker_ingress_rules", '["tcp/443 from 10.0.0.1/8"]', false],
    ["worker_ingress_rules", '["tcp/443 from fd00::/8"]', false],
    ["worker_ingress_rules", '["tcp/443"]', false],
    ["worker_ingress_rules", '["tcp/443 from 10.0.0.0/8", "tcp/443 from 10.0.0.0/8"]', false],
    ["worker_security_groups", '["monitoring", "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d"]', true],
    ["bastion_security_groups", `["${"g".repeat(255)}"]`, true],
    ["bastion_security_groups", `["${"g".repeat(256)}"]`, false],
    ["control_plane_security_groups", '[" monitoring"]', false],
    ["control_plane_security_groups", '[""]', false],
    ["control_plane_security_groups", '["monitoring", "monitoring"]', false],
    ["dns_nameservers", '["9.9.9.9"]', true],
    ["dns_nameservers", '["9.9.9"]', false],
    ["dns_nameservers", "[]", false],
    ["dns_nameservers", '["9.9.9.9", "9.9.9.9"]', false],
    ["dns_nameservers", '["0.0.0.0"]', false],
    ["root_password", "long-enough-secret", true],
    ["root_password", "short", false],
    ["deploy_ssh_public_key", "", true],
    ["deploy_ssh_public_key", KEY, true],
    ["deploy_ssh_public_key", "not-a-key", false],
    ["salt_volume_size", "50", true],
    ["salt_volume_size", "0.5", false],
    ["kube_server_group_policy", "none", true],
    ["kube_server_group_policy", "spread", false],
    ["root_password_hash", "$6$salt$Zm9vYmFy", true],
    ["root_password_hash", "plaintext", false],
    ["run_provisioners", "false", true],
    ["reboot_for_updates", "true", true],
    ["ssh_host_keys", "{}", true],
    ["ssh_host_keys", `{ bastion = "${KEY}", salt_master = "${KEY}" }`, true],
    ["ssh_host_keys", `{ k8s_master = "${KEY}" }`, false],
    ["ssh_host_keys", '{ bastion = "AAAA" }', false],
    ["kube_node_availability_zones", '["az1", "az2", "az3"]', true],
    ["kube_node_availability_zones", '["az1", "az1"]', false],
    ["kube_node_availability_zones", '["az1", " az2"]', false],
    // A null in a list or map: the rule's message on both sides, not a function error.
    ["kube_node_availability_zones", '["nova", null]', false],
    ["kube_node_availability_zones", "[null]", false],
    ["node_pools", "{ web = { count = 1, labels = { tier = null } } }", false],
    ["kube_node_boot_volume_size", "40", true],
    ["kube_node_boot_volume_size", "-1", false],
    ["kube_node_boot_volume_type", "ssd", false],
    ["tags", '["team-a", "cost-center:4711"]', true],
    ["tags", '["a,b"]', false],
    ["tags", '["a/b"]', false],
    ["tags", '["ttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt"]', false],
    ["tags", '["team-a", "team-a"]', false],
    ["server_metadata", '{ owner = "team-a", "cost center" = "4711" }', true],
    ["server_metadata", '{ "a/b" = "x" }', false],
    [
      "server_metadata",
      '{ x = "vvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvvv" }',
      false,
    ],
    ["control_plane_flavor", "m1.xlarge", true],
    ["control_plane_flavor", " m1.xlarge", false],
    ["control_plane_flavor", "", false],
    ["control_plane_image", "ad156007-77bb-4e32-ac97-7f8340cab73d", true],
    ["control_plane_image", "x".repeat(256), false],
    ["control_plane_boot_volume_size", "0", true],
    ["control_plane_boot_volume_size", "16385", false],
    ["control_plane_boot_volume_type", "", true],
    ["control_plane_boot_volume_type", "ssd ", false],
    ["kube_node_labels", '{ "example.com/tier" = "web", tier = "" }', true],
    ["kube_node_labels", '{ "kube-on-os/pool" = "web" }', false],
    ["kube_node_labels", '{ tier = "a b" }', false],
    ["kube_node_taints", '["node-role.kubernetes.io/control-plane:NoSchedule"]', true],
    ["kube_node_taints", '["gpu=true"]', false],
    // Kubernetes' and microk8s' own namespaces, but for the two kept for administrators.
    ["kube_node_labels", '{ "kubernetes.io/hostname" = "evil" }', false],
    ["kube_node_labels", '{ "node.kubernetes.io/microk8s-controlplane" = "microk8s-controlplane" }', false],
    ["kube_node_labels", '{ "sub.k8s.io/x" = "y" }', false],
    ["kube_node_labels", '{ "node-role.kubernetes.io/worker" = "", "node-restriction.kubernetes.io/pool" = "a" }', true],
    ["kube_node_labels", '{ "kubernetes.io.example.com/x" = "y" }', true],
    ["kube_node_taints", '["node.kubernetes.io/unreachable:NoExecute"]', false],
    ["node_pools", '{ web = { count = 1, taints = ["node.cloudprovider.kubernetes.io/uninitialized=true:NoSchedule"] } }', false],
    ["node_pools", '{ web = { count = 1, labels = { "k8s.io/x" = "y" } } }', false],
    ["node_pools", "{}", true],
    [
      "node_pools",
      '{ gpu = { count = 2, flavor = "g1.large", availability_zones = ["az1", "az2"], boot_volume_size = 40, boot_volume_type = "ssd", labels = { gpu = "true" }, taints = ["gpu=true:NoSchedule"] } }',
      true,
    ],
    ["node_pools", '{ web = { count = "3" } }', true],
    ["node_pools", "{ Web = { count = 3 } }", false],
    ["node_pools", "{ worker = { count = 3 } }", false],
    // With the default 3 nodes: 256 nodes in all, then one more.
    ["node_pools", "{ web = { count = 253 } }", true],
    ["node_pools", "{ web = { count = 254 } }", false],
    ["node_pools", "{ web = { count = 256 } }", false],
    ["node_pools", "{ web = { count = 1025 } }", false],
    ["node_pools", '{ web = { count = 1, boot_volume_type = "ssd" } }', false],
    ["node_pools", '{ web = { count = 1 }, gpu = { count = 1, taints = ["gpu:Sometimes"] } }', false],
    ["openstack_ca_certificate", "", true],
    ["openstack_ca_certificate", "/etc/ssl/certs/my-ca.pem", false],
    ["lb_provider", "", true],
    ["lb_provider", "amphora", true],
    ["lb_provider", "amphorav2", true],
    ["lb_provider", " ovn", false],
    ["lb_provider", "ovn,amphora", false],
    ["lb_method", "", true],
    ["lb_method", "LEAST_CONNECTIONS", true],
    ["lb_method", "SOURCE_IP_PORT", true],
    ["lb_method", "round_robin", false],
    ["users", "[]", true],
    ["users", `[{ username = "waldorf", ssh_public_key = "${KEY}" }]`, true],
    ["users", `[{ username = "root", ssh_public_key = "${KEY}" }]`, false],
    ["users", '[{ username = "waldorf", ssh_public_key = "AAAA" }]', false],
    ["users", `[{ username = "a", ssh_public_key = "${KEY}" }, { username = "a", ssh_public_key = "${KEY}" }]`, false],
  ];

  async function agree(name: string, value: string, accepted: boolean): Promise<void> {
    const env = { [`TF_VAR_${name}`]: value };
    let synthMessage: string | undefined;
    try {
      await loadConfig(env);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      synthMessage = error.message;
    }
    const plan = judged.get(JSON.stringify(env)) ?? planVerdict(cli, varsDir, env);
    expect({ synth: synthMessage === undefined, plan: plan.accepted }).toEqual({ synth: accepted, plan: accepted });
    if (!accepted) {
      // Both sides name the same rule: the synth message carries the plan's error_message.
      const planMessage = plan.message;
      // A rule on a concealed value is a precondition (constructs/variables.ts).
      expect(planMessage).toMatch(/Invalid value for variable|Resource precondition failed/);
      const rule = synthMessage?.split(": ").pop();
      if (synthMessage?.includes(` ${name} must be `)) expect(planMessage).toContain(rule);
    }
  }

  it.each(cases)("TF_VAR_%s=%s accepted: %s", agree);

  it.each(CA_CERTIFICATES)("TF_VAR_openstack_ca_certificate=<%s> accepted: %s", (_, accepted, value) =>
    agree("openstack_ca_certificate", value, accepted),
  );

  // A plan-time rule only: the password may be given at plan time alone, so synth cannot tell.
  it.each([
    [{ TF_VAR_set_root_password: "true" }, false],
    [{ TF_VAR_set_root_password: "true", TF_VAR_root_password: "long-enough-secret" }, true],
    [{ TF_VAR_set_root_password: "true", TF_VAR_root_password_hash: "$6$salt$Zm9vYmFy" }, true],
    [{ TF_VAR_set_root_password: "false" }, true],
  ])("plans %j: %s", async (env, accepted) => {
    await expect(loadConfig(env)).resolves.toBeDefined();
    const plan = runTf(cli, ["plan", "-input=false", "-lock=false"], varsDir, env);
    expect(plan.status === 0).toBe(accepted);
    if (!accepted) {
      expect(plan.stderr.replace(/\s+/g, " ")).toContain(
        "set_root_password must be false unless root_password or root_password_hash is given.",
      );
    }
  });
});

/**
 * Issue 17's findings, each a named case: synth and a plan with the same TF_VAR_* both accept or
 * both reject, and both messages name the variable and its rule.
 */
describeEachCli("L1: issue 17 regressions, synth and plan agree", (cli) => {
  let varsDir: string;
  let privateKey: string;
  /** Each listed case's plan, judged side by side with the others (planVerdicts), by its environment. */
  let judged: Map<string, Verdict>;

  beforeAll(async () => {
    varsDir = await variablesOnlyDir(cli);
    judged = judgeAll(
      cli,
      varsDir,
      cases.map(([, env]) => env),
    );
    const keyDir = tempDir("key");
    const keygen = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "pasted@laptop", "-f", path.join(keyDir, "id")]);
    expect(keygen.status).toBe(0);
    privateKey = fs.readFileSync(path.join(keyDir, "id"), "utf8");
  });

  async function synth(env: NodeJS.ProcessEnv): Promise<string | undefined> {
    const verdict = await synthVerdict(env);
    return verdict.accepted ? undefined : verdict.message;
  }

  function plan(env: NodeJS.ProcessEnv): { accepted: boolean; output: string } {
    const result = runTf(cli, ["plan", "-input=false", "-lock=false"], varsDir, env);
    return { accepted: result.status === 0, output: `${result.stdout}${result.stderr}`.replace(/\s+/g, " ") };
  }

  const USER = (key: string, name = "waldorf") => JSON.stringify([{ username: name, ssh_public_key: key }]);

  // [what the issue saw, the environment, the variable whose rule rejects it (undefined: accepted)]
  const cases: [string, NodeJS.ProcessEnv, string | undefined][] = [
    ["a pod CIDR overlapping the private network", { TF_VAR_pod_cidr: "10.1.0.0/16" }, "pod_cidr"],
    ["a private network equal to the public one", { TF_VAR_private_network_cidr: "10.0.0.0/16" }, "private_network_cidr"],
    ["a public network around the private one", { TF_VAR_public_network_cidr: "10.0.0.0/8" }, "private_network_cidr"],
    ["a service CIDR inside the pod network", { TF_VAR_service_cidr: "10.244.0.0/24" }, "service_cidr"],
    ["workers inside the DHCP range", { TF_VAR_private_network_cidr: "10.1.0.0/24", TF_VAR_num_kube_nodes: "40" }, "num_kube_nodes"],
    ["the last worker below the DHCP range", { TF_VAR_private_network_cidr: "10.1.0.0/24", TF_VAR_num_kube_nodes: "29" }, undefined],
    ["a deploy key together with a keypair name", { TF_VAR_deploy_ssh_public_key: KEY, TF_VAR_keypair_name: "mine" }, "keypair_name"],
    [
      "an existing router together with an existing public network",
      { TF_VAR_router_id: "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d", TF_VAR_public_network_id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93" },
      "router_id",
    ],
    [
      "one existing network as both the public and the private one",
      {
        TF_VAR_public_network_id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93",
        TF_VAR_private_network_id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93",
      },
      "private_network_id",
    ],
    [
      "an existing public network and another private one",
      {
        TF_VAR_public_network_id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93",
        TF_VAR_private_network_id: "0b5c9a5e-4a0f-4c1e-9d3b-7e6f5a4b3c2d",
      },
      undefined,
    ],
    [
      "an existing public network with its CIDR",
      { TF_VAR_public_network_id: "5d3a1c2e-7b4f-4e8a-9c61-2f0b8d4e7a93", TF_VAR_public_network_cidr: "10.20.0.0/16" },
      undefined,
    ],
    ["a control-plane volume type without a volume", { TF_VAR_control_plane_boot_volume_type: "ssd" }, "control_plane_boot_volume_type"],
    [
      "a control-plane volume type with the default pool's volume size",
      { TF_VAR_control_plane_boot_volume_type: "ssd", TF_VAR_kube_node_boot_volume_size: "40" },
      undefined,
    ],
    [
      "a control plane without a volume in a pool with typed volumes",
      { TF_VAR_control_plane_boot_volume_size: "0", TF_VAR_kube_node_boot_volume_size: "40", TF_VAR_kube_node_boot_volume_type: "ssd" },
      undefined,
    ],
    [
      "a control-plane volume of its own, typed",
      { TF_VAR_control_plane_boot_volume_size: "40", TF_VAR_control_plane_boot_volume_type: "ssd" },
      undefined,
    ],
    ["an OVN provider with the default pool algorithm", { TF_VAR_lb_provider: "ovn" }, "lb_method"],
    ["an OVN provider with ROUND_ROBIN", { TF_VAR_lb_provider: "ovn", TF_VAR_lb_method: "ROUND_ROBIN" }, "lb_method"],
    ["an OVN provider with SOURCE_IP_PORT", { TF_VAR_lb_provider: "ovn", TF_VAR_lb_method: "SOURCE_IP_PORT" }, undefined],
    ["SOURCE_IP_PORT with another provider", { TF_VAR_lb_provider: "f5", TF_VAR_lb_method: "SOURCE_IP_PORT" }, undefined],
    ["a /016 prefix", { TF_VAR_private_network_cidr: "10.1.0.0/016" }, "private_network_cidr"],
    ["a leading space in a number", { TF_VAR_num_kube_nodes: " 3" }, "num_kube_nodes"],
    ["a trailing space in a number", { TF_VAR_num_kube_nodes: "3 " }, "num_kube_nodes"],
    ["a trailing newline in a number", { TF_VAR_num_kube_nodes: "3\n" }, "num_kube_nodes"],
    ["the most nodes a cluster has", { TF_VAR_num_kube_nodes: "256", TF_VAR_private_network_cidr: "10.1.0.0/16" }, undefined],
    ["one node more", { TF_VAR_num_kube_nodes: "257", TF_VAR_private_network_cidr: "10.1.0.0/16" }, "num_kube_nodes"],
    ["as many nodes as range() can name", { TF_VAR_num_kube_nodes: "1025", TF_VAR_private_network_cidr: "10.1.0.0/16" }, "num_kube_nodes"],
    ["more nodes than range() can name", { TF_VAR_num_kube_nodes: "1026" }, "num_kube_nodes"],
    [
      "the most nodes over pools",
      {
        TF_VAR_num_kube_nodes: "6",
        TF_VAR_node_pools: "{ a = { count = 200 }, b = { count = 50 } }",
        TF_VAR_private_network_cidr: "10.1.0.0/16",
      },
      undefined,
    ],
    [
      "one node more over pools",
      {
        TF_VAR_num_kube_nodes: "7",
        TF_VAR_node_pools: "{ a = { count = 200 }, b = { count = 50 } }",
        TF_VAR_private_network_cidr: "10.1.0.0/16",
      },
      "node_pools",
    ],
    ["32669 nodes", { TF_VAR_num_kube_nodes: "32669" }, "num_kube_nodes"],
    ["100000 nodes", { TF_VAR_num_kube_nodes: "100000" }, "num_kube_nodes"],
    ["Inf nodes", { TF_VAR_num_kube_nodes: "Inf" }, "num_kube_nodes"],
    ["1e400 nodes", { TF_VAR_num_kube_nodes: "1e400" }, "num_kube_nodes"],
    ["a binary exponent Terraform reads (1p3 = 8)", { TF_VAR_num_kube_nodes: "1p3" }, undefined],
    ["a fraction 512 bits cannot hold", { TF_VAR_num_kube_nodes: `3.${"0".repeat(153)}1` }, undefined],
    ["a fraction 512 bits can hold", { TF_VAR_num_kube_nodes: `3.${"0".repeat(150)}1` }, "num_kube_nodes"],
    ["an empty root_password", { TF_VAR_root_password: "" }, "root_password"],
    ["an escaped ${ in a user's key comment", { TF_VAR_users: `[{ username = "waldorf", ssh_public_key = "${KEY} $\${x}" }]` }, undefined],
    ["an interpolation in a user's key comment", { TF_VAR_users: `[{ username = "waldorf", ssh_public_key = "${KEY} \${x}" }]` }, "users"],
    ["a truncated ed25519 key", { TF_VAR_deploy_ssh_public_key: "ssh-ed25519 A" }, "deploy_ssh_public_key"],
    ["an ed25519 blob named ssh-rsa", { TF_VAR_deploy_ssh_public_key: KEY.replace("ssh-ed25519", "ssh-rsa") }, "deploy_ssh_public_key"],
    ["a system account as a user", { TF_VAR_users: USER(KEY, "sshd") }, "users"],
    ["the deploy user as a user", { TF_VAR_users: USER(KEY, "ubuntu") }, "users"],
    [
      "YAML words as user names",
      { TF_VAR_users: `[{ username = "yes", ssh_public_key = "${KEY}" }, { username = "off", ssh_public_key = "${KEY}" }]` },
      undefined,
    ],
    [
      "the longest domain",
      { TF_VAR_deploy_domain_name: `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(DOMAIN_MAX - 192)}` },
      undefined,
    ],
    [
      "a domain one longer",
      { TF_VAR_deploy_domain_name: `${"a".repeat(63)}.${"b".repeat(63)}.${"c".repeat(63)}.${"d".repeat(DOMAIN_MAX - 191)}` },
      "deploy_domain_name",
    ],
  ];

  it.each(cases)("%s", async (_, env, rejectedBy) => {
    const synthMessage = await synth(env);
    const planned = judged.get(JSON.stringify(env)) ?? planVerdict(cli, varsDir, env);
    expect({ synth: synthMessage === undefined, plan: planned.accepted }).toEqual({ synth: !rejectedBy, plan: !rejectedBy });
    if (rejectedBy) {
      expect(synthMessage).toContain(`${rejectedBy}`);
      // The plan's error output (planVerdict's message).
      expect(planned.message).toMatch(new RegExp(`var[.]${rejectedBy}\\b|"${rejectedBy}"`));
      // No function error in a condition: the rule's own message, or Terraform's type conversion.
      expect(planned.message).not.toMatch(/Error: (Invalid function argument|Error in function call|Call to function)/);
    }
  });

  it("never prints a private key pasted as deploy_ssh_public_key", async () => {
    const env = { TF_VAR_deploy_ssh_public_key: privateKey };
    const synthMessage = await synth(env);
    expect(synthMessage).toBe(
      "Invalid TF_VAR_deploy_ssh_public_key=(not shown): deploy_ssh_public_key must be empty or single OpenSSH public key lines (ssh-ed25519, ecdsa-sha2-nistp256/384/521, ssh-rsa, sk-...) whose base64 blob decodes to a key of the type named.",
    );
    const planned = plan(env);
    expect(planned.accepted).toBe(false);
    const body = privateKey.split("\n")[1];
    expect(planned.output).not.toContain(body);
  });

  it.each([
    ["users", (key: string) => JSON.stringify([{ username: "waldorf", ssh_public_key: key }])],
    ["ssh_host_keys", (key: string) => JSON.stringify({ bastion: key })],
    ["root_password_hash", (key: string) => key],
    ["openstack_ca_certificate", (key: string) => `${CA_CERTIFICATE}${key}`],
  ])("never prints a private key given as %s, at synth or at plan", async (name, value) => {
    const body = privateKey.split("\n")[1];
    const env = { [`TF_VAR_${name}`]: value(privateKey) };
    const synthMessage = await synth(env);
    expect(synthMessage).toContain(`Invalid TF_VAR_${name}=(`);
    expect(synthMessage).not.toContain(body);
    const planned = plan(env);
    expect(planned.accepted).toBe(false);
    expect(planned.output).toContain(`${name} must be`);
    expect(planned.output).not.toContain(body);
  });

  it("reads $${ and %%{ in a TF_VAR_ as Terraform does, and records that value", async () => {
    const users = `[{ username = "waldorf", ssh_public_key = "${KEY} $\${a} %%{b}" }]`;
    const config = await loadConfig({ TF_VAR_users: users });
    expect(config.users[0].ssh_public_key).toBe(`${KEY} \${a} %{b}`);
    // Plan time: the TF_VAR_ given to the default stack, and the stack that recorded it at synth.
    const recordedDir = tempDir("vars-recorded");
    const recorded = parameterRules(await synthToDir(tempDir("recorded-src"), { TF_VAR_users: users }));
    fs.writeFileSync(path.join(recordedDir, "variables.tf.json"), JSON.stringify(recorded));
    expect(runTf(cli, ["init", "-input=false"], recordedDir).status).toBe(0);
    const read = async (dir: string, env: NodeJS.ProcessEnv) => {
      const result = await runTfAsync(cli, ["console"], dir, env, "var.users[0].ssh_public_key\n");
      expect(result.status).toBe(0);
      return JSON.parse(result.stdout.trim());
    };
    expect(await read(varsDir, { TF_VAR_users: users })).toBe(config.users[0].ssh_public_key);
    expect(await read(recordedDir, {})).toBe(config.users[0].ssh_public_key);
  });
});
