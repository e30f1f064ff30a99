/**
 * The recorder that referees the double against the real cloud (support/recorder.ts): how it names
 * an exchange, and what it leaves out, on exchanges made up for each rule.
 */
import { Exchange, exchangeLines, fieldPaths, pathTemplate } from "./support/recorder";

const exchange = (service: string, method: string, template: string, status: number): Exchange => ({
  service,
  method,
  template,
  query: [],
  status,
  fields: [],
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
});
