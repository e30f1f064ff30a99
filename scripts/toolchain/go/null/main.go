// Command terraform-provider-null is the offline tests' stand-in for hashicorp/null 3.2.4: a
// provider built on terraform-plugin-framework that serves the same null_resource, so that
// `tofu init`, `validate`, `plan` and `apply` work on the synthesized stack without a registry.
// Real deploys download the real hashicorp/null from the registry; nothing here ships to them.
//
// Written for this project, not copied: each behaviour it reproduces names the upstream file at
// tag v3.2.4 of github.com/hashicorp/terraform-provider-null (MPL-2.0) that it follows.
package main

import (
	"context"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"
)

// version is stamped by scripts/toolchain/terraform.sh (-X main.version=...) from paths.sh.
var version = "dev"

func main() {
	// Protocol 5 and the registry.terraform.io address, as upstream's main.go (v3.2.4) serves.
	err := providerserver.Serve(context.Background(), newProvider, providerserver.ServeOpts{
		Address:         "registry.terraform.io/hashicorp/null",
		ProtocolVersion: 5,
	})
	if err != nil {
		log.Fatal(err)
	}
}
