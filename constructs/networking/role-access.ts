import { Fn, Op, TerraformCount, TerraformIterator, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { DataOpenstackNetworkingSecgroupV2 } from "../../.gen/providers/openstack/data-openstack-networking-secgroup-v2";
import { NetworkingSecgroupRuleV2 } from "../../.gen/providers/openstack/networking-secgroup-rule-v2";
import { NetworkingSecgroupV2 } from "../../.gen/providers/openstack/networking-secgroup-v2";
import { ACCESS_ROLES, AccessRole, INGRESS_RULE_PARTS } from "../../config/access";
import { UUID_PATTERN } from "../../config/rules";
import { addressOf, hclOf, sum } from "../cdktf-workarounds";

/** A role's ingress rules and the project's groups for it, as the variables give them. */
export interface RoleAccessProps {
  /** Rules such as "tcp/8443 from 203.0.113.0/24" (config/access.ts). */
  readonly ingressRules: string[];
  /** Security groups of the project, by name or ID. */
  readonly securityGroups: string[];
}

export interface RoleAccess {
  /** Per role, the groups its machines' ports take besides the stack's own (a token list). */
  readonly groupIds: Readonly<Record<AccessRole, string[]>>;
  /** The groups made here (a token): one per role with rules. */
  readonly groupCount: number;
  /** The rules made here (a token), with the two egress rules Neutron adds to each new group. */
  readonly ruleCount: number;
}

/** The egress rules Neutron gives each new group (IPv4 and IPv6): security-groups.ts. */
const NEUTRON_DEFAULT_RULES = 2;

/** `control_plane` as `ControlPlane`, for logical ids. */
const pascal = (role: AccessRole) => role.replace(/(^|_)([a-z])/g, (_, _sep: string, c: string) => c.toUpperCase());

const isId = (ref: string) => `can(regex("${UUID_PATTERN}", ${ref}))`;

/**
 * Each role's access besides the stack's own (issue 39): a group of the user's ingress rules,
 * made only when there are some, so that a cluster deployed before them plans no change; and the
 * project's groups, read at plan time. A name is looked up in this deployment's project (an
 * admin credential sees every project's, and "default" is in each); an ID as it is, which Neutron
 * checks when a port takes it. Each lookup's logical id is its variable, so that the provider's
 * "No Security Group found" names the variable and the entry. Rules are keyed by their text:
 * reordering them changes nothing, and a rule removed goes alone.
 */
export function roleAccess(
  scope: Construct,
  namePrefix: string,
  roles: Readonly<Record<AccessRole, RoleAccessProps>>,
  after: NetworkingSecgroupV2,
): RoleAccess {
  // Each group waits for the one before, as the stack's own do (security-groups.ts, `last`).
  let previous = after;
  // Each in a local of its own: cdktf nests a token that follows a literal `}` (the pattern's)
  // in a second `${` (constructs/cdktf-workarounds.ts).
  const names = ACCESS_ROLES.map((role) =>
    addressOf(
      new TerraformLocal(scope, `${role}_security_group_names`, `\${[for g in ${hclOf(roles[role].securityGroups)} : g if !${isId("g")}]}`),
    ),
  );
  const project = new DataOpenstackIdentityAuthScopeV3(scope, "SecurityGroupsProject", {
    count: TerraformCount.of(Token.asNumber(`\${length(concat(${names.join(", ")})) > 0 ? 1 : 0}`)),
    name: `${namePrefix}-security-groups`,
  });
  const projectId = `one(${addressOf(project)}[*].project_id)`;

  const groupIds: Partial<Record<AccessRole, string[]>> = {};
  const groupCounts: number[] = [];
  const ruleCounts: number[] = [];
  for (const role of ACCESS_ROLES) {
    const { ingressRules, securityGroups } = roles[role];
    // length() >= 1, not > 0 (Op drops a falsy right operand: constructs/cdktf-workarounds.ts).
    // A local: cdktf writes a conditional without parentheses where it nests in a sum.
    const made = Token.asNumber(
      new TerraformLocal(scope, `${role}_ingress_group`, Fn.conditional(Op.gte(Fn.lengthOf(ingressRules), 1), 1, 0)).expression,
    );
    const group = new NetworkingSecgroupV2(scope, `${pascal(role)}IngressGroup`, {
      count: TerraformCount.of(made),
      name: `${namePrefix}-${role.replace("_", "-")}-ingress`,
      description: `The rules of ${role}_ingress_rules`,
      // The ports leave it before it goes: without this, Terraform deletes a group whose count
      // falls to 0 before it updates the ports that hold it, and Neutron refuses that
      // (SecurityGroupInUse) until the provider gives up.
      lifecycle: { createBeforeDestroy: true },
      dependsOn: [previous],
    });
    previous = group;
    const parsed = new TerraformLocal(
      scope,
      `${role}_ingress_rules`,
      `\${{ for rule in ${hclOf(ingressRules)} : rule => regex("${INGRESS_RULE_PARTS}", rule) }}`,
    );
    const rule = TerraformIterator.fromMap(Token.asAnyMap(parsed.expression));
    new NetworkingSecgroupRuleV2(scope, `${pascal(role)}IngressRule`, {
      forEach: rule,
      securityGroupId: `\${${addressOf(group)}[0].id}`,
      description: `${role}_ingress_rules: \${each.key}`,
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "${each.value.protocol}",
      // ICMP takes no ports: null for both, every type and code.
      portRangeMin: Token.asNumber("${tonumber(each.value.min)}"),
      portRangeMax: Token.asNumber("${tonumber(each.value.max != null ? each.value.max : each.value.min)}"),
      remoteIpPrefix: "${each.value.cidr}",
    });

    const lookups = new DataOpenstackNetworkingSecgroupV2(scope, `${pascal(role)}SecurityGroups`, {
      forEach: TerraformIterator.fromList(securityGroups),
      secgroupId: `\${${isId("each.value")} ? each.value : null}`,
      name: `\${${isId("each.value")} ? null : each.value}`,
      tenantId: `\${${isId("each.value")} ? null : ${projectId}}`,
    });
    lookups.overrideLogicalId(`${role}_security_groups`);

    // A local: the ports nest it in their own expressions.
    const ids = new TerraformLocal(
      scope,
      `${role}_security_group_ids`,
      `\${concat(${addressOf(group)}[*].id, [for g in ${addressOf(lookups)} : g.id])}`,
    );
    groupIds[role] = Token.asList(ids.expression);
    groupCounts.push(made);
    ruleCounts.push(Token.asNumber(Op.add(Fn.lengthOf(ingressRules), Op.mul(NEUTRON_DEFAULT_RULES, made))));
  }
  return { groupIds: groupIds as Record<AccessRole, string[]>, groupCount: sum(groupCounts), ruleCount: sum(ruleCounts) };
}
