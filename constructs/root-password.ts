import { TerraformLocal } from "cdktf";
import { Construct } from "constructs";

/**
 * Root's console password, in the two forms the deployment uses. Both read the variables
 * set_root_password, root_password_hash and root_password directly: they are conditions on
 * nullable values that Terraform must evaluate, not TypeScript.
 */
export class RootPassword {
  /**
   * cloud-init chpasswd `users`: root gets a password at boot only from a hash, and only when
   * asked to. The plaintext root_password is ephemeral, so it can never be part of user_data.
   */
  readonly cloudInitUsers: string;
  /**
   * What the chain sets through Salt each time the orchestration runs (provisioners/
   * set-root-password.sh): `plaintext` and the ephemeral root_password on the next line, else
   * `hash` and root_password_hash, which would otherwise reach machines at their creation only
   * (cloud-init runs once); "" when root's password is not to be set. Op drops a null right
   * operand (constructs/cdktf-workarounds.ts), so the tests are written out.
   */
  readonly secret: string;
  /**
   * Changes when root_password_hash does, for the chain to set it again: a SHA-256 of the crypt
   * hash, from which neither the hash nor its salt can be had (so, not sensitive); "" when it is
   * not to be set.
   */
  readonly hashVersion: string;

  constructor(scope: Construct) {
    this.cloudInitUsers = new TerraformLocal(
      scope,
      "root_password_users",
      '${var.set_root_password && var.root_password_hash != null ? [{ name = "root", password = var.root_password_hash, type = "hash" }] : []}',
    ).asString;
    this.secret =
      '${var.set_root_password && var.root_password != null ? format("plaintext\\n%s", var.root_password) : ' +
      'var.set_root_password && var.root_password_hash != null ? format("hash\\n%s", var.root_password_hash) : ""}';
    // Both results are evaluated, so sha256 never sees a null.
    this.hashVersion =
      "${var.set_root_password && var.root_password_hash != null ? " +
      'nonsensitive(sha256(var.root_password_hash == null ? "" : var.root_password_hash)) : ""}';
  }
}
