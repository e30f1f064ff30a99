import * as fs from "node:fs";
import * as path from "node:path";
import YAML from "yaml";
import { ConfigError } from "../config/config-error";
import { loadBackend, loadConfig } from "../config/load";
import { NEW_CLUSTER_CHANNEL, VARIABLES } from "../config/parameters";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHhU0xQm2c2RZkzC9M7tRrFSe0Q5sQm8l8S3ZzQxYw1a waldorf@example";

async function errorFor(env: NodeJS.ProcessEnv): Promise<string> {
  try {
    await loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).not.toContain("\n");
    return message;
  }
  throw new Error(`expected ${JSON.stringify(env)} to be rejected`);
}

describe("loadConfig", () => {
  it("returns the wiki's defaults when no TF_VAR_ is set, with a supported image and microk8s track (issue 18)", async () => {
    const config = await loadConfig({});
    expect(config).toMatchObject({
      num_kube_nodes: 3,
      kube_node_flavor: "m1.large",
      external_network_name: "vlan1066",
      // The wiki's image ID is one cloud's Ubuntu 20.04, past its end of life: a name, looked up.
      base_image: "Ubuntu 24.04",
      deploy_domain_name: "kube-on-os",
      deploy_user: "ubuntu",
      set_root_password: false,
      users: [],
      public_network_cidr: "10.0.0.0/16",
      private_network_cidr: "10.1.0.0/16",
    });
    // Unset: a running cluster keeps the channel its nodes track, a new one installs NEW_CLUSTER_CHANNEL (issue 33).
    expect(config.microk8s_channel).toBeUndefined();
  });

  it("names the channel a new cluster installs as Salt does (the plan says it, Salt installs it)", () => {
    const defaults = YAML.parse(fs.readFileSync(path.join(__dirname, "..", "salt", "microk8s", "defaults.yaml"), "utf8"));
    expect(defaults.microk8s).toMatchObject({ channel: null, new_cluster_channel: NEW_CLUSTER_CHANNEL });
  });

  it("never carries root_password, even when it is set", async () => {
    const config = await loadConfig({ TF_VAR_root_password: "correct horse battery staple" });
    expect(config).not.toHaveProperty("root_password");
    expect(JSON.stringify(config)).not.toContain("correct horse");
  });

  it("parses numbers and bools the way Terraform converts TF_VAR_ strings", async () => {
    const config = await loadConfig({ TF_VAR_num_kube_nodes: "5", TF_VAR_set_root_password: "true" });
    expect(config.num_kube_nodes).toBe(5);
    expect(config.set_root_password).toBe(true);
    expect((await loadConfig({ TF_VAR_set_root_password: "0" })).set_root_password).toBe(false);
    expect((await loadConfig({ TF_VAR_num_kube_nodes: "1e1" })).num_kube_nodes).toBe(10);
  });

  it("parses list and object values written in HCL syntax", async () => {
    const config = await loadConfig({
      TF_VAR_users: `[{ username = "waldorf", ssh_public_key = "${KEY}" }, { username = "statler", ssh_public_key = "${KEY}" }]`,
      TF_VAR_ssh_allowed_cidrs: `["203.0.113.0/24", "198.51.100.7/32"]`,
    });
    expect(config.users).toEqual([
      { username: "waldorf", ssh_public_key: KEY },
      { username: "statler", ssh_public_key: KEY },
    ]);
    expect(config.ssh_allowed_cidrs).toEqual(["203.0.113.0/24", "198.51.100.7/32"]);
  });

  it("parses list and object values written in JSON syntax", async () => {
    const config = await loadConfig({ TF_VAR_users: JSON.stringify([{ username: "waldorf", ssh_public_key: KEY }]) });
    expect(config.users).toEqual([{ username: "waldorf", ssh_public_key: KEY }]);
  });

  it("accepts non-overlapping custom networks", async () => {
    const config = await loadConfig({
      TF_VAR_public_network_cidr: "192.168.0.0/24",
      TF_VAR_private_network_cidr: "192.168.8.0/22",
      TF_VAR_pod_cidr: "172.16.0.0/16",
      TF_VAR_service_cidr: "172.17.0.0/24",
    });
    expect(config.private_network_cidr).toBe("192.168.8.0/22");
  });

  describe("rejects with one line naming the variable, the value and the rule", () => {
    it.each([
      [{ TF_VAR_num_kube_nodes: "abc" }, 'Invalid TF_VAR_num_kube_nodes="abc": must be a number'],
      [
        { TF_VAR_num_kube_nodes: "0" },
        'Invalid TF_VAR_num_kube_nodes="0": num_kube_nodes must be a whole number from 1 to 256 (the master counts,',
      ],
      [{ TF_VAR_num_kube_nodes: "-1" }, 'Invalid TF_VAR_num_kube_nodes="-1": num_kube_nodes must be a whole number from 1 to 256'],
      [{ TF_VAR_num_kube_nodes: "2.5" }, 'Invalid TF_VAR_num_kube_nodes="2.5": num_kube_nodes must be a whole number'],
      [{ TF_VAR_num_kube_nodes: "" }, 'Invalid TF_VAR_num_kube_nodes="": must be a number'],
      [{ TF_VAR_set_root_password: "yes" }, 'Invalid TF_VAR_set_root_password="yes": must be true or false.'],
      [
        { TF_VAR_deploy_domain_name: "my domain" },
        'Invalid TF_VAR_deploy_domain_name="my domain": deploy_domain_name must be a lower-case DNS name',
      ],
      [
        { TF_VAR_deploy_domain_name: "Example.COM" },
        'Invalid TF_VAR_deploy_domain_name="Example.COM": deploy_domain_name must be a lower-case DNS name',
      ],
      [{ TF_VAR_deploy_domain_name: "-bad.example" }, "deploy_domain_name must be a lower-case DNS name"],
      [{ TF_VAR_deploy_user: "root" }, 'Invalid TF_VAR_deploy_user="root": deploy_user must be a Linux user name other than root'],
      [{ TF_VAR_base_image: "" }, 'Invalid TF_VAR_base_image="": base_image must be an image ID (a lower-case UUID'],
      [{ TF_VAR_base_image: "Ubuntu 24.04 " }, "base_image must be an image ID (a lower-case UUID such as"],
      [{ TF_VAR_base_image: "x".repeat(256) }, "or an image name of 1 to 255 characters without leading or trailing spaces"],
      [
        { TF_VAR_microk8s_channel: "1.27/stable" },
        'Invalid TF_VAR_microk8s_channel="1.27/stable": microk8s_channel must be a classic microk8s channel <track>/<risk>: track 1.28 or later (1.<minor>), risk stable, candidate, beta, edge, such as 1.35/stable (or unset).',
      ],
      [{ TF_VAR_microk8s_channel: "latest/stable" }, "microk8s_channel must be a classic microk8s channel"],
      [{ TF_VAR_microk8s_channel: "1.35-strict/stable" }, "microk8s_channel must be a classic microk8s channel"],
      [{ TF_VAR_microk8s_channel: "1.35" }, "microk8s_channel must be a classic microk8s channel"],
      [{ TF_VAR_microk8s_channel: "1.35/rc" }, "microk8s_channel must be a classic microk8s channel"],
      [{ TF_VAR_kube_node_flavor: " " }, 'Invalid TF_VAR_kube_node_flavor=" ": kube_node_flavor must be a non-empty string'],
      [{ TF_VAR_external_network_name: "" }, 'Invalid TF_VAR_external_network_name="": external_network_name must be a non-empty string'],
      // The wiki's own example is malformed HCL.
      [{ TF_VAR_users: '{ { username = "waldorf" }, { username = "statle" }' }, "Invalid TF_VAR_users="],
      [{ TF_VAR_users: '{ { username = "waldorf" }, { username = "statle" }' }, "is not a valid HCL or JSON value"],
      [
        { TF_VAR_users: '[{ username = "waldorf" }]' },
        "element 0 must have the attributes username and ssh_public_key (lacks ssh_public_key)",
      ],
      [{ TF_VAR_users: '"waldorf"' }, "must be a list of objects { username = string, ssh_public_key = string }"],
      [
        { TF_VAR_users: `[{ username = "Waldorf", ssh_public_key = "${KEY}" }]` },
        "users must be a list whose usernames are Linux user names",
      ],
      [
        { TF_VAR_users: '[{ username = "waldorf", ssh_public_key = "not a key" }]' },
        "users must be a list whose ssh_public_key values are single OpenSSH public key lines",
      ],
      [
        { TF_VAR_users: `[{ username = "a", ssh_public_key = "${KEY}" }, { username = "a", ssh_public_key = "${KEY}" }]` },
        "users must be a list without duplicate usernames",
      ],
      [{ TF_VAR_users: "[var.admins]" }, "must be a literal value without references, interpolation or directives"],
      [
        { TF_VAR_deploy_ssh_public_key: "AAAA" },
        "Invalid TF_VAR_deploy_ssh_public_key=(not shown): deploy_ssh_public_key must be empty or single OpenSSH public key lines",
      ],
      [
        { TF_VAR_deploy_ssh_public_key: KEY, TF_VAR_keypair_name: "mine" },
        'Invalid TF_VAR_keypair_name="mine": keypair_name must be empty when deploy_ssh_public_key is set',
      ],
      [
        { TF_VAR_salt_volume_size: "0" },
        'Invalid TF_VAR_salt_volume_size="0": salt_volume_size must be a whole number of GiB from 1 to 1024.',
      ],
      [
        { TF_VAR_kube_server_group_policy: "spread" },
        "kube_server_group_policy must be one of soft-anti-affinity, anti-affinity, soft-affinity, affinity, none.",
      ],
      [{ TF_VAR_bastion_flavor: "" }, 'Invalid TF_VAR_bastion_flavor="": bastion_flavor must be a non-empty string'],
      [
        { TF_VAR_ssh_allowed_cidrs: "[]" },
        'Invalid TF_VAR_ssh_allowed_cidrs="[]": ssh_allowed_cidrs must be a list of at least 1 IPv4 networks',
      ],
      [{ TF_VAR_ssh_allowed_cidrs: '["10.0.0.1/8"]' }, "ssh_allowed_cidrs must be a list of at least 1 IPv4 networks in CIDR form"],
      [{ TF_VAR_api_allowed_cidrs: '["any"]' }, "api_allowed_cidrs must be a list of IPv4 networks in CIDR form"],
      [{ TF_VAR_api_allowed_cidrs: '"0.0.0.0/0"' }, 'Invalid TF_VAR_api_allowed_cidrs="\\"0.0.0.0/0\\"": must be a list of strings.'],
      [
        { TF_VAR_dns_nameservers: '["dns.example"]' },
        "dns_nameservers must be a list of 1 to 5 distinct IPv4 addresses other than 0.0.0.0",
      ],
      [
        { TF_VAR_ssh_host_keys: '{ salt = "ssh-ed25519 AAAA" }' },
        "Invalid TF_VAR_ssh_host_keys=(not shown): ssh_host_keys must be a map whose keys are bastion or salt_master.",
      ],
      [
        { TF_VAR_ssh_host_keys: '{ bastion = "not a key" }' },
        "ssh_host_keys must be a map whose values are single OpenSSH public key lines",
      ],
      [{ TF_VAR_ssh_host_keys: '["ssh-ed25519 AAAA"]' }, "Invalid TF_VAR_ssh_host_keys=(not shown): must be a map of strings"],
      [{ TF_VAR_run_provisioners: "yes" }, 'Invalid TF_VAR_run_provisioners="yes": must be true or false.'],
      [
        { TF_VAR_public_network_cidr: "10.0.0.0" },
        'Invalid TF_VAR_public_network_cidr="10.0.0.0": public_network_cidr must be an IPv4 network address in CIDR form',
      ],
      [{ TF_VAR_public_network_cidr: "10.0.0.1/16" }, "public_network_cidr must be an IPv4 network address"],
      [{ TF_VAR_private_network_cidr: "10.1.0.0/28" }, "prefix from /8 to /24"],
      [
        { TF_VAR_private_network_cidr: "10.0.0.0/16" },
        'Invalid TF_VAR_private_network_cidr="10.0.0.0/16": private_network_cidr must be a network that overlaps none of public_network_cidr.',
      ],
      [
        { TF_VAR_public_network_cidr: "10.0.0.0/8" },
        'Invalid private_network_cidr="10.1.0.0/16": private_network_cidr must be a network that overlaps none of public_network_cidr.',
      ],
      // microk8s' default pod network is the wiki's private network.
      [
        { TF_VAR_pod_cidr: "10.1.0.0/16" },
        'Invalid TF_VAR_pod_cidr="10.1.0.0/16": pod_cidr must be a network that overlaps none of public_network_cidr, private_network_cidr.',
      ],
      [
        { TF_VAR_service_cidr: "10.244.0.0/24" },
        "service_cidr must be a network that overlaps none of public_network_cidr, private_network_cidr, pod_cidr.",
      ],
      [
        { TF_VAR_private_network_cidr: "10.1.0.0/24", TF_VAR_num_kube_nodes: "40" },
        'Invalid TF_VAR_num_kube_nodes="40": num_kube_nodes must be small enough that every worker\'s fixed address',
      ],
    ])("%j", async (env, message) => {
      expect(await errorFor(env)).toContain(message);
    });
  });

  it("never echoes a rejected root_password", async () => {
    const message = await errorFor({ TF_VAR_root_password: "hunter2" });
    expect(message).toBe("Invalid TF_VAR_root_password=(hidden): root_password must be at least 12 characters long.");
  });
});

