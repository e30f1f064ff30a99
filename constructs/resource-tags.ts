import { Aspects, Fn, IAspect, TerraformLocal, TerraformResource, TerraformStack, Token } from "cdktf";
import { IConstruct } from "constructs";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { TAG_MAX } from "../config/parameters";

/** The cluster's own tag is this, then deploy_domain_name. */
export const CLUSTER_TAG_PREFIX = "kube-on-os:";

export interface ResourceTagsProps {
  /** deploy_domain_name, which the cluster's tag names. */
  readonly domain: string;
  /** The user's tags (`tags`). */
  readonly tags: string[];
  /** The user's server metadata (`server_metadata`). */
  readonly serverMetadata: Record<string, string>;
}

/**
 * Tags every resource of the stack that takes tags, and gives every server the user's metadata,
 * so that a project's billing and inventory tools find the cluster's resources (as CAPO's
 * `spec.tags` and `serverMetadata` do). The tags are `kube-on-os:<domain>`, cut to Nova's 60
 * characters, then the user's. An aspect, run at synth over every construct, rather than a prop
 * of each: a resource added later is tagged without a word, and `l0-stack` checks that every
 * resource whose schema has `tags` has them. Data sources are never tagged (their `tags` is a
 * filter), and neither are the project's own resources the stack only reads.
 */
export function resourceTags(stack: TerraformStack, props: ResourceTagsProps): TerraformLocal {
  const tags = new TerraformLocal(
    stack,
    "resource_tags",
    Fn.distinct(Fn.concat([[Fn.substr(Fn.format(`${CLUSTER_TAG_PREFIX}%s`, [props.domain]), 0, TAG_MAX)], props.tags])),
  );
  Aspects.of(stack).add(new Tagging(Token.asList(tags.expression), props.serverMetadata));
  return tags;
}

class Tagging implements IAspect {
  constructor(
    private readonly tags: string[],
    private readonly serverMetadata: Record<string, string>,
  ) {}

  visit(node: IConstruct): void {
    if (!(node instanceof TerraformResource)) return;
    // The generated bindings give `tags` a setter exactly where the provider's schema has it.
    if ("tags" in node) (node as { tags: string[] }).tags = this.tags;
    if (node instanceof ComputeInstanceV2) node.metadata = this.serverMetadata;
  }
}
