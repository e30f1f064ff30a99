import { Fn, Op, Token } from "cdktf";
import { Arithmetic, firstDhcpHost, LAST_DHCP_HOST } from "../../facts/dhcp-range";

/**
 * The networks' address plan as Terraform expressions: fixed hosts by number (facts/hosts.ts),
 * DHCP in the upper half (facts/dhcp-range.ts). Terraform evaluates them at plan time, so a
 * plan-time CIDR override moves every address with it.
 */

/** The DHCP range's arithmetic as cdktf tokens. */
const IN_TOKENS: Arithmetic<number> = {
  prefixLength: (cidr) => Fn.tonumber(Fn.element(Fn.split("/", cidr), 1)),
  pow: (base, exponent) => Fn.pow(base, exponent),
  sub: (minuend, subtrahend) => Op.sub(minuend, subtrahend),
  div: (dividend, divisor) => Token.asNumber(Op.div(dividend, divisor)),
};

/** Host number `host` of `cidr`, evaluated by Terraform. */
export function hostAddress(cidr: string, host: number): string {
  return Fn.cidrhost(cidr, host);
}

/** A subnet's allocation pool: DHCP hands out the upper half of the network only; the lower half is for fixed hosts. */
export function dhcpPool(cidr: string) {
  return { start: Fn.cidrhost(cidr, firstDhcpHost(cidr, IN_TOKENS)), end: Fn.cidrhost(cidr, LAST_DHCP_HOST) };
}

/**
 * Checked at plan time, whatever the plan-time values: a fixed address inside the pool could be
 * taken by DHCP first (Neutron hands out pool addresses at random), and its port would fail.
 */
export function staticHostsBelowPool(cidr: string, lastHost: number) {
  const poolStart = firstDhcpHost(cidr, IN_TOKENS);
  return {
    condition: Op.lt(lastHost, poolStart),
    errorMessage:
      `Invalid network layout: fixed private addresses reach host number ${lastHost}, inside the DHCP pool of ` +
      `private_network_cidr=${cidr} (its upper half, from host number ${poolStart}); use a larger private network or fewer num_kube_nodes.`,
  };
}

/** A dotted IPv4 address as a number, in Terraform, so that addresses compare in order. */
export function addressNumber(address: string): string {
  return `sum([for i, octet in split(".", ${address}) : tonumber(octet) * pow(256, 3 - i)])`;
}

/** Whether `address` (an expression) lies in one of a subnet's allocation pools, in a postcondition on the subnet (`self`). */
export function inAllocationPools(address: string): string {
  return `anytrue([for pool in self.allocation_pools : ${addressNumber("pool.start")} <= ${addressNumber(address)} && ${addressNumber(address)} <= ${addressNumber("pool.end")}])`;
}
