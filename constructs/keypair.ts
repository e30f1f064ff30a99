import { Fn, Op, TerraformCount, Token } from "cdktf";
import { Construct } from "constructs";
import { ComputeKeypairV2 } from "../.gen/providers/openstack/compute-keypair-v2";
import { DataOpenstackComputeKeypairV2 } from "../.gen/providers/openstack/data-openstack-compute-keypair-v2";
import { splat } from "./cdktf-workarounds";

export interface DeployKeypairProps {
  /** The deployment's domain, which names a new keypair (deployKeypairName). */
  readonly domain: string;
  /** deploy_ssh_public_key: a new keypair with this key, unless it is empty. */
  readonly publicKey: string;
  /** keypair_name: an existing keypair, unless it is empty; not with `publicKey`. */
  readonly existingName: string;
}

/** The keypair every server gets, and what it costs the key_pairs quota. */
export interface DeployKeypair {
  /** The keypair's name: the existing one, the new one, or null for none. */
  readonly name: string;
  /**
   * 1 when a keypair is created, else 0: from the variable, as the keypair's count, so that the
   * quota reads that take it need not wait for the keypair until the apply.
   */
  readonly created: number;
}

/**
 * The deploy keypair: a new keypair `id` from `publicKey`, or the existing `existingName`, or
 * none. An existing keypair is read at plan time by the data source `ExistingKeypair`: a name the
 * project lacks fails the plan, naming it, rather than each server at apply time after the
 * network was created.
 */
export function deployKeypair(scope: Construct, id: string, props: DeployKeypairProps): DeployKeypair {
  // length() < 1, not == "" (Op drops a falsy right operand: constructs/cdktf-workarounds.ts).
  // The key is sensitive to Terraform (constructs/variables.ts); whether one is given is not.
  const created = Token.asNumber(Fn.conditional(Fn.nonsensitive(Op.lt(Fn.lengthOf(props.publicKey), 1)), 0, 1));
  const keypair = new ComputeKeypairV2(scope, id, {
    count: TerraformCount.of(created),
    name: deployKeypairName(props.domain),
    publicKey: props.publicKey,
  });
  const existing = Op.gte(Fn.lengthOf(props.existingName), 1);
  new DataOpenstackComputeKeypairV2(scope, "ExistingKeypair", {
    count: TerraformCount.of(Token.asNumber(Fn.conditional(existing, 1, 0))),
    name: props.existingName,
  }).overrideLogicalId("keypair_name");
  return { name: Token.asString(Fn.conditional(existing, props.existingName, Fn.one(splat(keypair, "name")))), created };
}

/**
 * The deploy keypair's name: `<domain>-deploy` with the domain's dots as underscores. Before
 * compute microversion 2.92, Nova allows only `[_\- a-zA-Z0-9]` in keypair names
 * (nova/api/validation/parameter_types.py, `keypair_name_special_chars`), and the provider sends no
 * microversion for keypairs. A DNS name has no underscores, so no two domains share a name.
 */
export function deployKeypairName(domain: string): string {
  return `${Fn.replace(domain, ".", "_")}-deploy`;
}
