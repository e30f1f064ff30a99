import { Fn, TerraformVariable, Testing, Token } from "cdktf";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { ComputeServergroupV2 } from "../.gen/providers/openstack/compute-servergroup-v2";
import { DataOpenstackImagesImageV2 } from "../.gen/providers/openstack/data-openstack-images-image-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { UUID_PATTERN } from "../config/rules";
import { ClusterLayout } from "../constructs/cluster-layout";
import { Network } from "../constructs/networking";
import { WorkerPools, WorkerPoolsProps } from "../constructs/worker-pools";
import { localById } from "./support/synth";

type Props = Partial<Pick<WorkerPoolsProps, "defaultFlavor" | "defaultImage" | "serverGroupPolicy">>;

/** WorkerPools over the node_pools variable, as the stack builds it, with literal settings. */
function synth(props: Props = {}): string {
  return Testing.synthScope((scope) => {
    const pools = new TerraformVariable(scope, "node_pools", {}).value;
    const network = new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "lab.example" });
    const layout = new ClusterLayout(scope, {
      domain: "lab.example",
      publicCidr: "10.0.0.0/16",
      privateCidr: "10.1.0.0/16",
      nodeCount: 3,
      pools,
    });
    new WorkerPools(scope, "WorkerPools", {
      network,
      layout,
      imageId: "ad156007-77bb-4e32-ac97-7f8340cab73d",
      keyPair: "deploy",
      bootstrap: {
        dnsNameservers: ["9.9.9.9"],
        saltMasterIp: "10.1.0.5",
        saltMasterFqdn: "salt.lab.example",
        rootPasswordUsers: Token.asString(Fn.tolist([])),
        privateCidr: "10.1.0.0/16",
      },
      pools,
      defaultImage: "Ubuntu 24.04",
      podCidr: "10.244.0.0/16",
      serviceCidr: "10.152.183.0/24",
      ...props,
    });
  });
}

function json(props: Props = {}): any {
  return JSON.parse(synth(props));
}

/** The WorkerPools local named `name`, as [its reference, its expression]. */
function local(synthesized: any, name: string): [string, string] {
  const [key, value] = localById(synthesized, `WorkerPools_${name}`);
  return [`local.${key}`, value];
}

function only(synthesized: any, type: string): any {
  const all = Object.values(synthesized.resource[type] ?? {});
  expect(all).toHaveLength(1);
  return all[0];
}

