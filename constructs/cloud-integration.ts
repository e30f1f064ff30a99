import { Fn, IResolvable, Op, ref, TerraformCount, TerraformLocal, TerraformStack, Token } from "cdktf";
import { Construct } from "constructs";
import { DataOpenstackIdentityAuthScopeV3 } from "../.gen/providers/openstack/data-openstack-identity-auth-scope-v3";
import { IdentityApplicationCredentialV3 } from "../.gen/providers/openstack/identity-application-credential-v3";
import { NetworkingSecgroupRuleV2 } from "../.gen/providers/openstack/networking-secgroup-rule-v2";
import { LB_METHODS } from "../config/parameters";
import { PEM_CERTIFICATES } from "../config/rules";
import { NODE_PORTS } from "../facts/ports";
import { OCTAVIA_SERVICE_TYPE } from "./api-load-balancer";
import { addressOf, hclOf, splat } from "./cdktf-workarounds";
import { Network } from "./networking";
import { PILLAR_RENDERER } from "./provisioning/pillar";

export interface CloudIntegrationProps {
  /** Whether the cluster gets the cloud controller manager and Cinder CSI (a bool token: cloud_integration). */
  readonly enabled: boolean | IResolvable;
  /** The deployment's domain, which names the application credential. */
  readonly domain: string;
  readonly network: Network;
  /**
   * PEM certificates of the private CA behind the cloud's TLS endpoints (a string token:
   * openstack_ca_certificate), for cloud.conf's ca-file.
   * @default "" - the CAs they trust already (the nodes' for the cloud controller manager, its image's for Cinder CSI)
   */
  readonly caCertificate?: string;
  /**
   * Octavia provider of LoadBalancer Services' load balancers, cloud.conf's lb-provider (a token: lb_provider).
   * @default "" - the cloud controller manager's default (amphora)
   */
  readonly loadBalancerProvider?: string;
  /**
   * Their pools' algorithm, cloud.conf's lb-method (a token: lb_method), one of LB_METHODS.
   * @default "" - the cloud controller manager's default (ROUND_ROBIN)
   */
  readonly loadBalancerMethod?: string;
}

/**
 * The roles the application credential asks for, of those the deployer holds: `member` (Nova,
 * Neutron and Cinder on the project), `reader` (which Keystone lists with `member`, as
 * `keystone-manage bootstrap` makes member imply reader) and `load-balancer_member` (Octavia's
 * role for managing load balancers under its new default policies). Keystone answers with the
 * requested roles and the roles they imply, so asking for the closure keeps the next plan free
 * of a replacement; asking only for roles the deployer has avoids Keystone's 403
 * "Cannot create an application credential with unassigned role".
 */
export const CLOUD_CREDENTIAL_ROLES = ["member", "reader", "load-balancer_member"] as const;

/**
 * What the OpenStack cloud controller manager and the Cinder CSI driver need from Terraform: an
 * application credential made for this cluster, the Keystone endpoint and region of the token's
 * catalog, and the networks LoadBalancer Services use. It reaches the Kubernetes master only as
 * /srv/pillar/_cloud.sls (`pillar`, sensitive), from which Salt makes the `cloud-config` Secret.
 *
 * The credential is restricted (Keystone's default): it cannot create credentials or trusts.
 * Keystone refuses to create one with a restricted application credential (403), so the deployer
 * authenticates with a password or an unrestricted application credential, or sets
 * cloud_integration = false.
 */
export class CloudIntegration extends Construct {
  /** 1 or 0 (a token). */
  readonly count: number;
  readonly credential: IdentityApplicationCredentialV3;
  /** The security group rules this construct adds (a token: 0 or 1). */
  readonly securityGroupRules: number;
  /** The content of _cloud.sls: the renderer line and YAML. Sensitive (it holds the credential's secret). */
  readonly pillar: string;
  /** A hash of the pillar's non-secret values and the credential's id: a new one re-syncs the pillar. */
  readonly pillarVersion: string;

