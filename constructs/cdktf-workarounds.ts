import { Construct } from "constructs";
import {
  Op,
  ref,
  TerraformDataSource,
  TerraformElement,
  TerraformLocal,
  TerraformResource,
  TerraformStack,
  TerraformVariable,
  Token,
} from "cdktf";

/**
 * What cdktf 0.21 gets wrong or lacks, and how the stack works around it, in one place. 0.21 is
 * cdktf's last release, so none of this will be fixed upstream; every other file that works
 * around one of these says which, and points here.
 *
 * **Falsy right operands.** `Op` renders a right operand that is falsy (`0`, `""`, `null`) as
 * `undefined`: `Op.eq(x, 0)` comes out as `x == undefined`, and `Fn.conditional` cannot give
 * `null` either. So a test against an empty value is turned round (`length(x) < 1`, not
 * `x == ""`), or the expression is written literally, as a `${...}` string.
 *
 * **Tokens after a literal `}`.** In a literal expression, a token that follows a literal `}` (an
 * object's end, a regular expression's `{8}`) comes out as a nested `${...}`, which Terraform
 * rejects. So a token may open a literal expression, never follow a `}`: such expressions read
 * fixed local names (`local.kube_pool_nodes`) or addresses (`addressOf`) after it, and an empty
 * map is `zipmap([], [])`, not `{}`.
 *
 * **Unparenthesised conditionals.** A `Fn.conditional` nested in an `Op` is rendered without
 * parentheses, so `Op.mul(Fn.conditional(c, 0, 1), n)` reads `c ? 0 : 1 * n`; a factor of 0 or 1
 * is written as another function (`signum()`) instead.
 *
 * **Token strings as arguments.** A TypeScript template string that holds a token cannot be an
 * argument of an `Fn` function; strings and lists built from tokens there are `format()` and
 * `formatlist()` calls instead.
 *
 * **No for-expressions.** cdktf has no construct for `[for ...]` or `{for ...}`, so they are
 * literal expressions, with `hclOf` for the values written into them.
 *
 * **References, `moved` and `removed`.** The helpers below: a counted resource's attribute at
 * `count.index` (`atCountIndex`), a splat that nests (`splat`), a plain address (`addressOf`), a
 * `moved` block to an instance (`MovedToFirstInstance`), `removed` blocks (`forgetAsFormerType`).
 */

/**
 * A Terraform expression (`hcl`, without `${}`) as a string token that cdktf unwraps where it
 * nests, in user_data or a dynamic block, where a literal `${...}` would be nested again.
 */
export function hclString(scope: Construct, hcl: string): string {
  return Token.asString(ref(hcl, TerraformStack.of(scope)));
}

/** `hclString` for a number. */
export function hclNumber(scope: Construct, hcl: string): number {
  return Token.asNumber(ref(hcl, TerraformStack.of(scope)));
}

/**
 * A value written into a hand-built HCL expression (`${...}`): a token as the reference it stands
 * for, anything else as its JSON, which HCL reads as the same literal. Pasted bare, a literal
 * would read as a reference (`auto`, `m1.large`) or not parse at all (`Ubuntu 24.04`, `0.0.0.0/0`).
 */
export function hclOf(value: unknown): string {
  return Token.isUnresolved(value) ? Token.asString(value) : JSON.stringify(value);
}

/**
 * `numbers` added up left to right with `Op.add`, since TypeScript's `+` cannot add tokens; no 0 is
 * added in front, which cdktf would write into the expression. 0 for none.
 */
export function sum(numbers: readonly number[]): number {
  return numbers.length === 0 ? 0 : Token.asNumber(numbers.reduce((total, value) => Op.add(total, value)));
}

/** What `addressOf` names. */
export type Addressable = TerraformResource | TerraformDataSource | TerraformLocal | TerraformVariable;

/**
 * The address Terraform knows `element` by, as plain text: `<type>.<name>` for a resource,
 * `data.<type>.<name>` for a data source, `local.<name>`, `var.<name>`. cdktf gives a reference
 * only as a token (`fqn`), which a `moved` block cannot hold, `ref()` does not take, and a literal
 * expression may not have after a `}` (above).
 */
export function addressOf(element: Addressable): string {
  if (element instanceof TerraformDataSource) return `data.${element.terraformResourceType}.${element.friendlyUniqueId}`;
  if (element instanceof TerraformResource) return `${element.terraformResourceType}.${element.friendlyUniqueId}`;
  if (element instanceof TerraformLocal) return `local.${element.friendlyUniqueId}`;
  if (element instanceof TerraformVariable) return `var.${element.friendlyUniqueId}`;
  // Two copies of cdktf (bindings generated against another node_modules) fail every instanceof:
  // an address guessed then would be wrong without a word.
  throw new Error(`addressOf: ${(element as Construct).node.path} is no resource, data source, local or variable of this cdktf`);
}

/**
 * `<resource>[count.index].<attribute>` for a counted resource, written literally: cdktf would
 * nest `${count.index}` inside the reference, which Terraform rejects.
 */
export function atCountIndex(resource: { fqn: string }, attribute: string): string {
  return Token.asString(`\${${resource.fqn}[count.index].${attribute}}`);
}

/**
 * `<resource>[*].<attribute>` of a counted resource as a reference that nests inside other
 * expressions (`one(...)`, `concat(...)`), where an interpolated string would not.
 */
export function splat(resource: TerraformResource | TerraformDataSource, attribute: string): string[] {
  return Token.asList(ref(`${addressOf(resource)}[*].${attribute}`, TerraformStack.of(resource)));
}

/**
 * `resource[key].attribute` for each element a for-expression's `head` gives (`i in range(n)`
 * with key `i`, `node in local.nodes` with key `node.host`), as the local `name`: null for an
 * instance the state lacks. A refresh-only plan reads a server deleted out of band out of the
 * state, and a splat would then shift every later instance onto its place (and end short of the
 * pillar's nodes: "Invalid index"); any other plan has every instance, a missing one planned anew.
 */
export function eachInstance(
  scope: Construct,
  name: string,
  resource: TerraformResource,
  over: { head: string; key: string },
  attribute: string,
): string[] {
  const value = `\${[for ${over.head} : try(${addressOf(resource)}[${over.key}].${attribute}, null)]}`;
  return Token.asList(new TerraformLocal(scope, name, value).expression);
}

/**
 * A `moved` block from a resource's address without an index to its instance 0, for a resource
 * that gained a count. cdktf's moveFromId() cannot name an instance, and a stack override would
 * replace other constructs' `moved` blocks; cdktf concatenates every element's list instead.
 */
export class MovedToFirstInstance extends TerraformElement {
  private readonly address: string;

  constructor(resource: TerraformResource) {
    super(resource.node.scope!, `${resource.node.id}Moved`);
    this.address = addressOf(resource);
  }

  toTerraform(): unknown {
    return { moved: [{ from: this.address, to: `${this.address}[0]` }] };
  }

  toHclTerraform(): unknown {
    return this.toTerraform();
  }
}

/**
 * `removed` blocks that make Terraform forget, without destroying them, the objects `resources`
 * were when their type was `formerType`: no `moved` block can change a resource's type unless its
 * provider can move the state. cdktf 0.21 has no construct for `removed`, so this is the stack's
 * override of the whole list; a stack calls it once.
 */
export function forgetAsFormerType(resources: readonly TerraformResource[], formerType: string): void {
  TerraformStack.of(resources[0]).addOverride(
    "removed",
    resources.map((resource) => ({ from: `${formerType}.${resource.friendlyUniqueId}`, lifecycle: { destroy: false } })),
  );
}