describe("WorkerPools", () => {
  const text = synth();
  const synthesized = JSON.parse(text);
  const [settings, settingsExpression] = local(synthesized, "settings");
  const worker = only(synthesized, ComputeInstanceV2.tfResourceType);
  const port = only(synthesized, NetworkingPortV2.tfResourceType);

  it("keys every worker and its port by host name, from the layout's kube_pool_nodes_by_host", () => {
    expect(worker.for_each).toBe("${local.kube_pool_nodes_by_host}");
    expect(port.for_each).toBe("${local.kube_pool_nodes_by_host}");
    // So adding a pool, or a worker at a pool's end, moves no other worker.
    expect(synthesized.locals.kube_pool_nodes_by_host).toBe("${{ for node in local.kube_pool_nodes : node.host => node }}");
    expect(synthesized.locals.kube_pool_nodes).toContain('host = format("k8s-%s-%d", name, i)');
    expect(synthesized.locals.kube_pool_nodes).toContain('fqdn = format("k8s-%s-%d.%s", name, i, "lab.example")');
  });

  it("names each worker by its FQDN and its port <fqdn>-private, in the zone the layout gave it", () => {
    expect(worker).toMatchObject({ name: "${each.value.fqdn}", availability_zone: "${each.value.zone}", key_pair: "deploy" });
    expect(port.name).toBe("${each.value.fqdn}-private");
    expect(worker.network).toEqual([
      { port: expect.stringMatching(/^\$\{openstack_networking_port_v2\.WorkerPools_Port_\w+\[each\.key\]\.id\}$/) },
    ]);
  });

  it("gives the ports no fixed address, so Neutron picks one from the DHCP range, and lets them carry pod and service traffic", () => {
    expect(port.fixed_ip).toEqual([{ subnet_id: expect.stringMatching(/^\$\{local\.Network_private_subnet_id_\w+\}$/) }]);
    expect(port.allowed_address_pairs).toEqual([{ ip_address: "10.244.0.0/16" }, { ip_address: "10.152.183.0/24" }]);
    // The Kubernetes nodes' groups, and the workers' (constructs/networking/role-access.ts).
    expect(port.security_group_ids).toMatch(
      /^\$\{concat\(\[openstack_networking_secgroup_v2\.Network_InternalSecurityGroup_\w+\.id, openstack_networking_secgroup_v2\.Network_KubeNodesSecurityGroup_\w+\.id\], local\.Network_worker_security_group_ids_\w+\)\}$/,
    );
  });

  it("gives each pool a server group named <domain>-k8s-<pool>, the place of its workers", () => {
    const [grouped, groupedExpression] = local(synthesized, "grouped");
    expect(text).toHaveResourceWithProperties(ComputeServergroupV2, {
      for_each: `\${${grouped}}`,
      name: "lab.example-k8s-${each.key}",
      policies: ["soft-anti-affinity"],
    });
    expect(groupedExpression).toBe(`\${{ for name, s in ${settings} : name => s if s.grouped }}`);
    expect(settingsExpression).toContain('grouped = "soft-anti-affinity" != "none"');
    expect(worker.scheduler_hints).toEqual([
      {
        group: expect.stringMatching(
          /^\$\{try\(openstack_compute_servergroup_v2\.WorkerPools_ServerGroup_\w+\[each\.value\.pool\]\.id, null\)\}$/,
        ),
      },
    ]);
  });

  it('leaves every pool ungrouped with the policy "none"', () => {
    const none = json({ serverGroupPolicy: "none" });
    expect(local(none, "settings")[1]).toContain('grouped = "none" != "none"');
  });

  it("takes each pool's flavor and image, or the defaults", () => {
    expect(settingsExpression).toContain('flavor = coalesce(pool.flavor, "m1.large")');
    expect(settingsExpression).toContain('image = coalesce(pool.image, "Ubuntu 24.04")');
    const custom = local(json({ defaultFlavor: "m1.xlarge", defaultImage: "Debian 13" }), "settings")[1];
    expect(custom).toContain('flavor = coalesce(pool.flavor, "m1.xlarge")');
    expect(custom).toContain('image = coalesce(pool.image, "Debian 13")');
    expect(worker.flavor_name).toBe(`\${${settings}[each.value.pool].flavor}`);
  });

  it("looks each image name up in Glance once, and uses an image ID as it is", () => {
    const [names, namesExpression] = local(synthesized, "image_names");
    const [ids, idsExpression] = local(synthesized, "image_ids");
    expect(text).toHaveDataSourceWithProperties(DataOpenstackImagesImageV2, {
      for_each: `\${toset(${names})}`,
      name: "${each.value}",
      most_recent: true,
    });
    expect(namesExpression).toBe(`\${toset([for s in values(${settings}) : s.image if !can(regex("${UUID_PATTERN}", s.image))])}`);
    expect(idsExpression).toContain(
      `can(regex("${UUID_PATTERN}", s.image)) ? s.image : data.openstack_images_image_v2.WorkerPools_Images_`,
    );
    expect(worker.image_id).toBe(`\${${ids}[each.value.pool]}`);
  });

  it("boots a pool's workers from a volume of its size and type, and the others from the hypervisor's disk", () => {
    const blockDevice = worker.dynamic.block_device;
    expect(blockDevice.for_each).toBe(`\${${settings}[each.value.pool].volume_size > 0 ? [${settings}[each.value.pool].volume_size] : []}`);
    expect(blockDevice.content).toMatchObject({
      source_type: "image",
      destination_type: "volume",
      boot_index: 0,
      delete_on_termination: true,
    });
    expect(settingsExpression).toContain("volume_size = pool.boot_volume_size, volume_type = pool.boot_volume_type");
  });

  it("gives the layout the workers' addresses, and the chain their ids, in the layout's order", () => {
    expect(synthesized.locals.kube_pool_addresses).toMatch(
      /^\$\{\[for node in local\.kube_pool_nodes : openstack_networking_port_v2\.WorkerPools_Port_\w+\[node\.host\]\.all_fixed_ips\[0\]\]\}$/,
    );
    expect(local(synthesized, "worker_ids")[1]).toMatch(
      /^\$\{\[for node in local\.kube_pool_nodes : try\(openstack_compute_instance_v2\.WorkerPools_Worker_\w+\[node\.host\]\.id, null\)\]\}$/,
    );
  });

  it("boots each worker as a Salt minion named after its host", () => {
    expect(worker.user_data).toMatch(/^#cloud-config\n# kube-on-os salt-minion:/);
    expect(worker.user_data).toContain("${jsonencode(each.value.host)}");
  });
});
