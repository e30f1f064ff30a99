#!/usr/bin/env bash
# Previews a change on the Salt master, as root: what the Salt tree and pillar that Terraform
# staged in STAGING_DIR (salt/, pillar/, _from_terraform.sls, and _cloud.sls when there is one, as
# for install-salt-tree.sh) would change on each minion ID, with Salt's test mode. Nothing changes
# on any host: the candidate goes to the master's koo-preview environment (master.conf), apart
# from the live tree and pillar, runs as `state.top koo-preview-top.sls saltenv=koo-preview
# pillarenv=koo-preview test=True`, and is removed afterwards with STAGING_DIR, whatever happened
# (docs/decisions.md, "A preview has a Salt environment of its own"). So is what each minion kept
# of it: the candidate's files it fetched and its compiled states (cache_name=koo-preview).
#
# Prints each minion's verdict (salt_output.py preview) and writes it as JSON to REPORT. Secrets
# of the cloud pillar are written "<secret>". Exits 1 when a minion did not answer or the
# candidate failed on it, 2 on a usage error.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="preview.sh [--timeout SECONDS] STAGING_DIR REPORT MINION_ID..."

timeout=600
if [[ ${1:-} == --timeout ]]; then
  [[ $# -ge 2 ]] || koo_usage_error "--timeout needs a number of seconds"
  koo_require_seconds --timeout "$2"
  timeout=$2
  shift 2
fi
[[ $# -ge 3 ]] || koo_usage_error "expected STAGING_DIR, REPORT and at least one minion id, got $# arguments"
staging=${1%/} report=$2
shift 2
for id in "$@"; do koo_require_dns_name MINION_ID "$id"; done
preview_root=${KOO_PREVIEW_ROOT:-/srv/koo-preview}
host=$(koo_host)

# Every check comes before the first change.
[[ -n $staging && -d $staging ]] || koo_die 1 "preview on $host: staging directory $staging does not exist"
for input in "$staging/salt/top.sls" "$staging/pillar/top.sls" "$staging/_from_terraform.sls"; do
  [[ -f $input ]] || koo_die 1 "preview on $host: $input is missing"
done
odd=$(find "$staging" ! -type f ! -type d -print -quit)
[[ -z $odd ]] || koo_die 1 "preview on $host: $odd is neither a file nor a directory"
for top in salt pillar; do
  grep -q '^base:' "$staging/$top/top.sls" ||
    koo_die 1 "preview on $host: $staging/$top/top.sls has no base: environment to preview"
done
[[ -d $(dirname "$preview_root") ]] || koo_die 1 "preview on $host: $(dirname "$preview_root") does not exist"

# One preview at a time; a crashed one's directory is removed by the next.
exec 9>"$preview_root.lock"
flock -n 9 || koo_die 1 "preview on $host: another preview is running ($preview_root.lock)"
work=""
minions=("$@")
master_cache=${KOO_SALT_MASTER_CACHE:-/var/cache/salt/master}
cleanup() {
  rm -rf -- "$preview_root" "$staging"
  [[ -z $work ]] || rm -rf -- "$work"
  # What the master kept of the candidate: its file list, its files' hashes, their modification
  # times in the map of every root's files (written again from the live roots alone).
  salt-run --out=quiet fileserver.clear_file_list_cache saltenv=koo-preview >/dev/null 2>&1 || true
  rm -rf -- "$master_cache/roots/hash/koo-preview"
  salt-run --out=quiet fileserver.update backend=roots >/dev/null 2>&1 || true
  # What each minion kept of it: the files it fetched, its compiled states. And the master's record
  # of each minion's pillar (minion_data_cache), the candidate's since the preview compiled it:
  # compiled again from the live pillar. A minion that did not answer keeps them until its next run.
  salt --out=quiet --timeout=60 --list "$(koo_join , "${minions[@]}")" cmd.run template=jinja \
    'rm -rf -- {{ opts.cachedir }}/files/koo-preview {{ opts.cachedir }}/koo-preview.cache.p' >/dev/null 2>&1 || true
  salt --out=quiet --timeout=60 --list "$(koo_join , "${minions[@]}")" saltutil.refresh_pillar wait=True >/dev/null 2>&1 || true
}
trap cleanup EXIT
rm -rf -- "$preview_root"
work=$(mktemp -d)

# The candidate, readable by root alone (the pillar holds the cloud credential). Its top files
# name koo-preview, where the live ones name base; the tree's is renamed, so that a live
# highstate, which merges every environment's top.sls, never takes it.
install -d -m 0700 "$preview_root"
cp -R -- "$staging/salt" "$preview_root/salt"
sed 's/^base:/koo-preview:/' "$staging/salt/top.sls" >"$preview_root/salt/koo-preview-top.sls"
rm -f -- "$preview_root/salt/top.sls"
cp -R -- "$staging/pillar" "$preview_root/pillar"
sed -i 's/^base:/koo-preview:/' "$preview_root/pillar/top.sls"
cp -- "$staging/_from_terraform.sls" "$preview_root/pillar/_from_terraform.sls"
cloud=-
if [[ -f $staging/_cloud.sls ]]; then
  cp -- "$staging/_cloud.sls" "$preview_root/pillar/_cloud.sls"
elif [[ -f $KOO_PILLAR_ROOT/_cloud.sls ]]; then
  cp -- "$KOO_PILLAR_ROOT/_cloud.sls" "$preview_root/pillar/_cloud.sls"
fi
[[ ! -f $preview_root/pillar/_cloud.sls ]] || cloud=$preview_root/pillar/_cloud.sls
# The master's maintenance updates its map of the roots' files every minute; a preview updates it
# at once, so that what it leaves in the map is always undone, not only when the minute fell in it.
salt-run --out=quiet fileserver.clear_file_list_cache saltenv=koo-preview ||
  koo_die 1 "preview on $host: salt-run fileserver.clear_file_list_cache failed"
salt-run --out=quiet fileserver.update backend=roots ||
  koo_die 1 "preview on $host: salt-run fileserver.update failed"

koo_salt "$work/preview" "$timeout" --list "$(koo_join , "$@")" \
  state.top koo-preview-top.sls saltenv=koo-preview pillarenv=koo-preview cache_name=koo-preview test=True
grep -q '{' "$work/preview.json" || koo_die 1 "preview on $host: salt printed no returns$(koo_salt_said "$work/preview")"
"${KOO_SALT_OUTPUT[@]}" preview "$cloud" "$report" "$@" <"$work/preview.json"
