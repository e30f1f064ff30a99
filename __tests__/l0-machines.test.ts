import { Fn, Testing, Token } from "cdktf";
import { Construct } from "constructs";
import { BlockstorageVolumeV3 } from "../.gen/providers/openstack/blockstorage-volume-v3";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { ComputeVolumeAttachV2 } from "../.gen/providers/openstack/compute-volume-attach-v2";
import { NetworkingFloatingipAssociateV2 } from "../.gen/providers/openstack/networking-floatingip-associate-v2";
import { Bastion } from "../constructs/bastion";
import { ClusterLayout } from "../constructs/cluster-layout";
import { KubeNodePool, KubeNodePoolProps } from "../constructs/kube-node-pool";
import { MachineProps } from "../constructs/machine";
import { Network } from "../constructs/networking";
import { SaltMaster } from "../constructs/salt-master";

function machineProps(scope: Construct): MachineProps {
  const network = new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "lab.example" });
  return {
    network,
    imageId: "ad156007-77bb-4e32-ac97-7f8340cab73d",
    layout: new ClusterLayout(scope, { domain: "lab.example", publicCidr: "10.0.0.0/16", privateCidr: "10.1.0.0/16", nodeCount: 3 }),
    keyPair: "deploy",
    bootstrap: {
      dnsNameservers: ["9.9.9.9"],
      saltMasterIp: "10.1.0.5",
      saltMasterFqdn: "salt.lab.example",
      rootPasswordUsers: Token.asString(Fn.tolist([])),
      privateCidr: "10.1.0.0/16",
    },
  };
}

function json(build: (scope: Construct, props: MachineProps) => void): any {
  return JSON.parse(Testing.synthScope((scope) => build(scope, machineProps(scope))));
}

function resourcesOf(synthesized: any, type: string): any[] {
  return Object.values(synthesized.resource?.[type] ?? {});
}

function port(synthesized: any, name: string): any {
  const found = resourcesOf(synthesized, "openstack_networking_port_v2").filter((p) => p.name === name);
  expect(found).toHaveLength(1);
  return found[0];
}

