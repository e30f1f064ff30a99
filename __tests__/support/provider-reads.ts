/**
 * The reply fields the OpenStack provider can read, per service: the JSON names of the result
 * structs in the gophercloud packages the provider imports. The provider decodes every reply
 * into those structs (gophercloud's `ExtractInto`), so a field the real cloud returns under one of
 * these names and the double does not is one the provider would read as empty on the double.
 *
 * Read from the sources of the very versions the toolchain builds the provider from
 * (scripts/toolchain/go/openstack/go.mod), which `go mod download` brings from the module cache.
 */
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const TOOLS_MODULE = path.join(__dirname, "..", "..", "scripts", "toolchain", "go", "openstack");
const PROVIDER = "github.com/terraform-provider-openstack/terraform-provider-openstack/v3";
const GOPHERCLOUD = "github.com/gophercloud/gophercloud/v2";

/** gophercloud's package trees under openstack/, by the catalog type of their service. */
const SERVICES: Record<string, string> = {
  "compute/v2": "compute",
  "networking/v2": "network",
  "blockstorage/v3": "block-storage",
  "loadbalancer/v2": "load-balancer",
  "identity/v3": "identity",
  "image/v2": "image",
};

/** Files of a gophercloud package that hold what it sends or how, not what it decodes. */
const NOT_RESULTS = /^(requests|urls|doc|microversions)\.go$|_test\.go$/;

function required(module: string): string {
  const goMod = fs.readFileSync(path.join(TOOLS_MODULE, "go.mod"), "utf8");
  const version = new RegExp(`^\\s*${module.replace(/[.]/g, "\\.")} (v\\S+)`, "m").exec(goMod)?.[1];
  if (!version) throw new Error(`${module} is not required by ${TOOLS_MODULE}/go.mod`);
  return `${module}@${version}`;
}

/** The directories of the modules in the module cache, downloaded first if need be. */
function moduleDirs(modules: string[]): string[] {
  const out = execFileSync("go", ["mod", "download", "-json", ...modules], { cwd: TOOLS_MODULE, encoding: "utf8" });
  // One JSON object per module, one after the other.
  return [...out.matchAll(/"Dir": "([^"]+)"/g)].map((match) => match[1]);
}

/** Each service's field names (`json:"…"` of a result struct), for the packages the provider imports. */
export function providerReads(): Map<string, Set<string>> {
  const [providerDir, gophercloudDir] = moduleDirs([required(PROVIDER), required(GOPHERCLOUD)]);
  const sources = fs
    .readdirSync(path.join(providerDir, "openstack"))
    .filter((file) => file.endsWith(".go") && !file.endsWith("_test.go"))
    .map((file) => fs.readFileSync(path.join(providerDir, "openstack", file), "utf8"));
  const packages = new Set(
    sources.flatMap((source) => [...source.matchAll(new RegExp(`"${GOPHERCLOUD}/openstack/([^"]+)"`, "g"))].map((m) => m[1])),
  );
  const reads = new Map<string, Set<string>>();
  for (const pkg of packages) {
    const tree = Object.keys(SERVICES).find((prefix) => pkg.startsWith(`${prefix}/`));
    if (!tree) continue;
    const service = SERVICES[tree];
    const names = reads.get(service) ?? new Set<string>();
    const dir = path.join(gophercloudDir, "openstack", pkg);
    for (const file of fs.readdirSync(dir).filter((name) => name.endsWith(".go") && !NOT_RESULTS.test(name))) {
      for (const match of fs.readFileSync(path.join(dir, file), "utf8").matchAll(/`json:"([^",]+)/g)) {
        if (match[1] !== "-") names.add(match[1]);
      }
    }
    reads.set(service, names);
  }
  return reads;
}
