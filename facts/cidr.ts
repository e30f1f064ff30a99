import * as ipaddr from "ipaddr.js";

/** An IPv4 network in canonical `a.b.c.d/n` form, parsed once. */
export interface Ipv4Network {
  readonly cidr: string;
  readonly prefixLength: number;
  /** First and last address as unsigned 32-bit integers. */
  readonly first: number;
  readonly last: number;
}

function toUint32(address: ipaddr.IPv4): number {
  return address.toByteArray().reduce((acc, byte) => acc * 256 + byte, 0);
}

/**
 * Parses `cidr` as an IPv4 network, or returns a reason why it is not one. The address part
 * must be four-part decimal and the network address itself (no host bits set), because
 * Neutron stores subnets that way and a silently normalised CIDR hides typos; for the same reason
 * the prefix length has no leading zero (Terraform's cidr functions read `/016` as `/16`).
 */
export function parseIpv4Network(cidr: string): Ipv4Network | string {
  const [address, prefix, ...rest] = cidr.split("/");
  if (rest.length > 0 || prefix === undefined || !/^(0|[1-9]\d?)$/.test(prefix)) {
    return "is not an IPv4 CIDR such as 10.0.0.0/16";
  }
  if (!ipaddr.IPv4.isValidFourPartDecimal(address)) {
    return "is not an IPv4 CIDR such as 10.0.0.0/16";
  }
  const prefixLength = Number(prefix);
  if (prefixLength > 32) {
    return "has a prefix length above 32";
  }
  const network = ipaddr.IPv4.networkAddressFromCIDR(cidr);
  if (network.toString() !== address) {
    return `has host bits set; the network address is ${network.toString()}/${prefixLength}`;
  }
  const first = toUint32(network);
  return { cidr, prefixLength, first, last: first + 2 ** (32 - prefixLength) - 1 };
}

export function networksOverlap(a: Ipv4Network, b: Ipv4Network): boolean {
  return a.first <= b.last && b.first <= a.last;
}
