/**
 * L3 against the real OpenStack 2026.2 services (scripts/openstack/): the journeys the double
 * cannot vouch for itself, run by OpenTofu with the real provider on a Keystone project of the
 * file's own. The breadth (every parameter, both CLIs, failures) stays on the double.
 */
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { KitProject, kitProject, kitUp } from "./support/openstack-kit";
import { workspace } from "./support/workspace";

let admin: Record<string, string>;
let project: KitProject;
let state: StateServer;

// The kit's cold start (migrations and seeds) when its snapshot is not cached yet.
const START = 900_000;
// Nova and Octavia change state asynchronously: a whole apply takes a minute or more.
const JOURNEY = 900_000;

beforeAll(async () => {
  admin = await kitUp();
  project = await kitProject(admin);
  state = await startStateServer();
}, START);

afterAll(async () => {
  await state?.close();
  await project?.remove();
});

/** The attributes of the one resource in `tofu show -json`'s state of `type` whose address has `part`. */
function stateValues(show: any, type: string, part = ""): any {
  const found = (show.values.root_module.resources as any[]).filter((r) => r.type === type && r.address.includes(part));
  if (found.length !== 1) throw new Error(`${found.length} resources of ${type} matching "${part}" in the state`);
  return found[0].values;
}

describe("L3 on the real OpenStack services: the default stack", () => {
  it(
    "applies, re-plans with no change, lets the cluster's credential in, and destroys to an empty project",
    async () => {
      const ws = await workspace(project, state);
      const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
      expect(apply.stderr).toBe("");
      expect(apply.status).toBe(0);

      const held = await project.resources();
      const count = (kind: string) => held.filter((line) => line.startsWith(`${kind} `)).length;
      // The bastion, the Salt master and three nodes; the load balancer with its floating IP.
      expect(count("server")).toBe(5);
      expect(count("load balancer")).toBe(1);
      expect(count("application credential")).toBe(1);

      const show = JSON.parse((await ws.tofu(["show", "-json"])).stdout);
      // The cloud controller manager authenticates with the cluster's application credential.
      const credential = stateValues(show, "openstack_identity_application_credential_v3");
      const token = await fetch(`${admin.OS_AUTH_URL}/auth/tokens`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          auth: {
            identity: { methods: ["application_credential"], application_credential: { id: credential.id, secret: credential.secret } },
          },
        }),
      });
      expect(token.status).toBe(201);
      expect(((await token.json()) as any).token.project.id).toBe(project.projectId);
      // The API's floating IP is on the load balancer's VIP port.
      const loadBalancer = stateValues(show, "openstack_lb_loadbalancer_v2");
      const association = stateValues(show, "openstack_networking_floatingip_associate_v2", "ApiLoadBalancer");
      expect(association.port_id).toBe(loadBalancer.vip_port_id);

      const plan = await ws.tofu(["plan", "-detailed-exitcode", "-input=false"]);
      expect(plan.stderr).toBe("");
      expect(plan.status).toBe(0);

      const destroy = await ws.tofu(["destroy", "-auto-approve", "-input=false"]);
      expect(destroy.stderr).toBe("");
      expect(destroy.status).toBe(0);
      expect(await project.resources()).toEqual([]);
    },
    JOURNEY,
  );
});
