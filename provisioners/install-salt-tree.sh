#!/usr/bin/env bash
# Installs the Salt tree and the pillar that Terraform uploaded to STAGING_DIR (salt/, pillar/,
# _from_terraform.sls, and _cloud.sls when there is one) on the Salt master, as root, then removes
# STAGING_DIR. _cloud.sls holds the cloud credential: it is installed readable by root alone.
#
# The salt root (/srv/salt) is the mount point of the master's persistent volume: the directory
# itself stays, with its lost+found, and only its contents are replaced. The pillar root
# (/srv/pillar) is built next to itself and swapped in with two renames. Then the master forgets
# the file list it cached, so that the next sync sees the new files.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KOO_USAGE="install-salt-tree.sh STAGING_DIR"

[[ $# -eq 1 ]] || koo_usage_error "expected one argument, got $#"
staging=${1%/}
salt_root=$KOO_SALT_ROOT
pillar_root=${KOO_PILLAR_ROOT%/}
# Tests run as an ordinary user; on the master everything belongs to root.
owner=${KOO_TREE_OWNER:-root:root}
host=$(koo_host)

# Every check comes before the first change.
[[ -n $staging && -d $staging ]] || koo_die 1 "install-salt-tree on $host: staging directory $staging does not exist"
for input in "$staging/salt" "$staging/pillar"; do
  [[ -d $input ]] || koo_die 1 "install-salt-tree on $host: $input is missing (expected a directory)"
done
[[ -f $staging/_from_terraform.sls ]] ||
  koo_die 1 "install-salt-tree on $host: $staging/_from_terraform.sls is missing"
[[ -d $salt_root ]] || koo_die 1 "install-salt-tree on $host: salt root $salt_root does not exist (is the Salt volume mounted?)"
[[ -d $(dirname "$pillar_root") ]] ||
  koo_die 1 "install-salt-tree on $host: $(dirname "$pillar_root"), the parent of the pillar root, does not exist"
[[ ! -e $pillar_root || -d $pillar_root ]] ||
  koo_die 1 "install-salt-tree on $host: pillar root $pillar_root exists and is not a directory"
# STAGING_DIR is removed at the end, so it must not contain either root, nor lie inside one.
staging_real=$(realpath "$staging")
for root in "$salt_root" "$pillar_root"; do
  root_real=$(realpath -m "$root")
  if [[ $staging_real == / || "$root_real/" == "$staging_real"/* || "$staging_real/" == "$root_real"/* ]]; then
    koo_die 1 "install-salt-tree on $host: staging directory $staging overlaps $root"
  fi
done
# Salt serves whatever a link points to; the trees hold plain files and directories only.
cloud_pillar=()
[[ ! -e $staging/_cloud.sls ]] || cloud_pillar=("$staging/_cloud.sls")
odd=$(find "$staging/salt" "$staging/pillar" "$staging/_from_terraform.sls" "${cloud_pillar[@]}" ! -type f ! -type d -print -quit)
[[ -z $odd ]] || koo_die 1 "install-salt-tree on $host: $odd is neither a file nor a directory"
[[ ! -e $staging/salt/lost+found ]] ||
  koo_die 1 "install-salt-tree on $host: $staging/salt/lost+found would replace the volume's own lost+found"
if [[ $owner == root:root && $EUID -ne 0 ]]; then
  koo_die 1 "install-salt-tree on $host: must run as root (sudo), running as $(id -un)"
fi

incoming="" outgoing="" pillar_new="" pillar_old=""
cleanup() {
  # An interrupted swap keeps the previous salt tree in $outgoing, so it is never deleted here.
  [[ -z $incoming ]] || rm -rf -- "$incoming"
  [[ -z $pillar_new ]] || rm -rf -- "$pillar_new"
  if [[ -n $pillar_old && -e $pillar_old && ! -e $pillar_root ]]; then
    mv -T -- "$pillar_old" "$pillar_root"
  fi
  if [[ -n $outgoing && -d $outgoing ]]; then
    koo_error "install-salt-tree on $host: interrupted; the previous salt tree is kept in $outgoing"
  fi
}
trap cleanup EXIT

# normalize DIR DIR_MODE FILE_MODE
normalize() {
  chown -R "$owner" "$1"
  find "$1" -type d -exec chmod "$2" {} +
  find "$1" -type f -exec chmod "$3" {} +
}

# tree_digest DIR: file count and a short sha256 over every file's path and content, the same for
# a tree anywhere: `find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum`.
tree_digest() {
  local count digest
  count=$(cd "$1" && find . -path ./lost+found -prune -o -type f -print | wc -l)
  digest=$(cd "$1" && find . -path ./lost+found -prune -o -type f -print0 | LC_ALL=C sort -z |
    xargs -0 -r sha256sum | sha256sum | cut -c1-12)
  echo "$((count)) files, sha256 $digest"
}

# The salt tree: copied onto the volume first (same file system, so the swap is renames only).
incoming=$(mktemp -d "$salt_root/.koo-incoming.XXXXXX")
cp -R -- "$staging/salt/." "$incoming/"
normalize "$incoming" 0755 0644
outgoing=$(mktemp -d "$salt_root/.koo-outgoing.XXXXXX")
find "$salt_root" -mindepth 1 -maxdepth 1 ! -name lost+found ! -path "$incoming" ! -path "$outgoing" \
  -exec mv -t "$outgoing" -- {} +
find "$incoming" -mindepth 1 -maxdepth 1 -exec mv -t "$salt_root" -- {} +
rm -rf -- "$outgoing" "$incoming"
outgoing="" incoming=""
chown "$owner" "$salt_root"
chmod 0755 "$salt_root"

# The pillar: built beside the pillar root, then renamed into place.
pillar_parent=$(dirname "$pillar_root")
pillar_name=$(basename "$pillar_root")
pillar_new=$(mktemp -d "$pillar_parent/.$pillar_name.new.XXXXXX")
cp -R -- "$staging/pillar/." "$pillar_new/"
cp -- "$staging/_from_terraform.sls" "$pillar_new/_from_terraform.sls"
[[ ${#cloud_pillar[@]} -eq 0 ]] || cp -- "$staging/_cloud.sls" "$pillar_new/_cloud.sls"
normalize "$pillar_new" 0750 0640
[[ ${#cloud_pillar[@]} -eq 0 ]] || chmod 0600 "$pillar_new/_cloud.sls"
if [[ -e $pillar_root ]]; then
  pillar_old=$(mktemp -u "$pillar_parent/.$pillar_name.old.XXXXXX")
  mv -T -- "$pillar_root" "$pillar_old"
fi
mv -T -- "$pillar_new" "$pillar_root"
pillar_new=""
[[ -z $pillar_old ]] || rm -rf -- "$pillar_old"
pillar_old=""

# The master keeps the file list it serves for 20 s (fileserver_list_cache_time): a sync_all
# within 20 s of an earlier listing would fetch the changed modules and miss the new ones.
salt-run --out=quiet fileserver.clear_file_list_cache ||
  koo_die 1 "install-salt-tree on $host: salt-run fileserver.clear_file_list_cache failed; the new Salt tree is in place, but the master may serve its old file list for 20 s"

rm -rf -- "$staging"
echo "installed Salt tree on $host: $salt_root $(tree_digest "$salt_root"); $pillar_root $(tree_digest "$pillar_root")"
