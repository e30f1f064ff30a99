import { TerraformVariable } from "cdktf";
import { Construct } from "constructs";
import { KubeOnOsConfig, VARIABLE_NAMES, VariableName, VARIABLES, VariableSpec } from "./parameters";

/** One Terraform variable per parameter, by its Terraform name. */
export type TerraformVariables = { readonly [K in VariableName]: TerraformVariable };

/**
 * Declares every parameter as a Terraform variable in `stack` (the stack alone calls it: the stack
 * owns the variables), with the validated value from `config` as its default, in the table's
 * order.
 */
export function declareVariables(stack: Construct, config: KubeOnOsConfig): TerraformVariables {
  const variables = new Map(VARIABLE_NAMES.map((name) => [name, declareVariable(stack, name, VARIABLES[name], config)]));
  // Object.fromEntries() is typed by string keys; the map holds exactly one per VariableName.
  return Object.fromEntries(variables) as TerraformVariables;
}

function declareVariable(stack: Construct, name: VariableName, spec: VariableSpec<unknown>, config: KubeOnOsConfig): TerraformVariable {
  // Sensitive values are never recorded.
  const value = spec.sensitive ? undefined : config[name as keyof KubeOnOsConfig];
  const variable = new TerraformVariable(stack, name, {
    type: spec.type,
    description: spec.description,
    default: value,
    nullable: value === undefined,
    sensitive: spec.sensitive,
    validation: [...spec.rules, ...(spec.planTimeRules ?? [])].map((rule) => ({
      condition: `\${${rule.condition}}`,
      errorMessage: `${name} must be ${rule.mustBe}.`,
    })),
  });
  if (spec.ephemeral) {
    // cdktf 0.21 predates ephemeral input variables; the override is the only way to declare one.
    variable.addOverride("ephemeral", true);
  }
  if (value === undefined) {
    // cdktf drops a null default, which would make the variable required; an explicit null
    // keeps it optional (root_password is only needed when set_root_password is true).
    variable.addOverride("default", null);
  }
  return variable;
}
