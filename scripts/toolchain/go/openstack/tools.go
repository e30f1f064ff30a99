//go:build tools

// Package tools pins terraform-provider-openstack, built from its Go module for the local
// filesystem mirror. go.sum pins its hash: the checksum database does not list this module.
package tools

import _ "github.com/terraform-provider-openstack/terraform-provider-openstack/v3"
