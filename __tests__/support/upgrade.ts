/**
 * What upgrading a deployment made by an earlier version of kube-on-os changes, as the upgrade
 * tests name it: __tests__/l3-upgrade-matrix.test.ts (every version, on the double) and
 * __tests__/l5-chain-over-ssh.test.ts (a4e49bc, with its chain over SSH). CHANGELOG.md lists the
 * same for users.
 */
import { isDeepStrictEqual } from "node:util";
import type { RunResult } from "./tofu";

/**
 * "<type>.<id>[<index>] <actions>" for every change a saved plan (`show -json`) makes but no-ops
 * and reads, sorted; the construct path's prefix and hash are left out of the address.
 */
export function changesOf(plan: any): string[] {
  return plan.resource_changes
    .filter((change: any) => !["no-op", "read"].includes(change.change.actions.join()) && !tagsOnly(change))
    .map(nameOf)
    .sort();
}

/** A change as changesOf() names it: "<type>.<id>[<index>] <actions>". */
function nameOf(change: any): string {
  return `${change.address.replace(/^(null_resource|terraform_data|openstack_[a-z0-9_]+)\.([A-Za-z]+_)?([A-Za-z]+)_[0-9A-F]{8}/, "$1.$3")} ${change.change.actions.join("+")}`;
}

/**
 * Whether a change only updates a resource's tags in place: a deployment made before the stack
 * tagged its resources (issue 39) gains the cluster's tag on each at its next apply, and nothing
 * else; `all_tags`, which the provider reads back, is unknown until then.
 */
export function tagsOnly(change: any): boolean {
  if (change.change.actions.join() !== "update") return false;
  const { before, after, after_unknown: unknown = {} } = change.change;
  const keys = new Set([...Object.keys(before ?? {}), ...Object.keys(after ?? {})]);
  const changed = [...keys].filter(
    (key) => key !== "all_tags" && (unknown[key] === true || !isDeepStrictEqual(before?.[key] ?? null, after?.[key] ?? null)),
  );
  return changed.length > 0 && changed.every((key) => key === "tags");
}

/** The changes a plan makes that only update tags (tagsOnly), as changesOf() names them. */
export function taggingOf(plan: any): string[] {
  return plan.resource_changes.filter(tagsOnly).map(nameOf).sort();
}

/** A plan made and shown (`show -json`) by `tofu` (OpenTofu or Terraform) in its workspace. */
export async function planOf(tofu: (args: string[]) => Promise<RunResult>): Promise<any> {
  const plan = await tofu(["plan", "-input=false", "-out=plan.cache"]);
  if (plan.status !== 0) throw new Error(`plan failed:\n${plan.stderr}`);
  return JSON.parse((await tofu(["show", "-json", "plan.cache"])).stdout);
}

/** changesOf() a plan made and shown by `tofu` (OpenTofu or Terraform) in its workspace. */
export async function plannedChanges(tofu: (args: string[]) => Promise<RunResult>): Promise<string[]> {
  return changesOf(await planOf(tofu));
}

/** The API load balancer's resources at 3 nodes, as changesOf() names them. */
/** The resources a cluster lives on: replacing or destroying one loses a machine or its data. */
export const MACHINE_TYPES = ["openstack_compute_instance_v2", "openstack_blockstorage_volume_v3", "openstack_compute_volume_attach_v2"];

export const API_LOAD_BALANCER = [
  "openstack_lb_listener_v2.Listener[0]",
  "openstack_lb_loadbalancer_v2.ApiLoadBalancer[0]",
  "openstack_lb_member_v2.Member[0]",
  "openstack_lb_member_v2.Member[1]",
  "openstack_lb_member_v2.Member[2]",
  "openstack_lb_monitor_v2.Monitor[0]",
  "openstack_lb_pool_v2.Pool[0]",
  "openstack_networking_floatingip_associate_v2.FloatingIpAssociation[0]",
  "openstack_networking_floatingip_v2.FloatingIp[0]",
  "openstack_networking_secgroup_rule_v2.MemberRule[0]",
];

/** The cloud integration's resources on a cloud with Octavia, as changesOf() names them. */
export const CLOUD_INTEGRATION = [
  "openstack_identity_application_credential_v3.Credential[0]",
  "openstack_networking_secgroup_rule_v2.NodePortRule[0]",
];

/** The Kubernetes nodes' security group, new since a4e49bc, and the nodes' private ports (3 nodes) that gain it. */
export const KUBE_NODES_GROUP = [
  "openstack_networking_secgroup_v2.KubeNodesSecurityGroup create",
  "openstack_networking_port_v2.MasterPrivatePort update",
  "openstack_networking_port_v2.WorkerPort[0] update",
  "openstack_networking_port_v2.WorkerPort[1] update",
];

/**
 * Every change today's stack plans for a deployment of 3 nodes made at a4e49bc or before, on a
 * cloud with Octavia, without the provisioning chain (run_provisioners = false): the resources
 * added since, and the nodes' ports gaining their new security group in place. No machine.
 */
export const ADDED_SINCE_A4E49BC = [
  ...API_LOAD_BALANCER.map((resource) => `${resource} create`),
  ...CLOUD_INTEGRATION.map((resource) => `${resource} create`),
  ...KUBE_NODES_GROUP,
  // The control plane's floor (constructs/control-plane-floor.ts) and the parameters' preconditions.
  "terraform_data.ControlPlaneFloor create",
  "terraform_data.ParameterRules create",
].sort();
