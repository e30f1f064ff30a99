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
   * The ephemeral plaintext for the chain to set through Salt, or "" when it is not to be set.
   * cdktf renders a null literal on the right of Op.neq as undefined, so the test is written out.
   */
  readonly plaintext: string;

  constructor(scope: Construct) {
    this.cloudInitUsers = new TerraformLocal(
      scope,
      "root_password_users",
      '${var.set_root_password && var.root_password_hash != null ? [{ name = "root", password = var.root_password_hash, type = "hash" }] : []}',
    ).asString;
    this.plaintext = `\${var.set_root_password && var.root_password != null ? var.root_password : ""}`;
  }
}
