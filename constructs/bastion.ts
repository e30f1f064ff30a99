import { Construct } from "constructs";
import { ComputeInstanceV2 } from "../.gen/providers/openstack/compute-instance-v2";
import { NetworkingFloatingipAssociateV2 } from "../.gen/providers/openstack/networking-floatingip-associate-v2";
import { NetworkingFloatingipV2 } from "../.gen/providers/openstack/networking-floatingip-v2";
import { NetworkingPortV2 } from "../.gen/providers/openstack/networking-port-v2";
import { VARIABLES } from "../config/parameters";
import { fixedPort, floatingIpFor, instanceConfig, MachineProps } from "./machine";

export interface BastionProps extends MachineProps {
  /** @default VARIABLES.bastion_flavor.default */
  readonly flavor?: string;
  /** A floating IP the project holds, by address (floating-ips.ts), or "" to allocate one. @default VARIABLES.bastion_floating_ip.default */
  readonly floatingIp?: string;
}

/**
 * The dual-homed jump and NAT host: a public port with a floating IP for SSH from the allowed
 * networks, and a private port that is the private network's gateway.
 */
export class Bastion extends Construct {
  readonly instance: ComputeInstanceV2;
  readonly publicPort: NetworkingPortV2;
  readonly privatePort: NetworkingPortV2;
  /** The floating IP allocated here: count 0 when one is given. */
  readonly floatingIp: NetworkingFloatingipV2;
  /** 1 or 0 (a token): whether the floating IP is allocated here. */
  readonly floatingIpAllocated: number;
  /** SSH to publicIp works once this exists. */
  readonly floatingIpAssociation: NetworkingFloatingipAssociateV2;
  /** The SSH jump host every provisioner connects through. */
  readonly publicIp: string;
  readonly fqdn: string;

  constructor(scope: Construct, id: string, props: BastionProps) {
    super(scope, id);
    const flavor = props.flavor ?? VARIABLES.bastion_flavor.default;
    const { network } = props;
    const host = props.layout.bastion;
    this.fqdn = host.fqdn;

    this.publicPort = fixedPort(this, "PublicPort", {
      fqdn: this.fqdn,
      side: "public",
      network,
      address: host.publicIp,
      securityGroups: [network.securityGroups.bastion],
      roleGroupIds: network.roleGroupIds.bastion,
    });
    // It forwards the private network's traffic, whose source addresses are not its own.
    this.privatePort = fixedPort(this, "PrivatePort", {
      fqdn: this.fqdn,
      side: "private",
      network,
      address: host.privateIp,
      securityGroups: [network.securityGroups.internal],
      roleGroupIds: network.roleGroupIds.bastion,
      allowedAddressPairs: ["0.0.0.0/0"],
    });

    this.instance = new ComputeInstanceV2(this, "Instance", {
      ...instanceConfig({
        ...props,
        role: "bastion",
        host: { hostname: host.host, fqdn: host.fqdn, privateIp: host.privateIp, dualHomed: true },
        flavor,
      }),
      // The public port comes first so that the default route stays on the public network.
      network: [{ port: this.publicPort.id }, { port: this.privatePort.id }],
    });

    const fip = floatingIpFor(this, "FloatingIp", {
      network,
      port: this.publicPort,
      fqdn: this.fqdn,
      given: { variable: "bastion_floating_ip", address: props.floatingIp ?? VARIABLES.bastion_floating_ip.default },
    });
    ({
      allocated: this.floatingIp,
      association: this.floatingIpAssociation,
      address: this.publicIp,
      allocates: this.floatingIpAllocated,
    } = fip);
  }
}
