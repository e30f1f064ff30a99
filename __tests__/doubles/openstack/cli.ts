/**
 * `npm run double [-- options]`: starts the OpenStack API double and the http state server on
 * 127.0.0.1 and prints the environment that points tofu (or terraform, or the openstack CLI) at
 * them, so a deployment can be rehearsed offline. Stops on Ctrl-C. The options shape the cloud as
 * the tests do (OpenStackDoubleOptions), so that zones, volume types, an existing router or
 * network, a cloud without Octavia, bigger quotas or fewer compute hosts can be tried by hand;
 * `--help` lists them, docs/development.md explains them.
 */
import { parseArgs } from "node:util";
import { startStateServer } from "../http-state/server";
import { CINDER_DEFAULT_QUOTAS } from "./cinder";
import { NEUTRON_DEFAULT_QUOTAS } from "./neutron";
import { NOVA_DEFAULT_QUOTAS } from "./nova";
import { OCTAVIA_DEFAULT_QUOTAS } from "./octavia";
import { OpenStackDoubleOptions, startOpenStackDouble } from "./server";

export const USAGE = `usage: npm run double [-- options]
  --external-network NAME=CIDR   the external network (default vlan1066=192.0.2.0/24)
  --zones A,B                    Nova's availability zones (default nova)
  --volume-zones A,B             Cinder's availability zones, the first its default (default nova)
  --volume-types T,U             Cinder's volume types besides __DEFAULT__
  --no-cross-az-attach           Nova's [cinder]/cross_az_attach = false
  --existing-router NAME         a router the project already has, its gateway on the external network (repeatable)
  --existing-network NAME=CIDR[@ROUTER]
                                 a network the project already has, with one subnet, on ROUTER (repeatable)
  --load-balancer-zones A,B      Octavia's availability zones
  --no-octavia                   a cloud without Octavia
  --compute-hosts N              Nova's compute hosts (default 16); hard anti-affinity needs one per member
  --quota SERVICE.NAME=N         a quota of nova, neutron, cinder or octavia; -1 is unlimited (repeatable)
  --settled                      new servers, volumes and load balancers ready on their first read`;

const QUOTAS: Record<string, Record<string, number>> = {
  nova: NOVA_DEFAULT_QUOTAS,
  neutron: NEUTRON_DEFAULT_QUOTAS,
  cinder: CINDER_DEFAULT_QUOTAS,
  octavia: OCTAVIA_DEFAULT_QUOTAS,
};

export interface DoubleCommand {
  readonly options: OpenStackDoubleOptions;
  readonly computeHosts?: number;
  /** service → quota name → limit */
  readonly quotas: Record<string, Record<string, number>>;
}

/** A bad option, said in one line. */
export class UsageError extends Error {}

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const CIDR = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/;

function list(option: string, value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const names = value.split(",");
  for (const name of names) if (!NAME.test(name)) throw new UsageError(`--${option}: '${name}' is not a name (letters, digits, . _ -)`);
  if (new Set(names).size !== names.length) throw new UsageError(`--${option}: '${value}' names one twice`);
  return names;
}

function cidr(option: string, value: string): string {
  const match = CIDR.exec(value);
  if (!match || match.slice(1, 5).some((octet) => Number(octet) > 255) || Number(match[5]) > 32) {
    throw new UsageError(`--${option}: '${value}' is not an IPv4 CIDR such as 10.0.0.0/24`);
  }
  return value;
}

function named(option: string, value: string): [string, string] {
  const at = value.indexOf("=");
  const name = value.slice(0, at);
  if (at < 0 || !NAME.test(name)) throw new UsageError(`--${option}: '${value}' is not NAME=CIDR`);
  return [name, value.slice(at + 1)];
}

