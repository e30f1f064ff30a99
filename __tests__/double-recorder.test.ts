/**
 * The recorder that referees the double against the real cloud (support/recorder.ts): how it names
 * an exchange, and what it leaves out, on exchanges made up for each rule.
 */
import { providerReads } from "./support/provider-reads";
import { comparable, Exchange, exchangeLines, fieldOwner, fieldPaths, fieldsRead, pathTemplate } from "./support/recorder";

const exchange = (service: string, method: string, template: string, status: number, fields: string[] = []): Exchange => ({
  service,
  method,
  template,
  query: [],
  status,
  fields,
});

describe("the recorder", () => {
  it("replaces ids, numbers and keypair names in paths, and keeps every other segment", () => {
    expect(pathTemplate("/v2.0/ports/3f2a1c5e-7b4f-4e8a-9c61-2f0b8d4e7a93")).toBe("/v2.0/ports/{id}");
    expect(pathTemplate("/v3/9b5d6a8c0e2f4a1b8c3d5e7f9a1b2c3d/volumes/detail")).toBe("/v3/{id}/volumes/detail");
    expect(pathTemplate("/flavors/4/os-extra_specs")).toBe("/flavors/{n}/os-extra_specs");
    expect(pathTemplate("/os-keypairs/kube-on-os-deployer")).toBe("/os-keypairs/{name}");
    expect(pathTemplate("/v2.0/lbaas/loadbalancers")).toBe("/v2.0/lbaas/loadbalancers");
  });

  it("lists a reply's fields three levels deep, arrays' members as []", () => {
    expect(
      fieldPaths({ server: { id: "x", addresses: { net: [{ addr: "10.0.0.1" }] } }, servers: [{ id: 1 }, { name: "a" }] }).sort(),
    ).toEqual(["server", "server.addresses", "server.addresses.net", "server.id", "servers", "servers[].id", "servers[].name"]);
  });

  it("leaves out a 409 the same request later got past, and keeps one it never did", () => {
    const lines = exchangeLines([
      exchange("load-balancer", "POST", "/v2.0/lbaas/pools", 409),
      exchange("load-balancer", "POST", "/v2.0/lbaas/pools", 201),
      exchange("network", "POST", "/v2.0/security-groups", 409),
      exchange("network", "POST", "/v2.0/security-groups", 409),
    ]);
    expect(lines).toEqual(["load-balancer POST /v2.0/lbaas/pools 201", "network POST /v2.0/security-groups 409"]);
  });

  it("keeps, per exchange, the fields seen in any of its replies under a name the provider reads for that service", () => {
    const reads = new Map([["network", new Set(["port", "ports", "id", "binding:host_id"])]]);
    const read = fieldsRead(
      [
        exchange("network", "GET", "/v2.0/ports/{id}", 200, ["port", "port.id", "port.binding:host_id"]),
        exchange("network", "GET", "/v2.0/ports/{id}", 200, ["port", "port.id", "port.dns_assignment"]),
        exchange("compute", "GET", "/servers/{id}", 200, ["server", "server.id"]),
      ],
      reads,
    );
    expect(Object.fromEntries([...read].map(([line, fields]) => [line, [...fields].sort()]))).toEqual({
      "network GET /v2.0/ports/{id} 200": ["port", "port.binding:host_id", "port.id"],
      "compute GET /servers/{id} 200": [],
    });
  });

  it("compares a field of a list's element only where the other target returned an element of that list", () => {
    const other = new Set(["security_group", "security_group.id", "security_group.security_group_rules"]);
    expect(comparable("security_group.security_group_rules[].tags", other)).toBe(false);
    expect(comparable("security_group.security_group_rules[].tags", new Set([...other, "security_group.security_group_rules[].id"]))).toBe(
      true,
    );
    expect(comparable("security_group.description", other)).toBe(true);
    expect(comparable("ports[].fixed_ips[].subnet_id", new Set(["ports[].id"]))).toBe(false);
    expect(comparable("ports[].fixed_ips[].subnet_id", new Set(["ports[].id", "ports[].fixed_ips[].ip_address"]))).toBe(true);
  });

  it("names a field by its resource, alone or in a list, and a reply's unwrapped field by its path", () => {
    expect(fieldOwner("/v2.0/ports", "ports[].binding:host_id")).toBe("port.binding:host_id");
    expect(fieldOwner("/v2.0/ports/{id}", "port.binding:host_id")).toBe("port.binding:host_id");
    expect(fieldOwner("/v2.0/lbaas/policies", "policies[].id")).toBe("policy.id");
    expect(fieldOwner("/v2.0/security-groups/{id}", "security_group.security_group_rules[].name")).toBe(
      "security_group.security_group_rules[].name",
    );
    expect(fieldOwner("/v2.0/routers/{id}/add_router_interface", "tenant_id")).toBe("add_router_interface.tenant_id");
  });

  it("reads the names the provider decodes from gophercloud's result structs, not those it sends", () => {
    const reads = providerReads();
    expect([...reads.keys()].sort()).toEqual(["block-storage", "compute", "identity", "image", "load-balancer", "network"]);
    // servers.Server (results.go) and servers.CreateOpts (requests.go).
    expect(reads.get("compute")?.has("OS-EXT-AZ:availability_zone")).toBe(true);
    expect(reads.get("compute")?.has("imageRef")).toBe(false);
    expect(reads.get("network")?.has("binding:host_id")).toBe(true);
  });
});
