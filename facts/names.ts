/** How long the names the stack gives can be, and the limits they must fit. */
import { MAX_WORKERS } from "./cluster-size";
import { HOST_NAMES } from "./hosts";

/** Nova's server and Neutron's port name columns hold 255 characters. */
export const OPENSTACK_NAME_MAX = 255;

/** A DNS name holds 253 characters (RFC 1035 section 2.3.4, without the final dot). */
export const DNS_NAME_MAX = 253;

/** The longest pool name (config/node-pools.ts): `k8s-<pool>-<n>` is a host name. */
export const POOL_NAME_MAX = 20;

/** The longest host name the layout gives: the last worker's of a pool with the longest name. */
export const LONGEST_HOST = [
  `${HOST_NAMES.worker}-${MAX_WORKERS - 1}`,
  `${HOST_NAMES.poolWorker}-${"p".repeat(POOL_NAME_MAX)}-${MAX_WORKERS - 1}`,
].reduce((longest, host) => (host.length > longest.length ? host : longest));

/**
 * The longest suffix a resource's name adds to a machine's FQDN (a port's `-private`); names built
 * on the domain alone stay shorter. __tests__/l0-stack.test.ts checks every name in the
 * synthesized stack, at the longest domain, against Nova's and Neutron's limit.
 */
export const LONGEST_NAME_SUFFIX = "-private";
