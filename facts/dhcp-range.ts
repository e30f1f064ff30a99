/**
 * How fixed addresses and DHCP share each network: the fixed hosts (HOST_NUMBERS, and the default
 * pool's workers from firstWorkerPrivate up) take the lower half, and DHCP (each subnet's
 * allocation pool, where the pools' workers, DHCP ports and load balancers' VIPs take theirs) the
 * upper half, but the broadcast address.
 *
 * The rule is computed in three forms: as numbers by config/'s checks at synth, as HCL text in
 * their plan-time conditions, and as cdktf tokens for the subnets' allocation pools. Each form is an
 * `Arithmetic`, so the rule itself is written once, here.
 */

/** The operations the DHCP range is computed with, on numbers of type `N` of one form. */
export interface Arithmetic<N> {
  /** The prefix length of the network `cidr`, an expression of this form. */
  prefixLength(cidr: string): N;
  pow(base: number, exponent: N): N;
  sub(minuend: N | number, subtrahend: N | number): N;
  div(dividend: N, divisor: number): N;
}

/** TypeScript numbers, for a CIDR that is already known to be valid. */
export const IN_NUMBERS: Arithmetic<number> = {
  prefixLength: (cidr) => Number(cidr.split("/")[1]),
  pow: (base, exponent) => base ** exponent,
  sub: (minuend, subtrahend) => minuend - subtrahend,
  div: (dividend, divisor) => dividend / divisor,
};

/**
 * HCL text, for a CIDR expression (`var.private_network_cidr`). Operands are written bare, without
 * parentheses: right for these formulas, whose operands are calls and literals.
 */
export const IN_HCL: Arithmetic<string> = {
  prefixLength: (cidr) => `tonumber(split("/", ${cidr})[1])`,
  pow: (base, exponent) => `pow(${base}, ${exponent})`,
  sub: (minuend, subtrahend) => `${minuend} - ${subtrahend}`,
  div: (dividend, divisor) => `${dividend} / ${divisor}`,
};

/** The first host number DHCP hands out in `cidr`: half the network's size, 2^(32 - prefix) / 2. */
export function firstDhcpHost<N>(cidr: string, arithmetic: Arithmetic<N>): N {
  return arithmetic.div(arithmetic.pow(2, arithmetic.sub(32, arithmetic.prefixLength(cidr))), 2);
}

/** The last host number DHCP hands out, counted back from the network's end: the last but one (-1 is the broadcast address). */
export const LAST_DHCP_HOST = -2;

/** How many addresses DHCP hands out in `cidr`: from firstDhcpHost to the last but one. */
export function dhcpRangeSize<N>(cidr: string, arithmetic: Arithmetic<N>): N {
  return arithmetic.sub(firstDhcpHost(cidr, arithmetic), 1);
}