describe("loadBackend", () => {
  it("keeps state locally unless a state server is named", () => {
    expect(loadBackend({})).toBe("local");
    expect(loadBackend({ KUBE_ON_OS_BACKEND: "" })).toBe("local");
    expect(loadBackend({ TF_HTTP_ADDRESS: "https://gitlab.example.org/api/v4/projects/1/terraform/state/x" })).toBe("http");
  });

  it("takes KUBE_ON_OS_BACKEND over TF_HTTP_ADDRESS", () => {
    expect(loadBackend({ KUBE_ON_OS_BACKEND: "http" })).toBe("http");
    expect(loadBackend({ KUBE_ON_OS_BACKEND: "local", TF_HTTP_ADDRESS: "https://state.example.org/x" })).toBe("local");
  });

  it("rejects an unknown backend by name", () => {
    expect(() => loadBackend({ KUBE_ON_OS_BACKEND: "s3" })).toThrow(
      'Invalid KUBE_ON_OS_BACKEND="s3": must be "http" or "local" (unset: http when TF_HTTP_ADDRESS is set, else local).',
    );
  });
});

describe("VARIABLES", () => {
  it("describes every variable and gives every rule a Terraform condition", () => {
    for (const [name, spec] of Object.entries(VARIABLES)) {
      expect(spec.description.length).toBeGreaterThan(20);
      for (const rule of spec.rules as readonly { condition: string }[]) {
        expect(rule.condition).toContain(name);
      }
    }
  });
});
