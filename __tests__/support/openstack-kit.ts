/**
 * The real OpenStack services (scripts/openstack/) as the L3 journeys' second target. npm test
 * starts the kit beside the lint (scripts/test.sh); a test file's `cloud up` waits for that start,
 * or starts the kit itself when jest runs alone. npm test's kit serves one test file, which ends it
 * (kitDone) for the suites still running; test.sh's exit ends it too. Each test file gets a
 * Keystone project and user of its own, and its leftovers are what that project still holds.
 */
import { execFile } from "node:child_process";
import * as path from "node:path";
import { promisify } from "node:util";
import { passwordIdentity, requestToken } from "./keystone";
import { byName, CloudTarget, networkLines, privateSubnetOf, SeededIngress, serverOf } from "./target";

const run = promisify(execFile);
const KIT = path.join(__dirname, "..", "..", "scripts", "openstack", "cloud");

type Env = Record<string, string>;

/** Runs the kit's command line; a failure throws with its output. */
async function kit(args: string[]): Promise<string> {
  try {
    const { stdout } = await run(KIT, [...args, "--quiet"], { maxBuffer: 16 * 1024 * 1024, timeout: 900_000 });
    return stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`scripts/openstack/cloud ${args.join(" ")} failed: ${failed.stderr || failed.message}${failed.stdout ?? ""}`);
  }
}

/**
 * Ends the kit when npm test started it for this run (KOO_CLOUD_DOWN_AFTER_USE=1): its processes
 * hold about 2.8 GiB and wake every few seconds, for the rest of a run that no longer needs them.
 * Run alone (jest), the test file leaves the kit up.
 */
export async function kitDone(): Promise<void> {
  if (process.env.KOO_CLOUD_DOWN_AFTER_USE === "1") await kit(["down"]);
}

/** Brings the kit up (a no-op when npm test's start is running) and returns the admin's OS_* variables. */
export async function kitUp(): Promise<Env> {
  await kit(["up"]);
  return JSON.parse(await kit(["env", "--json"])) as Env;
}

interface Catalog {
  readonly token: string;
  /** The public URL of each service type. */
  readonly endpoints: Record<string, string>;
}

async function passwordToken(env: Env, scope: unknown): Promise<Catalog> {
  const response = await requestToken(env.OS_AUTH_URL, passwordIdentity(env.OS_USERNAME, env.OS_PASSWORD, env.OS_USER_DOMAIN_NAME), scope);
  if (response.status !== 201) throw new Error(`Keystone answered ${response.status}: ${await response.text()}`);
  const body = (await response.json()) as { token: { catalog: { type: string; endpoints: { interface: string; url: string }[] }[] } };
  const endpoints: Record<string, string> = {};
  for (const entry of body.token.catalog) {
    const url = entry.endpoints.find((e) => e.interface === "public")?.url;
    if (url) endpoints[entry.type] = url;
  }
  return { token: response.headers.get("x-subject-token") as string, endpoints };
}

/** Neutron's v2.0 API and Octavia's root, from a catalog's endpoints. */
const neutronUrl = (endpoints: Record<string, string>) => `${endpoints.network.replace(/\/$/, "")}/v2.0`;
const octaviaUrl = (endpoints: Record<string, string>) => endpoints["load-balancer"].replace(/\/$/, "");

