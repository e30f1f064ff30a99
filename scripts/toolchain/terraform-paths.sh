# shellcheck shell=bash
# Where the Terraform-side tools live in the cache. Versions come from the committed Go tools
# modules, so bumping a go.mod is the one change needed to move to a new release.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KOO_TOOLCHAIN="$KOO_ROOT/scripts/toolchain"

# go_mod_version DIR MODULE: the version of MODULE required by the tools module in DIR.
go_mod_version() {
  awk -v m="$2" '$1 == m { print substr($2, 2); exit }' "$KOO_TOOLCHAIN/go/$1/go.mod"
}

koo_tofu_version() { go_mod_version tofu github.com/opentofu/opentofu; }
koo_openstack_version() { go_mod_version openstack github.com/terraform-provider-openstack/terraform-provider-openstack/v3; }
koo_tofu_dir() { echo "$KOO_CACHE/tofu/$(koo_tofu_version)"; }
koo_mirror_dir() { echo "$KOO_CACHE/provider-mirror"; }
koo_provider_stamp_dir() { echo "$KOO_CACHE/providers/$1/$(koo_"$1"_version)"; }
koo_tofu_cli_config() { echo "$KOO_CACHE/tofu.rc"; }
