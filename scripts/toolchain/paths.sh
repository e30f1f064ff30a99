# shellcheck shell=bash
# Where each part of the toolchain lives in the cache, so that installers and users agree.
# Versions of Go-built tools come from the committed Go tools modules, so bumping a go.mod is the
# one change needed to move to a new release.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

KOO_TOOLCHAIN="$KOO_ROOT/scripts/toolchain"

# go_mod_version DIR MODULE: the version of MODULE required by the tools module in DIR.
go_mod_version() {
  awk -v m="$2" '$1 == m { print substr($2, 2); exit }' "$KOO_TOOLCHAIN/go/$1/go.mod"
}

koo_tofu_version() { go_mod_version tofu github.com/opentofu/opentofu; }
koo_openstack_version() { go_mod_version openstack github.com/terraform-provider-openstack/terraform-provider-openstack/v3; }
# The offline tests' stand-in for hashicorp/null (scripts/toolchain/go/null) claims the version
# that @cdktf/provider-null's bindings were generated from; __tests__/toolchain-null-provider.test.ts keeps
# the two equal. Real deploys get this version of the real provider from the registry.
KOO_NULL_VERSION="3.2.4"
koo_null_version() { echo "$KOO_NULL_VERSION"; }
koo_tofu_dir() { echo "$KOO_CACHE/tofu/$(koo_tofu_version)"; }
koo_mirror_dir() { echo "$KOO_CACHE/provider-mirror"; }
# A provider source without a hostname (`hashicorp/null`) means registry.terraform.io to Terraform
# and registry.opentofu.org to OpenTofu, so the mirror holds every provider under both.
KOO_REGISTRY_HOSTS=(registry.terraform.io registry.opentofu.org)
# The stamp names the mirror's layout too: a cache laid out for one host only is redone.
koo_provider_stamp_dir() { echo "$KOO_CACHE/providers/$1/$(koo_"$1"_version)/hosts-${#KOO_REGISTRY_HOSTS[@]}"; }
# The stand-in changes without its version changing, so its stamp also records this hash of its
# source: the mirror has one place per version, and whichever source was built last is in it.
koo_null_source_hash() { cat "$KOO_TOOLCHAIN"/go/null/{go.mod,go.sum,*.go} | sha256sum | cut -d ' ' -f 1; }
koo_tofu_cli_config() { echo "$KOO_CACHE/tofu.rc"; }

# The oldest Terraform the stack supports: ephemeral input variables (root_password) came in 1.10.
KOO_TERRAFORM_MIN_VERSION="1.10.0"

# koo_terraform_binary: the `terraform` on PATH when it is at least KOO_TERRAFORM_MIN_VERSION, else "".
# The toolchain does not install one: Terraform from 1.6 on cannot be built from the Go module proxy
# (its go.mod replaces nested modules with local directories that the module zip leaves out).
koo_terraform_binary() {
  local terraform version
  terraform=$(command -v terraform 2>/dev/null) || return 0
  version=$("$terraform" version -json 2>/dev/null | sed -n 's/.*"terraform_version": *"\([^"]*\)".*/\1/p')
  [[ -n $version ]] || return 0
  if [[ $(printf '%s\n%s\n' "$KOO_TERRAFORM_MIN_VERSION" "$version" | sort -V | head -n 1) == "$KOO_TERRAFORM_MIN_VERSION" ]]; then
    echo "$terraform"
  fi
}

KOO_REQUIREMENTS="$KOO_ROOT/scripts/toolchain/requirements.txt"
KOO_CLOUD_INIT_VERSION="22.4.2-1+deb12u4"
KOO_GCL_VERSION="4.73.0"

