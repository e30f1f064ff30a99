import { Testing } from "cdktf";
import { CloudIntegration, CloudIntegrationProps } from "../constructs/cloud-integration";
import { Network } from "../constructs/networking";
import { CA_CERTIFICATE } from "./support/arbitraries";

type Props = Partial<Omit<CloudIntegrationProps, "network">>;

function synth(props: Props = {}): any {
  return JSON.parse(
    Testing.synthScope((scope) => {
      const network = new Network(scope, "Network", { externalNetworkName: "vlan1066", namePrefix: "lab.example" });
      new CloudIntegration(scope, "CloudIntegration", { enabled: true, domain: "lab.example", network, ...props });
    }),
  );
}

describe("CloudIntegration", () => {
  it("takes a CA bundle and every pool algorithm CPO knows", () => {
    for (const loadBalancerMethod of ["ROUND_ROBIN", "LEAST_CONNECTIONS", "SOURCE_IP", "SOURCE_IP_PORT"]) {
      expect(() =>
        synth({ caCertificate: `${CA_CERTIFICATE}${CA_CERTIFICATE}`, loadBalancerProvider: "ovn", loadBalancerMethod }),
      ).not.toThrow();
    }
  });

  it.each(["round_robin", "RANDOM", " SOURCE_IP_PORT"])("rejects the load balancer method %j by name", (loadBalancerMethod) => {
    expect(() => synth({ loadBalancerMethod })).toThrow(
      `CloudIntegration: loadBalancerMethod must be empty or one of ROUND_ROBIN, LEAST_CONNECTIONS, SOURCE_IP, SOURCE_IP_PORT (got "${loadBalancerMethod}")`,
    );
  });

  it("rejects a CA that is no PEM certificate, without showing it", () => {
    const key = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n";
    expect(() => synth({ caCertificate: key })).toThrow(
      /^CloudIntegration: caCertificate must be empty or PEM certificates \(-----BEGIN CERTIFICATE-----\)$/,
    );
  });
});
