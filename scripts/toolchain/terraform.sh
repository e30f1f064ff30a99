#!/usr/bin/env bash
# Installs OpenTofu and the providers the stack uses, all built from Go modules (hashicorp/null as
# a stand-in, see install_null_provider), and lays the providers out as a filesystem mirror so
# that `tofu init` works with no network at all.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

# go_build MODULE_DIR PACKAGE OUT [LDFLAGS]: build PACKAGE with the versions pinned in the tools
# module MODULE_DIR (go.mod + go.sum are committed, so the build is verified and reproducible).
go_build() {
  local module_dir=$1 package=$2 out=$3 ldflags=${4:-}
  (cd "$module_dir" && CGO_ENABLED=0 go build -mod=readonly -trimpath -ldflags "-s -w $ldflags" -o "$out" "$package") ||
    die "building $package failed (see the go output above)"
}

install_tofu() {
  local dir version
  dir=$(koo_tofu_dir)
  version=$(koo_tofu_version)
  is_complete "$dir" && return 0
  fresh_dir "$dir/bin"
  # A tofu of exactly the pinned version already on PATH is used as it is.
  local existing
  existing=$(command -v tofu || true)
  if [[ -n $existing ]] && [[ $("$existing" version 2>/dev/null | head -n 1) == "OpenTofu v$version" ]]; then
    log "OpenTofu $version: using $existing"
    ln -s "$existing" "$dir/bin/tofu"
  else
    need go "install Go >= 1.24 (https://go.dev/doc/install); it builds OpenTofu $version"
    log "OpenTofu $version: building from its Go module (a few minutes, once)"
    go_build "$KOO_TOOLCHAIN/go/tofu" github.com/opentofu/opentofu/cmd/tofu "$dir/bin/tofu" \
      "-X github.com/opentofu/opentofu/version.dev=no"
  fi
  mark_complete "$dir"
}

# mirror_provider BINARY NAMESPACE TYPE VERSION: lays BINARY out in the filesystem mirror's
# unpacked layout (HOST/NAMESPACE/TYPE/VERSION/OS_ARCH/terraform-provider-TYPE_vVERSION), under
# every registry host.
mirror_provider() {
  local binary=$1 namespace=$2 type=$3 version=$4 host target
  for host in "${KOO_REGISTRY_HOSTS[@]}"; do
    target="$(koo_mirror_dir)/$host/$namespace/$type/$version/linux_$(go_arch)"
    fresh_dir "$target"
    cp "$binary" "$target/terraform-provider-${type}_v$version"
  done
}

install_openstack_provider() {
  local stamp version
  stamp=$(koo_provider_stamp_dir openstack)
  version=$(koo_openstack_version)
  is_complete "$stamp" && return 0
  need go "install Go >= 1.24 (https://go.dev/doc/install); it builds terraform-provider-openstack $version"
  fresh_dir "$stamp"
  log "terraform-provider-openstack $version: building from its Go module (a minute or two, once)"
  go_build "$KOO_TOOLCHAIN/go/openstack" github.com/terraform-provider-openstack/terraform-provider-openstack/v3 "$stamp/terraform-provider-openstack"
  mirror_provider "$stamp/terraform-provider-openstack" terraform-provider-openstack openstack "$version"
  rm "$stamp/terraform-provider-openstack"
  mark_complete "$stamp"
}

# The offline tests' stand-in for hashicorp/null: the Go proxy serves no usable module of the
# real provider (its v3 tags lack a /v3 module path), so scripts/toolchain/go/null rebuilds its
# null_resource on terraform-plugin-framework. Mirrored under the real provider's address and
# version, so the synthesized stack initializes offline exactly as it would from the registry.
install_null_provider() {
  local stamp version source
  stamp=$(koo_provider_stamp_dir null)
  version=$(koo_null_version)
  source=$(koo_null_source_hash)
  is_complete "$stamp" && [[ $(cat "$stamp/source.sha256") == "$source" ]] && return 0
  need go "install Go >= 1.24 (https://go.dev/doc/install); it builds the tests' stand-in for hashicorp/null $version"
  fresh_dir "$stamp"
  log "hashicorp/null $version stand-in: building scripts/toolchain/go/null (a minute, once)"
  go_build "$KOO_TOOLCHAIN/go/null" . "$stamp/terraform-provider-null" "-X main.version=$version"
  mirror_provider "$stamp/terraform-provider-null" hashicorp null "$version"
  rm "$stamp/terraform-provider-null"
  echo "$source" >"$stamp/source.sha256"
  mark_complete "$stamp"
}

write_cli_config() {
  local config
  config=$(koo_tofu_cli_config)
  mkdir -p "$(dirname "$config")"
  # No "direct" block: every provider must come from the mirror, so init never reaches out.
  cat >"$config.tmp" <<HCL
provider_installation {
  filesystem_mirror {
    path = "$(koo_mirror_dir)"
  }
}
HCL
  mv "$config.tmp" "$config"
}

install_tofu
install_openstack_provider
install_null_provider
write_cli_config
