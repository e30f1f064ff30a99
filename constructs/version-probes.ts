import { ValidateBinaryVersion } from "cdktf/lib/validations/validate-binary-version";
import { IConstruct } from "constructs";

/**
 * Takes cdktf's Terraform version probes off `scope` and every construct under it. cdktf gives
 * each terraform_data resource one (DataResource: Terraform >= 1.4), which runs `terraform
 * version` in a shell when the app synthesizes, so a synth failed with a stack trace wherever no
 * `terraform` was on PATH: OpenTofu alone, or the pipeline's synth job, whose image has neither
 * CLI. The CLI that plans is checked before it runs instead, at 1.10 (scripts/cdktf.js, the
 * toolchain's pinned tofu in the pipeline), above every probe's minimum.
 *
 * cdktf 0.21 is final and its only switch, skipValidation, would drop its other validations too
 * (a resource without its provider, for one); the validations live in constructs' private
 * `_validations` list, hence the cast.
 */
export function withoutTerraformVersionProbes(scope: IConstruct): void {
  for (const construct of scope.node.findAll()) {
    const validations = (construct.node as unknown as { _validations: unknown[] })._validations;
    for (let i = validations.length - 1; i >= 0; i--) {
      if (validations[i] instanceof ValidateBinaryVersion) validations.splice(i, 1);
    }
  }
}
