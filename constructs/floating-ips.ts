import { Fn, Op, TerraformCount, TerraformLocal, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { DataOpenstackLbLoadbalancerV2 } from "../.gen/providers/openstack/data-openstack-lb-loadbalancer-v2";
import { DataOpenstackNetworkingFloatingipV2 } from "../.gen/providers/openstack/data-openstack-networking-floatingip-v2";
import { DataOpenstackNetworkingPortV2 } from "../.gen/providers/openstack/data-openstack-networking-port-v2";
import { NetworkingFloatingipV2 } from "../.gen/providers/openstack/networking-floatingip-v2";
import { addressOf, splat } from "./cdktf-workarounds";
import { Network } from "./networking";

/** Whose a given floating IP may already be: the port this deployment associates it with. */
export type FloatingIpOwner =
  /** A machine's public port, by its name (fixedPort's `<fqdn>-public`). */
  | { readonly portName: string }
  /** An Octavia load balancer's VIP port, by the load balancer's name. */
  | { readonly loadBalancerName: string };

export interface FloatingIpProps {
  readonly network: Network;
  /** The variable that may give one (bastion_floating_ip, ...): the lookup's name and the messages'. */
  readonly variable: string;
  /** Its value (a token): an address the project holds, or "" to allocate one. */
  readonly given: string;
  /** Who may hold it already: this deployment's own port, after an earlier apply. */
  readonly owner: FloatingIpOwner;
  /** 1 or 0 (a token): whether it is wanted at all. @default 1 */
  readonly wanted?: number;
  /** The allocated one's description. */
  readonly description?: string;
}

/** A floating IP: allocated here, or the project's own looked up by its address. */
export interface FloatingIp {
  /** Allocated here: count 1 when wanted and none is given, else 0. */
  readonly allocated: NetworkingFloatingipV2;
  /** The given one, read at plan: count 1 when wanted and given. */
  readonly lookup: DataOpenstackNetworkingFloatingipV2;
  /** Its address, whichever it is; null when not wanted. */
  readonly address: string;
  /** 1 or 0 (a token): whether it is allocated here, for the quota. */
  readonly allocates: number;
}

/**
 * The floating IP of a bastion, a master or a load balancer: allocated from the external network
 * (and released with the cluster), or one the project already holds, given by address, so that
 * the address, and the DNS records that name it, survive a rebuild or a redeploy. A given one is
 * never released here.
 *
 * A given address is read at plan and refused there, in words that name the variable, when it is
 * on another network than external_network_name's (its router's gateway could not reach it), in
 * another project (a credential with the admin role sees every project's), or in use by a port
 * that is not `owner`'s. An address the project does not hold fails the read in the provider's
 * words (`No openstack_networking_floatingip_v2 found`), which the lookup's logical id, the
 * variable's name, makes name it. Provider 3.4.0's lookup filters by address, not by ID
 * (data_source_openstack_networking_floatingip_v2.go), so an address it is.
 */
export function floatingIp(scope: Construct, id: string, props: FloatingIpProps): FloatingIp {
  const { network, variable, given, owner } = props;
  // length() < 1, not == "" (Op drops a falsy right operand: constructs/cdktf-workarounds.ts).
  const none = Op.lt(Fn.lengthOf(given), 1);
  const counted = (name: string, condition: unknown) => {
    const when = props.wanted === undefined ? condition : Op.and(Op.eq(props.wanted, 1), condition);
    return Token.asNumber(new TerraformLocal(scope, name, Fn.conditional(when, 1, 0)).expression);
  };
  const allocates = counted(`${variable}_allocated`, none);
  const looksUp = counted(`${variable}_given`, Op.not(none));

  const allocated = new NetworkingFloatingipV2(scope, id, {
    count: TerraformCount.of(allocates),
    pool: network.externalNetwork.name,
    ...(props.description === undefined ? {} : { description: props.description }),
  });
  const project = new DataOpenstackIdentityAuthScopeV3(scope, `${id}Project`, {
    count: TerraformCount.of(looksUp),
    name: `kube-on-os-${variable}`,
  });
  const projectId = `one(${addressOf(project)}[*].project_id)`;
  const external = addressOf(network.externalNetwork);
  const lookup = new DataOpenstackNetworkingFloatingipV2(scope, `${id}Given`, {
    count: TerraformCount.of(looksUp),
    address: given,
    lifecycle: {
      postcondition: [
        {
          condition: `\${self.pool == ${external}.id}`,
          errorMessage:
            `Invalid ${variable}: ${variable}=\${self.address} is a floating IP of network \${self.pool}, not of ` +
            `external_network_name=\${${external}.name} (\${${external}.id}), which the router's gateway is on: give one of that network.`,
        },
        {
          condition: `\${self.tenant_id == ${projectId}}`,
          errorMessage:
            `Invalid ${variable}: ${variable}=\${self.address} belongs to project \${self.tenant_id}, not to this deployment's ` +
            `(\${${projectId}}): give one this project holds (openstack floating ip list).`,
        },
      ],
    },
  });
  lookup.overrideLogicalId(variable);
  const fqn = addressOf(lookup);
  // The owner's name, a local: a template inside a condition's expression would lose its quotes.
  const ownerName = addressOf(
    new TerraformLocal(scope, `${variable}_owner`, "portName" in owner ? owner.portName : owner.loadBalancerName),
  );
  // The port that holds it, if any: this deployment's own (after an earlier apply), or refused.
  const holder = new DataOpenstackNetworkingPortV2(scope, `${id}Holder`, {
    count: TerraformCount.of(Token.asNumber(`\${length([for fip in ${fqn} : fip if fip.port_id != ""])}`)),
    portId: `\${one(${fqn}[*].port_id)}`,
    lifecycle: {
      postcondition: [
        {
          condition:
            "portName" in owner
              ? `\${self.name == ${ownerName}}`
              : `\${self.device_owner == "Octavia" && startswith(self.device_id, "lb-")}`,
          errorMessage:
            `Invalid ${variable}: ${variable}=\${one(${fqn}[*].address)} is in use by port \${self.id} ("\${self.name}"), not by ` +
            `this deployment's: give a free floating IP, or free it first (openstack floating ip unset --port).`,
        },
      ],
    },
  });
  if ("loadBalancerName" in owner) {
    // Octavia's VIP port: device lb-<load balancer ID>. Its load balancer must be this deployment's.
    new DataOpenstackLbLoadbalancerV2(scope, `${id}HolderLoadBalancer`, {
      count: TerraformCount.of(Token.asNumber(`\${length(${addressOf(holder)})}`)),
      loadbalancerId: `\${trimprefix(one(${addressOf(holder)}[*].device_id), "lb-")}`,
      lifecycle: {
        postcondition: [
          {
            condition: `\${self.name == ${ownerName}}`,
            errorMessage:
              `Invalid ${variable}: ${variable}=\${one(${fqn}[*].address)} is in use by load balancer \${self.id} ("\${self.name}"), ` +
              `not by this deployment's: give a free floating IP, or free it first (openstack floating ip unset --port).`,
          },
        ],
      },
    });
  }
  const address = Token.asString(Fn.conditional(Op.eq(looksUp, 1), Fn.one(splat(lookup, "address")), Fn.one(splat(allocated, "address"))));
  return { allocated, lookup, address, allocates };
}
