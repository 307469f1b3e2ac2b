#!/usr/bin/env bash
# Fetches nanopb's runtime sources (pb_*.c, pb*.h) from Debian into DIR with `apt-get source`,
# for the firmware build: Debian's libnanopb-dev ships a host library only, and nanopb must
# never be copied into this repository. The version is the one of the installed generator
# (package nanopb), so generated code and runtime match.
#
#   fetch_nanopb.sh DIR [URI]     URI: a Debian mirror (default http://deb.debian.org/debian)
#
# The machine's apt configuration is left alone: the deb-src list, the package lists and the
# cache are kept under DIR/apt and handed to apt-get with -o Dir::...; apt-get update and
# apt-get source need no root for that. Writes DIR/src/pb_decode.c etc. and DIR/VERSION.
set -euo pipefail

dir=${1:?usage: fetch_nanopb.sh DIR [URI]}
uri=${2:-http://deb.debian.org/debian}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
version=$(dpkg-query -W -f='${Version}' nanopb 2>/dev/null) ||
  { echo "fetch_nanopb.sh: the Debian package nanopb is not installed" >&2; exit 1; }
if [[ -f $dir/VERSION && $(<"$dir/VERSION") == "$version" && -f $dir/src/pb_decode.c ]]; then
  exit 0
fi
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:?}")

apt=$dir/apt
rm -rf "$apt" "$dir/src"
mkdir -p "$apt/sources.list.d" "$apt/lists/partial" "$apt/cache/archives/partial" "$apt/unpack"
cat >"$apt/sources.list.d/nanopb-src.sources" <<SOURCES
Types: deb-src
URIs: $uri
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
opts=(-q -o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$apt/sources.list.d"
  -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache" -o "Dir::Cache::pkgcache="
  -o "Dir::Cache::srcpkgcache=" -o "Debug::NoLocking=1")
((EUID != 0)) || opts+=(-o "APT::Sandbox::User=root") # the private dirs are root's
apt-get "${opts[@]}" update >"$apt/update.log" 2>&1 ||
  { cat "$apt/update.log" >&2; exit 1; }
(cd "$apt/unpack" && apt-get "${opts[@]}" source "nanopb=$version") >"$apt/source.log" 2>&1 ||
  { cat "$apt/source.log" >&2; exit 1; }
upstream=${version#*:}
upstream=${upstream%-*}
mkdir -p "$dir/src"
cp "$apt/unpack/nanopb-$upstream"/pb*.[ch] "$apt/unpack/nanopb-$upstream/LICENSE.txt" "$dir/src/"
# The package lists are large and needed only for this fetch.
rm -rf "$apt/lists" "$apt/cache" "$apt/unpack"
printf '%s\n' "$version" >"$dir/VERSION"
