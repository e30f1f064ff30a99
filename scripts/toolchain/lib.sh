# shellcheck shell=bash
# Shared helpers for the toolchain installers. Sourced, never executed.
#
# Every tool is installed under "$KOO_CACHE/<tool>/<version>/" and marked complete by a
# ".complete" file written last, so an interrupted install is redone and a finished one is
# skipped in milliseconds. The cache lives outside the work tree by default so that every clone
# (and CI's fresh clone) shares it; set KUBE_ON_OS_CACHE to move it.
#
# It sets no shell options: executables set their own, and env.sh stays safe to source in an
# interactive shell.

KOO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
KOO_CACHE="${KUBE_ON_OS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kube-on-os}"
# A relative KUBE_ON_OS_CACHE is inside the project (the pipeline's: GitLab caches only paths there).
[[ $KOO_CACHE == /* ]] || KOO_CACHE="$KOO_ROOT/$KOO_CACHE"
export KOO_ROOT KOO_CACHE

# die MESSAGE: one clear line on stderr, then exit 1. Never a stack trace.
die() {
  printf 'kube-on-os toolchain: %s\n' "$*" >&2
  exit 1
}

log() {
  printf '==> %s\n' "$*" >&2
}

# need COMMAND HINT: stop with one line naming what to install when COMMAND is missing.
need() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed; $2"
}

# is_complete DIR: true when DIR holds a finished install.
is_complete() {
  [[ -f "$1/.complete" ]]
}

mark_complete() {
  date -u +%Y-%m-%dT%H:%M:%SZ >"$1/.complete"
}

# fresh_dir DIR: an empty DIR for a (re)install; a half-finished earlier attempt is discarded.
fresh_dir() {
  rm -rf "$1"
  mkdir -p "$1"
}

go_arch() {
  case "$(uname -m)" in
    x86_64) echo amd64 ;;
    aarch64 | arm64) echo arm64 ;;
    *) die "unsupported CPU architecture '$(uname -m)'; use x86_64 or arm64" ;;
  esac
}

# run_apt ARGS...: apt-get as root, or through sudo when available.
run_apt() {
  if [[ $(id -u) -eq 0 ]]; then
    apt-get "$@"
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get "$@"
  else
    die "apt-get needs root; run 'sudo apt-get $*' once, then retry"
  fi
}

# ensure_command COMMAND PACKAGE: installs Debian's PACKAGE when COMMAND is missing, refreshing the
# package lists only if the first attempt fails.
ensure_command() {
  local command=$1 package=$2
  command -v "$command" >/dev/null 2>&1 && return 0
  need apt-get "install $package with your package manager"
  log "$package: installing Debian's package"
  run_apt install -y -qq "$package" >/dev/null 2>&1 ||
    { run_apt update -qq >/dev/null 2>&1 && run_apt install -y -qq "$package" >/dev/null; } ||
    die "could not install $package with apt-get; install it by hand"
}
