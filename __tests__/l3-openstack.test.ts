/**
 * L3 on both targets: journeys run by OpenTofu with the real provider on the OpenStack API double
 * and on the real OpenStack 2026.2 services (scripts/openstack/), each on a project of its own,
 * with a recorder between the provider and the cloud. The provider's exchanges with the two must
 * agree, but for the differences docs/decisions.md lists with their reasons: the real cloud is
 * the double's referee. The breadth (every parameter, both CLIs, failures) stays on the double.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { StateServer, startStateServer } from "./doubles/http-state/server";
import { OpenStackDouble, startOpenStackDouble } from "./doubles/openstack/server";
import { KitProject, kitProject, kitUp } from "./support/openstack-kit";
import { Exchange, exchangeLines, startRecorder } from "./support/recorder";
import { CloudTarget, doubleTarget } from "./support/target";
import { workspace } from "./support/workspace";

let double: OpenStackDouble;
let project: KitProject;
let state: StateServer;
const targets: Record<string, CloudTarget> = {};
const recorded: Record<string, readonly Exchange[]> = {};

// The kit's cold start (migrations and seeds) when its snapshot is not cached yet.
const START = 900_000;
// Nova and Octavia change state asynchronously: a whole apply takes a minute or more.
const JOURNEY = 900_000;

beforeAll(async () => {
  double = await startOpenStackDouble();
  targets.double = doubleTarget(double);
  project = await kitProject(await kitUp());
  targets.openstack = project;
  state = await startStateServer();
}, START);

afterAll(async () => {
  await state?.close();
  await double?.close();
  await project?.remove();
});

/** The attributes of the one resource in `tofu show -json`'s state of `type` whose address has `part`. */
function stateValues(show: any, type: string, part = ""): any {
  const found = (show.values.root_module.resources as any[]).filter((r) => r.type === type && r.address.includes(part));
  if (found.length !== 1) throw new Error(`${found.length} resources of ${type} matching "${part}" in the state`);
  return found[0].values;
}

/** Runs `journey` on `target` with a recorder in front, keeping what the provider exchanged. */
async function recording(target: CloudTarget, journey: (env: Record<string, string>) => Promise<void>): Promise<void> {
  const recorder = await startRecorder(target.authUrl);
  try {
    await journey({ ...target.passwordEnv(), OS_AUTH_URL: recorder.authUrl });
  } finally {
    recorded[target.name] = recorder.exchanges;
    await recorder.close();
    // For a developer comparing the targets by hand: KOO_EXCHANGES_DIR keeps each one's lines.
    const keep = process.env.KOO_EXCHANGES_DIR;
    if (keep) fs.writeFileSync(path.join(keep, `${target.name}.txt`), exchangeLines(recorder.exchanges).join("\n") + "\n");
  }
  if (target.name === "double") expect(double.unhandled).toEqual([]);
}

describe("L3 on both targets: the default stack", () => {
  it.each(["double", "openstack"])(
    "applies on the %s, re-plans with no change, lets the cluster's credential in, and destroys to an empty project",
    async (name) => {
      const target = targets[name];
      await recording(target, async (env) => {
        const ws = await workspace({ passwordEnv: () => env }, state);
        const apply = await ws.tofu(["apply", "-auto-approve", "-input=false"]);
        expect(apply.stderr).toBe("");
        expect(apply.status).toBe(0);

        const held = await target.resources();
        const count = (kind: string) => held.filter((line) => line.startsWith(`${kind}: `)).length;
        // The bastion, the Salt master and three nodes; the API's load balancer.
        expect(count("server")).toBe(5);
        expect(count("load balancer")).toBe(1);
        expect(count("application credential")).toBe(1);

        const show = JSON.parse((await ws.tofu(["show", "-json"])).stdout);
        // The cloud controller manager authenticates with the cluster's application credential.
        const credential = stateValues(show, "openstack_identity_application_credential_v3");
        const token = await fetch(`${target.authUrl}/auth/tokens`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({
            auth: {
              identity: { methods: ["application_credential"], application_credential: { id: credential.id, secret: credential.secret } },
            },
          }),
        });
        expect(token.status).toBe(201);
        expect(((await token.json()) as any).token.project.id).toBe(target.projectId);
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
        expect(await target.resources()).toEqual([]);
      });
    },
    JOURNEY,
  );

  it("exchanged the same requests and answers with both, but for the differences docs/decisions.md lists", () => {
    expect(Object.keys(recorded).sort()).toEqual(["double", "openstack"]);
    const accepted = acceptedDifferences();
    const onDouble = new Set(exchangeLines(recorded.double));
    const onCloud = new Set(exchangeLines(recorded.openstack));
    const differences = [
      ...[...onDouble].filter((line) => !onCloud.has(line)).map((line) => `only on the double: ${line}`),
      ...[...onCloud].filter((line) => !onDouble.has(line)).map((line) => `only on the real cloud: ${line}`),
    ];
    expect(differences.filter((d) => !accepted.has(d))).toEqual([]);
  });
});

/**
 * The differences docs/decisions.md accepts, from its table under "The double's referee": rows
 * of "| only on the double | `service METHOD template status` | reason |".
 */
function acceptedDifferences(): Set<string> {
  const decisions = fs.readFileSync(path.join(__dirname, "..", "docs", "decisions.md"), "utf8");
  const rows = decisions.matchAll(/^\| (only on the double|only on the real cloud) \| `([^`]+)` \| .+ \|$/gm);
  return new Set([...rows].map((row) => `${row[1]}: ${row[2]}`));
}
