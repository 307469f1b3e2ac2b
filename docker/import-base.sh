#!/usr/bin/env bash
# Makes the image walklist-base:bookworm from debootstrap, for machines whose Docker engine
# cannot pull from a registry; then build with
#   docker build -f docker/Dockerfile -t walklist --build-arg BASE=walklist-base:bookworm .
# Needs root, debootstrap and a Debian mirror (MIRROR, default deb.debian.org).
set -euo pipefail
mirror=${MIRROR:-http://deb.debian.org/debian}
root=$(mktemp -d "${TMPDIR:-/tmp}/walklist-base.XXXXXX")
trap 'rm -rf "$root"' EXIT
debootstrap --variant=minbase bookworm "$root" "$mirror"
# apt in the image reads the same mirror; no caches in the layer.
{
  echo "deb $mirror bookworm main"
  echo "deb $mirror bookworm-updates main"
  echo "deb ${SECURITY_MIRROR:-http://deb.debian.org/debian-security} bookworm-security main"
} >"$root/etc/apt/sources.list"
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
tar -C "$root" -c . | docker import - walklist-base:bookworm
echo "walklist-base:bookworm imported; now: docker build -f docker/Dockerfile -t walklist --build-arg BASE=walklist-base:bookworm ."
