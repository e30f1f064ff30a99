import { Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackComputeAvailabilityZonesV2 } from "../.gen/providers/openstack/data-openstack-compute-availability-zones-v2";

export interface AvailabilityZonesProps {
  /** The zones the default pool spreads over (kube_node_availability_zones). */
  readonly defaultPool: string[];
  /** The node_pools variable, whose pools name zones too. */
  readonly pools: unknown;
}

/**
 * Reads Nova's available zones at plan time and fails the plan, in one line naming the zones it
 * lacks, when a pool asks for one: Nova would refuse each such server at apply time ("The
 * requested availability zone is not available", nova/compute/api.py), after the rest of the
 * cluster was created.
 */
export class AvailabilityZones extends Construct {
  readonly zones: DataOpenstackComputeAvailabilityZonesV2;

  constructor(scope: Construct, id: string, props: AvailabilityZonesProps) {
    super(scope, id);
    // Literal: a token may open the expression, never follow a literal `}` (constructs/cdktf-workarounds.ts).
    const wanted =
      `distinct(concat(${Token.asString(props.defaultPool)}, ` +
      `flatten([for pool in values(${Token.asString(props.pools)}) : pool.availability_zones])))`;
    this.zones = new DataOpenstackComputeAvailabilityZonesV2(this, "Zones", {
      state: "available",
      lifecycle: {
        postcondition: [
          {
            condition: `\${length(setsubtract(${wanted}, self.names)) == 0}`,
            errorMessage:
              `Unknown availability zone: \${join(", ", setsubtract(${wanted}, self.names))} (in kube_node_availability_zones or ` +
              `node_pools) is not one of this cloud's available zones, \${join(", ", self.names)} (openstack availability zone list).`,
          },
        ],
      },
    });
  }
}
