import { Token } from "cdktf";

/**
 * A value written into a hand-built HCL expression (`${...}`): a token as the reference it stands
 * for, anything else as its JSON, which HCL reads as the same literal. Pasted bare, a literal
 * would read as a reference (`auto`, `m1.large`) or not parse at all (`Ubuntu 24.04`, `0.0.0.0/0`).
 */
export function hclOf(value: unknown): string {
  return Token.isUnresolved(value) ? Token.asString(value) : JSON.stringify(value);
}
