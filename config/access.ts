import { OPENSTACK_NAME_MAX } from "../facts/names";
import { all, characters, Check, DISTINCT, each, ipv4Network, NOT_BLANK, pattern, Rule, rule, TRIMMED } from "./rules";

/**
 * Who may reach each role's machines besides what the stack opens (issue 39): the user's ingress
 * rules and the project's own security groups, per role. Kubespray's `bastion_allowed_ports`,
 * `master_allowed_ports`, `worker_allowed_ports` and `extra_sec_groups_name`; CAPO's
 * `managedSecurityGroups.*Rules`.
 */

/** The roles whose machines take them, as the variables' prefixes name them. */
export const ACCESS_ROLES = ["bastion", "control_plane", "worker"] as const;
export type AccessRole = (typeof ACCESS_ROLES)[number];

/** What each role is, for the variables' descriptions. */
export const ACCESS_ROLE_MACHINES: Readonly<Record<AccessRole, string>> = {
  bastion: "the bastion",
  control_plane: "the control-plane nodes (the master and the default pool's next two nodes)",
  worker: "the other Kubernetes nodes (the default pool's after the control plane, and every pool's)",
};

/**
 * An ingress rule as a user writes it, in the words the exposure test prints it with: TCP or UDP
 * to a port or a range, or ICMP, from an IPv4 network. Named groups for the stack's `regex()`
 * (RE2), where an absent part is null.
 */
export const INGRESS_RULE_PARTS = "^(?P<protocol>tcp|udp|icmp)(?:/(?P<min>[0-9]+)(?:-(?P<max>[0-9]+))?)? from (?P<cidr>[^ ]+)$";

/** The rule's shape: a port has no leading zero, so that one rule has one spelling. */
const SHAPE = pattern("^((tcp|udp)/[1-9][0-9]{0,4}(-[1-9][0-9]{0,4})?|icmp) from [^ ]+$");
const NETWORK = ipv4Network({ min: 0, max: 32 });
const PORT_MAX = 65535;

/** One rule: its shape, its ports (1 to 65535, a range's first below its last) and its network. */
const INGRESS_RULE: Check<string> = {
  test: (text) => {
    if (!SHAPE.test(text)) return false;
    const [what, network] = text.split(" from ");
    const ports = what.match(/[0-9]+/g)?.map(Number) ?? [];
    return ports.every((port) => port <= PORT_MAX) && (ports.length < 2 || ports[0] < ports[1]) && NETWORK.test(network);
  },
  // Terraform 1.11 evaluates both sides of && (config/rules.ts): try() turns the errors a
  // malformed rule causes into false, and a conditional compares two ports only when there are two.
  condition: (ref) => {
    const ports = `regexall("[0-9]+", split(" from ", ${ref})[0])`;
    return (
      `try(${SHAPE.condition(ref)} && ${NETWORK.condition(`split(" from ", ${ref})[1]`)}` +
      ` && alltrue([for port in ${ports} : tonumber(port) <= ${PORT_MAX}])` +
      ` && (length(${ports}) < 2 ? true : tonumber(${ports}[0]) < tonumber(${ports}[1])), false)`
    );
  },
  total: true,
};

export function ingressRules(name: string): Rule<string[]> {
  return rule(
    name,
    all(each("r", INGRESS_RULE), DISTINCT),
    'a list of distinct rules, each "<tcp|udp>/<port> from <network>", "<tcp|udp>/<first>-<last> from <network>" or ' +
      '"icmp from <network>", with ports from 1 to 65535 (a range\'s first below its last, without leading zeros) and an ' +
      'IPv4 network in CIDR form, such as ["tcp/8443 from 203.0.113.0/24", "udp/51820 from 0.0.0.0/0"]',
  );
}

const GROUP_REF = all(NOT_BLANK, TRIMMED, characters({ max: OPENSTACK_NAME_MAX }));

export function securityGroupRefs(name: string): Rule<string[]> {
  return rule(
    name,
    all(each("g", GROUP_REF), DISTINCT),
    `a list of distinct security groups of the project, each by name (1 to ${OPENSTACK_NAME_MAX} characters without leading or trailing spaces) or by ID`,
  );
}
