#!/usr/bin/env bash
# Waits, as the deploy user, until cloud-init has finished on this machine, for at most
# TIMEOUT_SECONDS. Recoverable errors (exit 2, "degraded" in cloud-init 23.4+) are a warning:
# the machine is up and Salt takes over from here. An error or the timeout prints
# `cloud-init status --long` and fails.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="wait-cloud-init.sh TIMEOUT_SECONDS"

[[ $# -eq 1 ]] || koo_usage_error "expected one argument, got $#"
timeout_seconds=$1
koo_is_positive_int "$timeout_seconds" ||
  koo_usage_error "TIMEOUT_SECONDS must be a positive whole number, got \"$timeout_seconds\""

host=$(koo_host)
command -v cloud-init >/dev/null || koo_die 1 "cloud-init: not installed on $host"

show_status() {
  cloud-init status --long >&2 || true
}

status=0
# --wait prints a dot every few seconds without a newline; only the outcome matters here.
timeout --kill-after=10 "$timeout_seconds" cloud-init status --wait >/dev/null 2>&1 || status=$?
case $status in
  0)
    echo "cloud-init: finished on $host"
    ;;
  2)
    echo "cloud-init: finished with recoverable errors on $host (warning; see 'cloud-init status --long')"
    ;;
  124 | 137)
    show_status
    koo_die 1 "cloud-init: not finished on $host after $timeout_seconds s"
    ;;
  1)
    show_status
    koo_die 1 "cloud-init: failed on $host (cloud-init status exit 1)"
    ;;
  *)
    show_status
    koo_die 1 "cloud-init: 'cloud-init status --wait' exited $status on $host"
    ;;
esac
