/**
 * L2: the plan-time lookups of what the project holds, with a credential that holds the admin
 * role, which lists every project's floating IPs and security groups
 * (neutron/conf/policies/floatingip.py, get_floatingip; security_group.py, get_security_group):
 * real OpenTofu and Terraform against the OpenStack API double. A given floating IP of another
 * project is refused in words that name it, and a security group's name is looked up in this
 * project alone.
 */
import type { StateServer } from "./doubles/http-state/server";
import type { OpenStackDouble } from "./doubles/openstack/server";
import { GITLAB_STATE, useCloud } from "./support/cloud";
import { failedPlan, planJson } from "./support/plan";
import type { CloudTarget } from "./support/target";
import { describeEachCli } from "./support/tofu";
import { WITHOUT_PROVISIONERS, Workspace, workspace } from "./support/workspace";

let double: OpenStackDouble;
let target: CloudTarget;
let state: StateServer;

const OTHER_PROJECT = "7c1e2d3f4a5b46c7d8e9f0a1b2c3d4e5";
/** Another project's floating IP, on the same external network. */
const FOREIGN = "192.0.2.204";

useCloud(
  {
    double: {
      settled: true,
      assignedRoles: ["admin", "load-balancer_member"],
      existingFloatingIps: [{ address: FOREIGN, ownerProjectId: OTHER_PROJECT }],
      existingSecurityGroups: [{ name: "monitoring" }, { name: "monitoring", ownerProjectId: OTHER_PROJECT }],
    },
    state: GITLAB_STATE,
  },
  (cloud) => ({ double, target, state } = cloud),
);

describeEachCli("L2: with an admin credential, the plan takes what this project holds, and nothing of another's", (cli) => {
  let ws: Workspace;

  beforeAll(async () => {
    ws = await workspace(double, state, {}, WITHOUT_PROVISIONERS, cli);
  });

  it("refuses another project's floating IP, which an admin sees, naming its project", async () => {
    const stderr = await failedPlan(ws, target, { TF_VAR_bastion_floating_ip: FOREIGN });
    expect(stderr).toContain(
      `Invalid bastion_floating_ip: bastion_floating_ip=${FOREIGN} belongs to project ${OTHER_PROJECT}, not to this deployment's (${double.identity.project.id}): give one this project holds (openstack floating ip list).`,
    );
  });

  it("finds a security group by name in this project, though another project's has the same name", async () => {
    const plan = await planJson(ws, { TF_VAR_worker_security_groups: '["monitoring"]' });
    const read = plan.prior_state.values.root_module.resources.filter(
      (r: any) => r.address === 'data.openstack_networking_secgroup_v2.worker_security_groups["monitoring"]',
    );
    const own = double.neutron.securityGroups.all().find((g) => g.name === "monitoring" && g.project_id === double.identity.project.id)!;
    expect(read.map((r: any) => r.values.id)).toEqual([own.id]);
  });
});
