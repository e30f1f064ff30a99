# shellcheck shell=bash
# Shared by the pipeline's scripts (.gitlab-ci.yml jobs): the toolchain's helpers, Go for the
# toolchain's builds, and the one variable that names a cluster. Sourced, never executed.
source "$(dirname "${BASH_SOURCE[0]}")/../toolchain/paths.sh"

# npm's cache, like the toolchain's, is a path inside the project in the pipeline (.gitlab-ci.yml).
if [[ -n ${npm_config_cache:-} && $npm_config_cache != /* ]]; then
  export npm_config_cache="$KOO_ROOT/$npm_config_cache"
fi

ci_die() {
  printf 'kube-on-os ci: %s\n' "$*" >&2
  exit 1
}

# KUBE_ON_OS_DOMAIN names a cluster: it becomes TF_VAR_deploy_domain_name and the GitLab-managed
# state's name, as .gitlab-ci.yml makes it the environment and the resource group. A second,
# different value for either would let a plan of one cluster run against another's state.
ci_cluster() {
  [[ -n ${KUBE_ON_OS_DOMAIN:-} ]] ||
    ci_die "KUBE_ON_OS_DOMAIN is empty; set it (a CI/CD variable) to the cluster's DNS domain, e.g. lab.example.org"
  local name
  for name in TF_VAR_deploy_domain_name GITLAB_TOFU_STATE_NAME TF_STATE_NAME; do
    if [[ -n ${!name:-} && ${!name} != "$KUBE_ON_OS_DOMAIN" ]]; then
      ci_die "$name='${!name}' differs from KUBE_ON_OS_DOMAIN='$KUBE_ON_OS_DOMAIN'; remove $name, KUBE_ON_OS_DOMAIN sets it"
    fi
  done
  export TF_VAR_deploy_domain_name=$KUBE_ON_OS_DOMAIN GITLAB_TOFU_STATE_NAME=$KUBE_ON_OS_DOMAIN
  unset TF_STATE_NAME
}

# The Go release installed when the toolchain has to build tofu or the provider and no new enough
# Go is on PATH: the golang.org/toolchain module, the same zip `GOTOOLCHAIN` downloads through
# the Go module proxy, checked against this hash.
KOO_CI_GO_VERSION=1.26.8
KOO_CI_GO_SHA256_AMD64=30c2b1bf7dcc88d3eb0a1364e47ddd9128edb3110a30e8a0ef61cd5856b31de7

# ci_goproxy: the first module proxy in GOPROXY, read as the go command reads the list: entries
# separated by "," or "|", "direct" (the origin, no proxy: skipped here) and "off" (no download
# at all). Unset or empty means Go's default.
ci_goproxy() {
  local entry entries
  IFS=',|' read -r -a entries <<<"${GOPROXY-https://proxy.golang.org,direct}"
  ((${#entries[@]} > 0)) || entries=(https://proxy.golang.org)
  for entry in "${entries[@]}"; do
    entry=${entry//[[:space:]]/}
    case $entry in
      "" | direct) ;;
      off) ci_die "GOPROXY='$GOPROXY' turns module downloads off before naming a proxy; Go $KOO_CI_GO_VERSION comes from a module proxy (or put Go on PATH)" ;;
      *) printf '%s\n' "${entry%/}" && return 0 ;;
    esac
  done
  ci_die "GOPROXY='$GOPROXY' names no module proxy (only direct); Go $KOO_CI_GO_VERSION comes from a module proxy (or put Go on PATH)"
}

# ci_go: puts a Go that can build the toolchain's modules on PATH, unless the toolchain is built
# already (cached), or a new enough Go is there.
ci_go() {
  local required have
  if is_complete "$(koo_tofu_dir)" && is_complete "$(koo_provider_stamp_dir openstack)"; then return 0; fi
  required=$(awk '$1 == "go" { print $2; exit }' "$KOO_TOOLCHAIN/go/tofu/go.mod")
  have=$(go env GOVERSION 2>/dev/null | sed 's/^go//' || true)
  if [[ -n $have && $(printf '%s\n%s\n' "$required" "$have" | sort -V | head -n 1) == "$required" ]]; then return 0; fi

  local dir="$KOO_CACHE/go/$KOO_CI_GO_VERSION" arch
  arch=$(go_arch)
  if ! is_complete "$dir"; then
    [[ $arch == amd64 ]] || ci_die "no Go >= $required on PATH, and only linux/amd64 Go is pinned here; install Go $required or newer"
    need curl "install curl (Debian: apt-get install curl)"
    ensure_command unzip unzip
    local proxy
    proxy=$(ci_goproxy) || exit 1
    local module="golang.org/toolchain@v0.0.1-go$KOO_CI_GO_VERSION.linux-$arch"
    log "Go $KOO_CI_GO_VERSION: downloading ${module} from $proxy (once; cached with the toolchain)"
    fresh_dir "$dir"
    curl -fsSL --retry 3 -o "$dir/go.zip" "$proxy/golang.org/toolchain/@v/v0.0.1-go$KOO_CI_GO_VERSION.linux-$arch.zip" ||
      ci_die "could not download $module from $proxy"
    echo "$KOO_CI_GO_SHA256_AMD64  $dir/go.zip" | sha256sum --check --quiet >/dev/null 2>&1 ||
      ci_die "$module from $proxy does not have the pinned sha256 $KOO_CI_GO_SHA256_AMD64"
    unzip -q "$dir/go.zip" -d "$dir/unpacked"
    mv "$dir/unpacked/$module" "$dir/goroot"
    rm -rf "$dir/go.zip" "$dir/unpacked"
    # Module zips keep no file modes; `go` restores them the same way when it switches toolchains.
    chmod +x "$dir/goroot/bin/"* "$dir/goroot/pkg/tool/"*/*
    mark_complete "$dir"
  fi
  export PATH="$dir/goroot/bin:$PATH" GOTOOLCHAIN=local
}

# ci_python: Python 3 with venv for the toolchain's venv. The Node image has Debian's python3 at
# most, without its venv module; Debian's packages add both (the toolchain's own installers
# leave this to the user, who is not root on a laptop).
ci_python() {
  python3 -c 'import venv, ensurepip' >/dev/null 2>&1 && return 0
  need apt-get "install Python 3 with its venv module"
  log "python3-venv: installing Debian's python3 and python3-venv"
  { run_apt install -y -qq python3 python3-venv >/dev/null 2>&1 ||
    { run_apt update -qq >/dev/null 2>&1 && run_apt install -y -qq python3 python3-venv >/dev/null; }; } ||
    ci_die "could not install python3-venv with apt-get"
}

# ci_provider_config: points tofu at the providers a real pipeline uses, unless the user has a CLI
# configuration of their own. The OpenStack provider comes from the toolchain's mirror (built from
# its pinned module, verified by go.sum); every other provider, hashicorp/null, from the registry,
# as on a laptop: the toolchain's null is the offline tests' stand-in. With
# KUBE_ON_OS_OFFLINE_PROVIDERS=true (runners without registry access, the local pipeline test)
# every provider comes from the mirror. Needs scripts/toolchain/env.sh sourced.
ci_provider_config() {
  [[ ${KOO_USER_CLI_CONFIG:-0} == 0 ]] || return 0
  [[ ${KUBE_ON_OS_OFFLINE_PROVIDERS:-false} != true ]] || return 0
  local config openstack
  config=$(mktemp "${TMPDIR:-/tmp}/kube-on-os-tofu-XXXXXX.rc")
  openstack="registry.opentofu.org/terraform-provider-openstack/openstack"
  cat >"$config" <<HCL
provider_installation {
  filesystem_mirror {
    path    = "$(koo_mirror_dir)"
    include = ["$openstack"]
  }
  direct {
    exclude = ["$openstack"]
  }
}
HCL
  export TF_CLI_CONFIG_FILE=$config
  log "providers: $openstack from the toolchain's mirror, the others from the registry"
}