  constructor(scope: Construct, id: string, props: CloudIntegrationProps) {
    super(scope, id);
    const caCertificate = props.caCertificate ?? "";
    const loadBalancerProvider = props.loadBalancerProvider ?? "";
    const loadBalancerMethod = props.loadBalancerMethod ?? "";
    if (
      !Token.isUnresolved(loadBalancerMethod) &&
      loadBalancerMethod !== "" &&
      !(LB_METHODS as readonly string[]).includes(loadBalancerMethod)
    ) {
      throw new Error(
        `CloudIntegration: loadBalancerMethod must be empty or one of ${LB_METHODS.join(", ")} (got "${loadBalancerMethod}")`,
      );
    }
    if (!Token.isUnresolved(caCertificate) && caCertificate !== "" && !PEM_CERTIFICATES.test(caCertificate)) {
      // The value is not shown: it may be a private key pasted by mistake.
      throw new Error("CloudIntegration: caCertificate must be empty or PEM certificates (-----BEGIN CERTIFICATE-----)");
    }
    this.count = Token.asNumber(Fn.conditional(props.enabled, 1, 0));
    const enabled = hclOf(props.enabled);

    // The token's roles and catalog. Its own read, not the load balancer's: the conditions differ.
    const scopeData = new DataOpenstackIdentityAuthScopeV3(this, "Scope", {
      name: "kube-on-os-cloud-integration",
      lifecycle: {
        postcondition: [
          {
            condition: `\${!${enabled} || contains(self.roles[*].role_name, "member")}`,
            errorMessage:
              "cloud_integration is true, but the deploying user has no member role on the project, which the cloud controller manager's application credential needs: ask for the role, or set cloud_integration = false.",
          },
          {
            condition: `\${!${enabled} || length(${publicIdentityEndpoints("self")}) > 0}`,
            errorMessage:
              "cloud_integration is true, but the token's catalog lists no public identity endpoint in the provider's region for the cloud controller manager to authenticate at: set cloud_integration = false.",
          },
        ],
      },
    });
    const data = addressOf(scopeData);
    // Stack-level locals, whose names expressions can use as written.
    const stack = TerraformStack.of(this);
    const local = (name: string, expression: unknown) => new TerraformLocal(stack, name, expression);

    const roles = local(
      "cloud_credential_roles",
      `\${[for role in ${JSON.stringify(CLOUD_CREDENTIAL_ROLES)} : role if contains(${data}.roles[*].role_name, role)]}`,
    );
    // The identity service's public endpoint in the token's region (any region when the provider has none).
    local("cloud_identity_endpoint", `\${try(${publicIdentityEndpoints(data)}[0], { url = "", region = "" })}`);
    const hasOctavia = local("cloud_has_octavia", `\${contains(${data}.service_catalog[*].type, "${OCTAVIA_SERVICE_TYPE}")}`);

    this.credential = new IdentityApplicationCredentialV3(this, "Credential", {
      count: TerraformCount.of(this.count),
      name: `${props.domain}-cloud-provider`,
      description: `kube-on-os ${props.domain}: the OpenStack cloud controller manager and Cinder CSI driver`,
      roles: Token.asList(roles.expression),
      unrestricted: false,
    });
    const credentialId = Token.asString(Fn.one(splat(this.credential, "id")));
    const credentialSecret = Token.asString(Fn.one(splat(this.credential, "secret")));

    // Octavia's members of a LoadBalancer Service are the nodes' NodePorts, which it reaches from
    // its port on the private network (its VIP and floating IP sit on the public subnet, the
    // router's, as the API load balancer's do).
    this.securityGroupRules = Token.asNumber(
      local("cloud_node_port_rules", Fn.conditional(Op.and(props.enabled, hasOctavia.expression), 1, 0)).expression,
    );
    new NetworkingSecgroupRuleV2(this, "NodePortRule", {
      count: TerraformCount.of(this.securityGroupRules),
      securityGroupId: props.network.securityGroups.kubeNodes.id,
      description: "Kubernetes NodePorts from LoadBalancer Services' load balancers on the private network",
      direction: "ingress",
      ethertype: "IPv4",
      protocol: "tcp",
      portRangeMin: NODE_PORTS.min,
      portRangeMax: NODE_PORTS.max,
      remoteIpPrefix: props.network.privateCidr,
    });

    // The settings a deployment gives only when it sets them: left out when empty, so that a
    // deployment without them keeps the pillar, and its version, that it had before they existed.
    const loadBalancerOptions = local(
      "cloud_load_balancer_options",
      `\${{ for key, value in { lb_provider = ${hclOf(loadBalancerProvider)}, lb_method = ${hclOf(loadBalancerMethod)} } : key => value if value != "" }}`,
    );
    const settings = local(
      "cloud_settings",
      Fn.merge([
        {
          auth_url: Token.asString(ref("local.cloud_identity_endpoint.url", stack)),
          region: Token.asString(
            local("cloud_region", `\${try(coalesce(${data}.region, local.cloud_identity_endpoint.region), "")}`).expression,
          ),
          floating_network_id: props.network.externalNetwork.id,
          subnet_id: props.network.publicSubnetId,
          member_subnet_id: props.network.privateSubnetId,
          load_balancer: hasOctavia.expression,
        },
        loadBalancerOptions.expression,
      ]),
    );
    // The CA is sensitive to Terraform (a concealed variable: constructs/variables.ts), and
    // a trigger that turned sensitive would change every deployment's plan: whether there is
    // one, and its hash, are not sensitive. Each is an empty object without a CA.
    local("cloud_has_ca_certificate", `\${nonsensitive(${hclOf(caCertificate)} != "")}`);
    const onlyWithCa = (name: string, value: string) =>
      local(name, `\${{ for key, value in { ca_certificate = ${value} } : key => value if local.cloud_has_ca_certificate }}`).expression;
    const caVersion = onlyWithCa("cloud_ca_certificate_version", `nonsensitive(sha256(${hclOf(caCertificate)}))`);
    const caPillar = onlyWithCa("cloud_ca_certificate", hclOf(caCertificate));
    this.pillarVersion = local(
      "cloud_pillar_version",
      Fn.conditional(
        props.enabled,
        Fn.sha256(Fn.jsonencode(Fn.merge([settings.expression, { application_credential_id: credentialId }, caVersion]))),
        "",
      ),
    ).asString;
    // Without cloud integration the file is still written, empty, so a disabled cluster's master
    // holds no stale credential.
    this.pillar = local(
      "cloud_pillar",
      Fn.join("\n", [
        PILLAR_RENDERER,
        Fn.conditional(
          props.enabled,
          Fn.yamlencode({
            openstack: {
              cloud: Fn.merge([
                settings.expression,
                { application_credential_id: credentialId, application_credential_secret: credentialSecret },
                caPillar,
              ]),
            },
          }),
          "{}\n",
        ),
      ]),
    ).asString;
  }
}

/**
 * The identity service's public endpoints in the region of `scopeData` (an auth scope data
 * source's address, or `self`), or in any region when the provider names none.
 */
function publicIdentityEndpoints(scopeData: string): string {
  return (
    `[for e in flatten([for s in ${scopeData}.service_catalog : s.endpoints if s.type == "identity"]) : e ` +
    `if e.interface == "public" && contains(["", e.region], ${scopeData}.region)]`
  );
}