/** A request with a token; answers other than 2xx throw, naming the request. */
async function call(catalog: Catalog, method: string, url: string, body?: unknown, headers: Env = {}): Promise<any> {
  const response = await fetch(url, {
    method,
    headers: { "x-auth-token": catalog.token, "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  if (!response.ok) throw new Error(`${method} ${url} answered ${response.status}: ${text}`);
  return text === "" ? undefined : JSON.parse(text);
}

/** A Keystone project of a test file's own, with a member user, on the real cloud. */
export interface KitProject extends CloudTarget {
  readonly userId: string;
  /** Removes what was seeded, the user and the project (not what else the project holds: resources() tells that). */
  remove(): Promise<void>;
}

let projects = 0;

/** Creates a project and a user with the member role in it, named after this process. */
export async function kitProject(admin: Env): Promise<KitProject> {
  const adminScope = { project: { name: admin.OS_PROJECT_NAME, domain: { name: admin.OS_PROJECT_DOMAIN_NAME } } };
  const catalog = await passwordToken(admin, adminScope);
  const identity = admin.OS_AUTH_URL;
  const name = `koo-test-${process.pid}-${++projects}`;
  const password = `${name}-password`;
  const project = (await call(catalog, "POST", `${identity}/projects`, { project: { name, domain_id: "default" } })).project;
  const user = (
    await call(catalog, "POST", `${identity}/users`, { user: { name, password, domain_id: "default", default_project_id: project.id } })
  ).user;
  const roles = (await call(catalog, "GET", `${identity}/roles?name=member`)).roles;
  await call(catalog, "PUT", `${identity}/projects/${project.id}/users/${user.id}/roles/${roles[0].id}`);

  const userEnv: Env = {
    OS_AUTH_URL: identity,
    OS_AUTH_TYPE: "password",
    OS_IDENTITY_API_VERSION: "3",
    OS_REGION_NAME: admin.OS_REGION_NAME,
    OS_INTERFACE: "public",
    OS_USERNAME: name,
    OS_PASSWORD: password,
    OS_PROJECT_NAME: name,
    OS_PROJECT_ID: project.id,
    OS_USER_DOMAIN_NAME: "Default",
    OS_PROJECT_DOMAIN_ID: "default",
  };

  // What the seed functions made, which resources() leaves out.
  const seeded = new Set<string>();
  const seededRouters = new Set<string>();
  const seededFips = new Set<string>();
  const userToken = () => passwordToken(userEnv, { project: { id: project.id } });

  const seedRouter = async (routerName: string): Promise<string> => {
    const own = await userToken();
    const network = neutronUrl(own.endpoints);
    const externals = (await call(own, "GET", `${network}/networks?router:external=true`)).networks as any[];
    const body = { router: { name: routerName, external_gateway_info: { network_id: externals[0].id } } };
    const router = (await call(own, "POST", `${network}/routers`, body)).router;
    seeded.add(router.id);
    seededRouters.add(router.id);
    return router.id as string;
  };

  const seedFloatingIp = async (): Promise<string> => {
    const own = await userToken();
    const network = neutronUrl(own.endpoints);
    const externals = (await call(own, "GET", `${network}/networks?router:external=true`)).networks as any[];
    const fip = (await call(own, "POST", `${network}/floatingips`, { floatingip: { floating_network_id: externals[0].id } })).floatingip;
    seeded.add(fip.id);
    seededFips.add(fip.id);
    return fip.floating_ip_address as string;
  };

  const seededGroups = new Set<string>();
  const seedSecurityGroup = async (groupName: string, ingress: SeededIngress): Promise<string> => {
    const own = await userToken();
    const network = neutronUrl(own.endpoints);
    const group = (await call(own, "POST", `${network}/security-groups`, { security_group: { name: groupName } })).security_group;
    seeded.add(group.id);
    seededGroups.add(group.id);
    const rule = { security_group_id: group.id, direction: "ingress", ethertype: "IPv4", ...ingress };
    await call(own, "POST", `${network}/security-group-rules`, { security_group_rule: rule });
    return group.id as string;
  };

  const seededNetworks = new Set<string>();
  const seedPrivateNetwork = async (networkName: string, cidr: string): Promise<string> => {
    const own = await userToken();
    const network = neutronUrl(own.endpoints);
    const created = (await call(own, "POST", `${network}/networks`, { network: { name: networkName } })).network;
    const { gatewayIp, allocationPools } = privateSubnetOf(cidr);
    const body = {
      network_id: created.id,
      name: networkName,
      cidr,
      ip_version: 4,
      gateway_ip: gatewayIp,
      allocation_pools: allocationPools,
    };
    const subnet = (await call(own, "POST", `${network}/subnets`, { subnet: body })).subnet;
    for (const id of [created.id, subnet.id]) seeded.add(id);
    seededNetworks.add(created.id);
    return created.id as string;
  };

  const seededFloatingIps = async (): Promise<Record<string, string | null>> => {
    const own = await userToken();
    const listed = (await call(own, "GET", `${neutronUrl(own.endpoints)}/floatingips`)).floatingips as any[];
    return Object.fromEntries(listed.filter((f) => seededFips.has(f.id)).map((f) => [f.floating_ip_address, f.port_id ?? null]));
  };

  const resources = async (): Promise<string[]> => {
    const fresh = await passwordToken(admin, adminScope);
    const { endpoints } = fresh;
    const get = (url: string, headers: Env = {}) => call(fresh, "GET", url, undefined, headers);
    // Keypairs and application credentials belong to the user: listed with the user's own token.
    const own = await userToken();
    const getOwn = (url: string, headers: Env = {}) => call(own, "GET", url, undefined, headers);
    const named = (kind: string, items: { name?: string; id: string }[]) =>
      items.filter((i) => !seeded.has(i.id)).map((i) => `${kind}: ${i.name || i.id}`);
    const p = project.id;
    const lines: string[] = [];
    if (endpoints.compute) {
      lines.push(...named("server", (await get(`${endpoints.compute}/servers?all_tenants=1&project_id=${p}`)).servers));
      const groups = (await get(`${endpoints.compute}/os-server-groups?all_projects=True`)).server_groups as any[];
      lines.push(
        ...named(
          "server group",
          groups.filter((g) => g.project_id === p),
        ),
      );
      const keypairs = (await getOwn(`${endpoints.compute}/os-keypairs`)).keypairs as any[];
      lines.push(...keypairs.map((k) => `keypair: ${k.keypair.name}`));
    }
    if (endpoints.network) {
      const network = neutronUrl(endpoints);
      const list = async (plural: string) => (await get(`${network}/${plural}?project_id=${p}`))[plural.replace(/-/g, "_")] as any[];
      lines.push(
        ...named("network", await list("networks")),
        ...named("subnet", await list("subnets")),
        ...named("router", await list("routers")),
      );
      lines.push(
        ...(await list("floatingips")).filter((f) => !seeded.has(f.id)).map((f) => `floating IP: ${f.floating_ip_address as string}`),
      );
      lines.push(
        ...networkLines(await list("ports"), await list("security-groups"), await list("security-group-rules"), (i) =>
          seeded.has(i.id as string),
        ),
      );
    }
    if (endpoints.volumev3) {
      lines.push(...named("volume", (await get(`${endpoints.volumev3}/volumes?all_tenants=1&project_id=${p}`)).volumes));
    }
    if (endpoints["load-balancer"]) {
      const octavia = octaviaUrl(endpoints);
      lines.push(...named("load balancer", (await get(`${octavia}/v2/lbaas/loadbalancers?project_id=${p}`)).loadbalancers));
    }
    const credentials = (await getOwn(`${identity}/users/${user.id}/application_credentials`)).application_credentials as any[];
    lines.push(...named("application credential", credentials));
    return lines.sort();
  };

  const servers = async () => {
    const fresh = await passwordToken(admin, adminScope);
    const listed = (
      await call(fresh, "GET", `${fresh.endpoints.compute}/servers/detail?all_tenants=1&project_id=${project.id}`, undefined, {
        // The flavor's name in server.flavor (nova/api/openstack/compute/views/servers.py, _get_flavor_dict).
        "OpenStack-API-Version": "compute 2.47",
      })
    ).servers as any[];
    return listed.map(serverOf).sort(byName);
  };

  const keypairs = async () => {
    const own = await userToken();
    const listed = (await call(own, "GET", `${own.endpoints.compute}/os-keypairs`)).keypairs as any[];
    return listed.map(({ keypair }) => ({ name: keypair.name as string, publicKey: keypair.public_key as string })).sort(byName);
  };

  const loadBalancers = async () => {
    const fresh = await passwordToken(admin, adminScope);
    const { endpoints } = fresh;
    if (!endpoints["load-balancer"]) return [];
    const octavia = octaviaUrl(endpoints);
    const network = neutronUrl(endpoints);
    const listed = (await call(fresh, "GET", `${octavia}/v2/lbaas/loadbalancers?project_id=${project.id}`)).loadbalancers as any[];
    const found = await Promise.all(
      listed.map(async (lb) => {
        const floating = (await call(fresh, "GET", `${network}/floatingips?port_id=${lb.vip_port_id}`)).floatingips as any[];
        return {
          name: lb.name as string,
          vipAddress: lb.vip_address as string,
          floatingIp: (floating[0]?.floating_ip_address as string) ?? null,
        };
      }),
    );
    return found.sort(byName);
  };

  return {
    name: "openstack",
    authUrl: identity,
    projectId: project.id,
    userId: user.id,
    passwordEnv: () => ({ ...userEnv }),
    resources,
    servers,
    keypairs,
    loadBalancers,
    seedRouter,
    seedFloatingIp,
    seededFloatingIps,
    seedSecurityGroup,
    seedPrivateNetwork,
    remove: async () => {
      // The user and the project go even when a seeded router or floating IP cannot (a journey
      // left a port on the router, or released the floating IP it was given).
      const own = await userToken();
      const network = neutronUrl(own.endpoints);
      const failures: string[] = [];
      for (const id of [...seededRouters, ...seededFips, ...seededGroups, ...seededNetworks]) {
        // A network goes with its subnet.
        const plural = seededFips.has(id)
          ? "floatingips"
          : seededGroups.has(id)
            ? "security-groups"
            : seededNetworks.has(id)
              ? "networks"
              : "routers";
        await call(own, "DELETE", `${network}/${plural}/${id}`).catch((error: Error) => failures.push(error.message));
      }
      const fresh = await passwordToken(admin, adminScope);
      await call(fresh, "DELETE", `${identity}/users/${user.id}`);
      await call(fresh, "DELETE", `${identity}/projects/${project.id}`);
      if (failures.length > 0) throw new Error(failures.join("\n"));
    },
  };
}
