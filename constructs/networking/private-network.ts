import { Construct } from "constructs";
import { NetworkingNetworkV2 } from "../../.gen/providers/openstack/networking-network-v2";
import { NetworkingSubnetV2 } from "../../.gen/providers/openstack/networking-subnet-v2";
import { HOST_NUMBERS } from "../../facts/hosts";
import { dhcpPool, hostAddress, staticHostsBelowPool } from "./address-plan";

export interface PrivateNetworkProps {
  readonly namePrefix: string;
  readonly cidr: string;
  readonly dnsNameservers: string[];
  /** The highest host number a fixed address takes (a token when it follows a plan-time value). */
  readonly lastStaticHost: number;
}

export interface PrivateNetwork {
  readonly network: NetworkingNetworkV2;
  readonly subnet: NetworkingSubnetV2;
}

/**
 * The private network, which every machine is on. It is not attached to the router: its gateway
 * is the bastion's private port, which masquerades outbound traffic through the bastion's public
 * port. Adds its resources to `network` (the Network construct), whose addresses they keep.
 */
export function privateNetwork(network: Construct, props: PrivateNetworkProps): PrivateNetwork {
  const { namePrefix: prefix, cidr } = props;
  const privateNetwork = new NetworkingNetworkV2(network, "PrivateNetwork", { name: `${prefix}-private`, adminStateUp: true });
  const subnet = new NetworkingSubnetV2(network, "PrivateSubnet", {
    name: `${prefix}-private`,
    networkId: privateNetwork.id,
    cidr,
    ipVersion: 4,
    gatewayIp: hostAddress(cidr, HOST_NUMBERS.bastionPrivate),
    enableDhcp: true,
    dnsNameservers: props.dnsNameservers,
    allocationPool: [dhcpPool(cidr)],
    lifecycle: { precondition: [staticHostsBelowPool(cidr, props.lastStaticHost)] },
  });
  return { network: privateNetwork, subnet };
}