describe("Bastion", () => {
  const synthesized = json((scope, props) => new Bastion(scope, "Bastion", props));

  it("is dual-homed at 10.0.0.10 and at the private gateway 10.1.0.1", () => {
    expect(port(synthesized, "bastion.lab.example-public").fixed_ip[0].ip_address).toBe('${cidrhost("10.0.0.0/16", 10)}');
    expect(port(synthesized, "bastion.lab.example-private").fixed_ip[0].ip_address).toBe('${cidrhost("10.1.0.0/16", 1)}');
  });

  it("may send the private network's traffic from its private port", () => {
    expect(port(synthesized, "bastion.lab.example-private").allowed_address_pairs).toEqual([{ ip_address: "0.0.0.0/0" }]);
    expect(port(synthesized, "bastion.lab.example-public").allowed_address_pairs).toEqual([]);
  });

  it("boots with the bastion's cloud-config", () => {
    const [instance] = resourcesOf(synthesized, ComputeInstanceV2.tfResourceType);
    expect(instance.user_data).toMatch(/^#cloud-config\n# kube-on-os bastion:/);
    expect(instance.user_data).toContain("/usr/local/sbin/kube-on-os-nat");
  });

  it("puts the public port first, keeps SSH on the bastion group, and gets a floating IP", () => {
    const [instance] = resourcesOf(synthesized, ComputeInstanceV2.tfResourceType);
    expect(instance).toMatchObject({ name: "bastion.lab.example", flavor_name: "m1.small", key_pair: "deploy" });
    expect(instance.network[0].port).toMatch(/Bastion_PublicPort_/);
    // The bastion's group, and the role's (constructs/networking/role-access.ts).
    expect(port(synthesized, "bastion.lab.example-public").security_group_ids).toMatch(
      /^\$\{concat\(\[openstack_networking_secgroup_v2\.Network_BastionSecurityGroup_\w+\.id\], local\.Network_bastion_security_group_ids_\w+\)\}$/,
    );
    const [association] = resourcesOf(synthesized, NetworkingFloatingipAssociateV2.tfResourceType);
    expect(association.port_id).toMatch(/Bastion_PublicPort_/);
    expect(association.depends_on[0]).toMatch(/PublicRouterInterface/);
  });
});

describe("SaltMaster", () => {
  const synthesized = json((scope, props) => new SaltMaster(scope, "SaltMaster", { ...props, volumeSize: 20 }));

  it("lives at 10.1.0.5 on the private network only, in the internal and salt groups", () => {
    const saltPort = port(synthesized, "salt.lab.example-private");
    expect(saltPort.fixed_ip[0].ip_address).toBe('${cidrhost("10.1.0.0/16", 5)}');
    expect(saltPort.security_group_ids).toHaveLength(2);
    expect(resourcesOf(synthesized, "openstack_networking_port_v2")).toHaveLength(1);
  });

  it("keeps its state on a separate volume, attached rather than owned by the instance", () => {
    expect(resourcesOf(synthesized, BlockstorageVolumeV3.tfResourceType)).toEqual([
      expect.objectContaining({ name: "salt.lab.example-srv", size: 20 }),
    ]);
    const [attachment] = resourcesOf(synthesized, ComputeVolumeAttachV2.tfResourceType);
    expect(attachment.volume_id).toMatch(/SaltMaster_Volume_/);
    expect(attachment.instance_id).toMatch(/SaltMaster_Instance_/);
    const [instance] = resourcesOf(synthesized, ComputeInstanceV2.tfResourceType);
    expect(instance.block_device).toBeUndefined();
  });

  it("boots with the Salt master's cloud-config, which prepares the volume", () => {
    const [instance] = resourcesOf(synthesized, ComputeInstanceV2.tfResourceType);
    expect(instance.user_data).toMatch(/^#cloud-config\n# kube-on-os salt-master:/);
    expect(instance.user_data).toContain("/usr/local/sbin/kube-on-os-salt-volume");
  });

  it("rejects a volume size that is not a whole number of GiB", () => {
    expect(() => json((scope, props) => new SaltMaster(scope, "SaltMaster", { ...props, volumeSize: 0 }))).toThrow(
      "SaltMaster: volumeSize must be a whole number of GiB, at least 1 (got 0)",
    );
  });
});

describe("KubeNodePool", () => {
  const props =
    (extra: Partial<KubeNodePoolProps> = {}) =>
    (scope: Construct, base: MachineProps) =>
      new KubeNodePool(scope, "KubeNodes", { ...base, podCidr: "10.244.0.0/16", serviceCidr: "10.152.183.0/24", ...extra });
  const synthesized = json(props());

  it("puts the master on both networks at 10.0.0.11 and 10.1.0.10, behind the API group, with a floating IP", () => {
    expect(port(synthesized, "k8s-master.lab.example-public")).toMatchObject({
      fixed_ip: [expect.objectContaining({ ip_address: '${cidrhost("10.0.0.0/16", 11)}' })],
      security_group_ids: expect.stringMatching(
        /^\$\{concat\(\[openstack_networking_secgroup_v2\.Network_KubeApiSecurityGroup_\w+\.id\], local\.Network_control_plane_security_group_ids_\w+\)\}$/,
      ),
    });
    expect(port(synthesized, "k8s-master.lab.example-private").fixed_ip[0].ip_address).toBe('${cidrhost("10.1.0.0/16", 10)}');
    const associations = resourcesOf(synthesized, NetworkingFloatingipAssociateV2.tfResourceType);
    expect(associations.map((a) => a.port_id)).toEqual([expect.stringMatching(/KubeNodes_MasterPublicPort_/)]);
  });

  it("counts the workers from the layout, and names and addresses each by its index in the layout's lists", () => {
    const workerPort = port(synthesized, "${element(local.kube_worker_fqdns, count.index)}-private");
    // Terraform computes the count, so TF_VAR_num_kube_nodes works at plan time.
    expect(workerPort.count).toBe("${(3 - 1)}");
    expect(workerPort.fixed_ip[0].ip_address).toBe("${element(local.kube_worker_private_ips, count.index)}");
    const worker = resourcesOf(synthesized, ComputeInstanceV2.tfResourceType).find((i) => i.count !== undefined);
    expect(worker).toMatchObject({ count: "${(3 - 1)}", name: "${element(local.kube_worker_fqdns, count.index)}" });
    expect(worker.network[0].port).toMatch(/^\$\{openstack_networking_port_v2\.KubeNodes_WorkerPort_\w+\[count\.index\]\.id\}$/);
  });

  it("names each worker's cloud-config after its own index", () => {
    const worker = resourcesOf(synthesized, ComputeInstanceV2.tfResourceType).find((i) => i.count !== undefined);
    expect(worker.user_data).toContain("hostname: ${jsonencode(element(local.kube_worker_hosts, count.index))}");
  });

  it("lets node ports carry pod and service traffic", () => {
    for (const name of ["k8s-master.lab.example-private", "${element(local.kube_worker_fqdns, count.index)}-private"]) {
      expect(port(synthesized, name).allowed_address_pairs).toEqual([{ ip_address: "10.244.0.0/16" }, { ip_address: "10.152.183.0/24" }]);
    }
  });

  it("spreads the nodes with a server group, which 'none' leaves out", () => {
    const [group] = resourcesOf(synthesized, "openstack_compute_servergroup_v2");
    expect(group).toMatchObject({ policies: ["soft-anti-affinity"], count: '${("soft-anti-affinity" == "none") ? 0 : 1}' });
    for (const instance of resourcesOf(synthesized, ComputeInstanceV2.tfResourceType)) {
      expect(instance.scheduler_hints[0].group).toMatch(
        /^\$\{one\(openstack_compute_servergroup_v2\.KubeNodes_ServerGroup_\w+\[\*\]\.id\)\}$/,
      );
    }
    const none = json(props({ serverGroupPolicy: "none" }));
    expect(resourcesOf(none, "openstack_compute_servergroup_v2")[0].count).toBe('${("none" == "none") ? 0 : 1}');
  });

  it.each([
    [
      { serverGroupPolicy: "spread" },
      'KubeNodePool: serverGroupPolicy must be one of soft-anti-affinity, anti-affinity, soft-affinity, affinity, none (got "spread")',
    ],
  ])("rejects %j", (extra, message) => {
    expect(() => json(props(extra))).toThrow(message);
  });
});