# Node.js, one build of each maintained LTS line: the lines package.json's engines names, and the
# laptop journey walks the README on each (scripts/toolchain/node.sh). The pipeline's image is the
# 24 line's build (.gitlab-ci.yml; __tests__/journey-gitlab-ci.test.ts keeps the two equal).
# shellcheck disable=SC2034 # read by node.sh and env.sh, which source this file
KOO_NODE_VERSIONS="22.23.5 24.22.3 26.12.1"
# In KOO_CACHE, unless KUBE_ON_OS_NODE_CACHE names another place (relative: inside the project):
# the pipeline's test job keeps them out of the toolchain cache that every job restores.
KOO_NODE_CACHE="${KUBE_ON_OS_NODE_CACHE:-$KOO_CACHE/node}"
[[ $KOO_NODE_CACHE == /* ]] || KOO_NODE_CACHE="$KOO_ROOT/$KOO_NODE_CACHE"
koo_node_dir() { echo "$KOO_NODE_CACHE/$1"; }
# The real OpenStack kit's venv, pip cache and data snapshot (scripts/openstack/), about 750 MB: in
# KOO_CACHE, unless KUBE_ON_OS_CLOUD_CACHE names another place (relative: inside the project). The
# pipeline's test job keeps them in a cache of their own, which no other job restores.
KOO_CLOUD_CACHE="${KUBE_ON_OS_CLOUD_CACHE:-$KOO_CACHE/openstack}"
[[ $KOO_CLOUD_CACHE == /* ]] || KOO_CLOUD_CACHE="$KOO_ROOT/$KOO_CLOUD_CACHE"

koo_python_tag() {
  python3 -c 'import sys; print(f"py{sys.version_info[0]}.{sys.version_info[1]}")' 2>/dev/null || echo py-missing
}

koo_salt_version() {
  sed -n 's/^salt==//p' "$KOO_REQUIREMENTS"
}

# The hash of requirements.txt makes any change to a pin a new venv; the Salt and Python versions
# are there for people reading the cache.
koo_venv_dir() {
  local hash
  hash=$(sha256sum "$KOO_REQUIREMENTS" | cut -c1-12)
  echo "$KOO_CACHE/python/salt-$(koo_salt_version)-$(koo_python_tag)-$hash"
}

# The validator's wrapper runs on one venv's Python, so each venv gets its own copy (a few MB).
koo_cloud_init_dir() { echo "$KOO_CACHE/cloud-init/$KOO_CLOUD_INIT_VERSION/$(basename "$(koo_venv_dir)")"; }

# The rehearsal's hosts (scripts/toolchain/debian-root.sh): a Debian root with what the cloud-init
# and the states install (no host has internet), and the pinned Salt. Python 3.11 is bookworm's.
KOO_DEBIAN_SUITE="bookworm"
KOO_DEBIAN_PYTHON="py3.11"
KOO_DEBIAN_MIRROR="${KOO_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# debootstrap resolves no virtual packages: python3-cffi-backend is what python3-cryptography
# (cloud-init's) needs, spelled out.
# core.packages (salt/core/defaults.yaml) and the bastion's iptables and fail2ban are among them;
# python3-systemd is what fail2ban's journald backend imports (a Recommends, which debootstrap
# leaves out and apt on a real machine installs); parted and e2fsprogs prepare the Salt volume;
# locales is there on Ubuntu's images, and cloud-init's locale module needs it. Hosts run no
# systemd, so services are sysvinit's (sysvinit-core: init scripts, insserv, runlevel), which
# Salt's debian_service module manages; bastion.iptables installs iptables-persistent.
KOO_DEBIAN_PACKAGES="python3,python3-venv,python3-cffi-backend,cloud-init,openssh-server,sudo,iproute2,iptables,procps,fail2ban,python3-systemd,parted,e2fsprogs,locales,sysvinit-core,iptables-persistent,ca-certificates,curl,vim,htop,jq"
# What debian-root.sh does to the root beyond debootstrap and Salt: raised with every change there.
KOO_DEBIAN_ROOT_REVISION=3
koo_debian_root_dir() {
  local hash
  # The requirements' content only (sha256sum of a path prints the path too): every clone shares it.
  hash=$(printf '%s %s %s' "$KOO_DEBIAN_PACKAGES" "$(sha256sum <"$KOO_REQUIREMENTS" | cut -d' ' -f1)" "$KOO_DEBIAN_ROOT_REVISION" |
    sha256sum | cut -c1-12)
  echo "$KOO_CACHE/debian-root/$KOO_DEBIAN_SUITE-$KOO_DEBIAN_PYTHON-salt-$(koo_salt_version)-$hash"
}
# "-gitlab-patched-2": patched to key caches and run after_script as GitLab does (gitlab-ci-local.sh).
koo_gcl_dir() { echo "$KOO_CACHE/gitlab-ci-local/$KOO_GCL_VERSION-gitlab-patched-2"; }

# OpenSSH's sshd for the provisioning test's hosts, unpacked from the openssh-server package that
# apt offers (keyed by its version: Debian replaces the package with every security update).
koo_openssh_version() {
  apt-cache policy openssh-server 2>/dev/null | sed -n 's/^ *Candidate: //p' | sed 's/^[0-9]*://'
}
koo_sshd_dir() { echo "$KOO_CACHE/openssh-server/$(koo_openssh_version)"; }
# The installed one, for users of the toolchain: a link to the newest version installed.
koo_sshd_current() { echo "$KOO_CACHE/openssh-server/current"; }
