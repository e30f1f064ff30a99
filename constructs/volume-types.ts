import { TerraformCount, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackBlockstorageQuotasetV3 } from "../.gen/providers/openstack/data-openstack-blockstorage-quotaset-v3";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";

export interface VolumeTypesProps {
  /** The default pool's boot volume type (kube_node_boot_volume_type), "" for Cinder's default. */
  readonly defaultPool: string;
  /** The control plane's boot volume type: control_plane_boot_volume_type, or the default pool's. @default defaultPool */
  readonly controlPlane?: string;
  /** The node_pools variable, whose pools name volume types too. */
  readonly pools: unknown;
}

/**
 * Reads Cinder's volume types at plan time, when a pool asks for one, and fails the plan in one
 * line naming the types it lacks: Cinder would refuse each such boot volume at apply time
 * ("Volume type ... could not be found"), after the rest of the cluster was created. Members
 * may not list volume types by API policy on every cloud, and the provider has no data source
 * for them; the project's quota set names every type instead (cinder/quota.py,
 * VolumeTypeQuotaEngine: volumes_<type>, gigabytes_<type>, snapshots_<type> for each), and a
 * member may read it. A private type the project cannot use is listed too, and still fails at
 * apply.
 */
export class VolumeTypes extends Construct {
  constructor(scope: Construct, id: string, props: VolumeTypesProps) {
    super(scope, id);
    // Literal: a token may open the expression, never follow a literal `}` (constructs/cdktf-workarounds.ts).
    const wanted =
      `distinct(compact(concat([${Token.asString(props.defaultPool)}, ${Token.asString(props.controlPlane ?? props.defaultPool)}], ` +
      `[for pool in values(${Token.asString(props.pools)}) : pool.boot_volume_type])))`;
    const count = TerraformCount.of(Token.asNumber(`\${length(${wanted}) > 0 ? 1 : 0}`));
    const scopeData = new DataOpenstackIdentityAuthScopeV3(this, "Scope", { count, name: "kube-on-os-volume-types" });
    const known = `[for key in keys(self.volume_type_quota) : trimprefix(key, "volumes_") if startswith(key, "volumes_")]`;
    new DataOpenstackBlockstorageQuotasetV3(this, "Quotas", {
      count,
      projectId: Token.asString(`\${${scopeData.fqn}[0].project_id}`),
      lifecycle: {
        postcondition: [
          {
            condition: `\${length(setsubtract(${wanted}, ${known})) == 0}`,
            errorMessage:
              `Unknown volume type: \${join(", ", setsubtract(${wanted}, ${known}))} (in kube_node_boot_volume_type, ` +
              `control_plane_boot_volume_type or node_pools) is not one of this cloud's volume types, \${join(", ", sort(${known}))} (openstack volume type list).`,
          },
        ],
      },
    });
  }
}
