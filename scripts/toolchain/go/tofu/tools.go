//go:build tools

// Package tools pins the OpenTofu CLI for the verification toolchain. OpenTofu's own go.mod has a
// replace directive, which `go install pkg@version` refuses, so we build it from this module,
// which repeats that replace.
package tools

import _ "github.com/opentofu/opentofu/cmd/tofu"
