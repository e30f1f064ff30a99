import { Fn, TerraformLocal } from "cdktf";
import { Construct } from "constructs";
import { ClusterLayout } from "../cluster-layout";

export interface SaltPillarProps {
  /** Names, addresses and the control plane. */
  readonly layout: ClusterLayout;
  /** The users variable: a list of { username, ssh_public_key }. */
  readonly users: unknown;
  readonly publicCidr: string;
  readonly privateCidr: string;
  readonly nameservers: string[];
  readonly masterFloatingIp: string;
  readonly podCidr: string;
  readonly serviceCidr: string;
  /** The snap channel microk8s is installed from (microk8s:channel; Salt's default is the same). */
  readonly microk8sChannel: string;
}

/**
 * The first line of /srv/pillar/_from_terraform.sls. Without it Salt renders the file as Jinja
 * before YAML, so a user's key comment `{{ 7*7 }}` would arrive as 49, or run Salt functions on
 * the master. YAML rather than JSON: yamlencode() double-quotes every string, which Salt's
 * YAML 1.1 loader reads back unchanged (`yes`, `off`, `null`, `~`, `0x1F`, `1e3`, `2001-01-01`
 * stay strings), and the file keeps the example's format.
 */
export const PILLAR_RENDERER = "#!yaml";

/**
 * /srv/pillar/_from_terraform.sls: the data-only renderer line, then a yamlencode() of Terraform
 * values, following pillar/_from_terraform.sls.example. Node ids and addresses are the layout's, which the machines
 * take theirs from too: a plan shows the node list before any machine exists. Only the master's
 * floating IP waits for its allocation.
 */
export function saltPillar(scope: Construct, props: SaltPillarProps): string {
  const { layout } = props;
  // A literal for-expression: cdktf renders a token that follows a literal `}` inside an
  // expression as a nested `${...}`, so no token comes after an object literal here.
  const nodes = new TerraformLocal(
    scope,
    "kube_nodes",
    `\${[for i, id in ${layout.locals.kubeNodeIds.expression} : { id = id, address = ${layout.locals.kubeNodeAddresses.expression}[i] }]}`,
  );
  const pillar = new TerraformLocal(
    scope,
    "salt_pillar",
    Fn.join("\n", [
      PILLAR_RENDERER,
      Fn.yamlencode({
        users: props.users,
        mine_functions: { "network.ip_addrs": { cidr: props.privateCidr } },
        network: { public_cidr: props.publicCidr, private_cidr: props.privateCidr },
        core: { nameservers: props.nameservers },
        microk8s: {
          master: layout.kubeMaster.fqdn,
          allowed_csr_ip: props.masterFloatingIp,
          pod_cidr: props.podCidr,
          service_cidr: props.serviceCidr,
          channel: props.microk8sChannel,
          nodes: nodes.expression,
          control_plane: layout.controlPlane,
        },
      }),
    ]),
  );
  return pillar.asString;
}
