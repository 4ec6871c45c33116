#!/usr/bin/env bash
# Debian 13's gh (2.46) unpacked into a private directory, beside Debian 12's gh 2.23 on PATH, for
# the gh compatibility tests (test/github-gh.test.ts) where the two behave differently. Nothing is
# installed: apt reads Debian 13's package list into the directory, downloads the one package
# (checked against the signed list) and dpkg-deb unpacks it there.
#
#   bash scripts/gh-debian13.sh [DIR]    # default ~/.cache/fleetbench/gh-debian13; prints the binary
#
# The tests look for DIR/usr/bin/gh (FLEETBENCH_GH_DEBIAN13 names another binary). Debian 13's gh
# needs only libc, so it runs on Debian 12.
set -euo pipefail
dir="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/fleetbench/gh-debian13}"
bin="$dir/usr/bin/gh"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
  echo "$bin"
  exit 0
fi
apt="$dir/.apt"
mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" "$dir"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  >"$apt/sources.list"
opts=(
  -o "Dir::Etc::SourceList=$apt/sources.list"
  -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt/lists"
  -o "Dir::Cache=$apt/cache"
  -o "APT::Sandbox::User=root"
)
apt-get "${opts[@]}" update -qq
(cd "$apt" && apt-get "${opts[@]}" download -qq gh)
dpkg-deb -x "$apt"/gh_*.deb "$dir"
rm -rf "$apt"
"$bin" --version >/dev/null
echo "$bin"
