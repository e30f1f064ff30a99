# shellcheck shell=bash
# Sourced by the project's scripts: puts the cached toolchain first on PATH and points tofu at
# the offline provider mirror. It installs nothing; scripts/toolchain.sh does that.
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

KOO_TOFU="$(koo_tofu_dir)/bin/tofu"
KOO_VENV="$(koo_venv_dir)"
KOO_CLOUD_INIT_SCHEMA="$(koo_cloud_init_dir)/bin/cloud-init-schema"
KOO_GITLAB_CI_LOCAL="$(koo_gcl_dir)/node_modules/.bin/gitlab-ci-local"
KOO_SSHD="$(koo_sshd_current)/bin/sshd"
PATH="$(dirname "$KOO_TOFU"):$PATH"
# python3 itself first, where PATH finds a version manager's shim for it: pyenv's runs several bash
# scripts at every start (about 40 ms of CPU, against 6 ms for the interpreter), and the tests
# start python3 thousands of times (stand-ins, fakes, salt_output.py). The same interpreter the
# shim chooses here, without the shim.
koo_python3=$(python3 -c 'import sys; print(sys.executable)' 2>/dev/null) || koo_python3=""
if [[ -n $koo_python3 && $(command -v python3) != "$koo_python3" ]]; then
  PATH="$(dirname "$koo_python3"):$PATH"
fi
unset koo_python3
# Terraform, when the machine has a recent enough one: the tests run it beside tofu.
KOO_TERRAFORM="$(koo_terraform_binary)"
# The rehearsal's Debian root, when this machine could build it (scripts/toolchain/debian-root.sh).
KOO_DEBIAN_ROOT="$(koo_debian_root_dir)"
# Node.js of each maintained LTS line (scripts/toolchain/node.sh), for the journeys: one line each,
# "<version> <its node>". None of them goes on PATH: the tests choose.
KOO_NODES=$(for version in $KOO_NODE_VERSIONS; do echo "$version $(koo_node_dir "$version")/bin/node"; done)
export KOO_TOFU KOO_TERRAFORM KOO_VENV KOO_CLOUD_INIT_SCHEMA KOO_GITLAB_CI_LOCAL KOO_SSHD KOO_DEBIAN_ROOT KOO_NODES PATH
export CHECKPOINT_DISABLE=1

# A CLI configuration the user already has is respected; otherwise (or when the variable names a
# file that does not exist) ours serves every provider from the local mirror.
if [[ -n ${TF_CLI_CONFIG_FILE:-} && -f $TF_CLI_CONFIG_FILE ]]; then
  KOO_USER_CLI_CONFIG=1
else
  KOO_USER_CLI_CONFIG=0
  TF_CLI_CONFIG_FILE="$(koo_tofu_cli_config)"
fi
export TF_CLI_CONFIG_FILE KOO_USER_CLI_CONFIG