/** The double's options from `npm run double`'s arguments; a UsageError for anything else. */
export function parseDoubleArgs(argv: string[]): DoubleCommand {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      strict: true,
      allowPositionals: false,
      options: {
        "external-network": { type: "string" },
        zones: { type: "string" },
        "volume-zones": { type: "string" },
        "volume-types": { type: "string" },
        "no-cross-az-attach": { type: "boolean" },
        "existing-router": { type: "string", multiple: true },
        "existing-network": { type: "string", multiple: true },
        "load-balancer-zones": { type: "string" },
        "no-octavia": { type: "boolean" },
        "compute-hosts": { type: "string" },
        quota: { type: "string", multiple: true },
        settled: { type: "boolean" },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message.split("\n")[0]);
  }
  const values = parsed.values;
  const routers = values["existing-router"] ?? [];
  for (const router of routers) if (!NAME.test(router)) throw new UsageError(`--existing-router: '${router}' is not a name`);
  const networks = (values["existing-network"] ?? []).map((value) => {
    const [name, rest] = named("existing-network", value);
    const [range, router] = rest.split("@");
    if (router !== undefined && !routers.includes(router)) {
      throw new UsageError(`--existing-network: '${value}' names the router '${router}', which no --existing-router gives`);
    }
    return { name, cidr: cidr("existing-network", range), ...(router === undefined ? {} : { router }) };
  });
  let externalNetwork;
  if (values["external-network"] !== undefined) {
    const [name, range] = named("external-network", values["external-network"]);
    externalNetwork = { name, cidr: cidr("external-network", range) };
  }
  let computeHosts;
  if (values["compute-hosts"] !== undefined) {
    computeHosts = Number(values["compute-hosts"]);
    if (!/^\d+$/.test(values["compute-hosts"]) || computeHosts < 1) {
      throw new UsageError(`--compute-hosts: '${values["compute-hosts"]}' is not a whole number of 1 or more`);
    }
  }
  const quotas: Record<string, Record<string, number>> = {};
  for (const value of values.quota ?? []) {
    const match = /^([a-z]+)\.([a-z_]+)=(-1|\d+)$/.exec(value);
    if (!match) throw new UsageError(`--quota: '${value}' is not SERVICE.NAME=N (N a whole number, -1 unlimited)`);
    const [, service, name, limit] = match;
    if (!(service in QUOTAS)) throw new UsageError(`--quota: '${service}' is not one of ${Object.keys(QUOTAS).join(", ")}`);
    if (!(name in QUOTAS[service])) {
      throw new UsageError(`--quota: '${name}' is not a ${service} quota (${Object.keys(QUOTAS[service]).join(", ")})`);
    }
    quotas[service] = { ...quotas[service], [name]: Number(limit) };
  }
  const options: OpenStackDoubleOptions = {
    ...(externalNetwork ? { externalNetwork } : {}),
    ...(values.zones !== undefined ? { availabilityZones: list("zones", values.zones) } : {}),
    ...(values["volume-zones"] !== undefined ? { volumeAvailabilityZones: list("volume-zones", values["volume-zones"]) } : {}),
    ...(values["volume-types"] !== undefined ? { volumeTypes: list("volume-types", values["volume-types"]) } : {}),
    ...(values["no-cross-az-attach"] ? { crossAzAttach: false } : {}),
    ...(routers.length > 0 ? { existingRouters: routers.map((name) => ({ name })) } : {}),
    ...(networks.length > 0 ? { existingNetworks: networks } : {}),
    ...(values["load-balancer-zones"] !== undefined
      ? { loadBalancerAvailabilityZones: list("load-balancer-zones", values["load-balancer-zones"]) }
      : {}),
    ...(values["no-octavia"] ? { octavia: false } : {}),
    ...(values.settled ? { settled: true } : {}),
  };
  return { options, ...(computeHosts === undefined ? {} : { computeHosts }), quotas };
}

async function main(argv: string[]): Promise<void> {
  if (argv.includes("--help") || argv.includes("-h")) {
    console.log(USAGE);
    return;
  }
  let command: DoubleCommand;
  try {
    command = parseDoubleArgs(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    console.error(`npm run double: ${error.message} (npm run double -- --help lists the options)`);
    process.exit(2);
  }
  const double = await startOpenStackDouble(command.options);
  if (command.computeHosts !== undefined) double.nova.hosts = command.computeHosts;
  const services: Record<string, { quotas: Record<string, number> }> = {
    nova: double.nova,
    neutron: double.neutron,
    cinder: double.cinder,
    octavia: double.octavia,
  };
  for (const [service, limits] of Object.entries(command.quotas)) Object.assign(services[service].quotas, limits);
  const state = await startStateServer();
  const env = { ...double.passwordEnv(), ...state.backendEnv("kube-on-os") };
  console.log("# OpenStack API double and http state server are running. In another shell:");
  for (const [key, value] of Object.entries(env)) console.log(`export ${key}='${value}'`);
  for (const network of double.neutron.networks.all().filter((n) => !n["router:external"])) {
    console.log(`# existing network ${network.name}: TF_VAR_public_network_id=${network.id}`);
  }
  for (const router of double.neutron.routers.all()) console.log(`# existing router ${router.name}: TF_VAR_router_id=${router.id}`);
  console.log("# then: npm run synth && cd cdktf.out/stacks/kube-on-os && tofu init && tofu plan");
  console.log(`# state files: ${state.dir}`);
  const stop = async () => {
    await Promise.all([double.close(), state.close()]);
    if (double.unhandled.length > 0) {
      console.error(`openstack-double: ${double.unhandled.length} request(s) were not implemented (listed above)`);
    }
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((error: unknown) => {
    console.error(error);
    process.exit(1);
  });
}
