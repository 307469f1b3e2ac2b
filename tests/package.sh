#!/usr/bin/env bash
# package.deb: CPack's .deb of this build (what cmake --install installs, under /usr): its
# contents (dpkg-deb -c), its control fields (dpkg-deb -I), lintian from Debian with no error,
# then installed into a throwaway dpkg root (dpkg --root) and removed again. About 5 s.
# Exit 77 (skipped) where a tool is missing or dpkg cannot install into a root of its own here.
# Usage: tests/package.sh BUILD_DIR VERSION UNIT_TYPE
set -euo pipefail
build=$1
version=$2
unit_type=$3
for tool in cpack dpkg-deb lintian dpkg; do
  command -v "$tool" >/dev/null || {
    echo "package: $tool is not installed (scripts/lib.sh installs it): skipped" >&2
    exit 77
  }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/wl-package.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail=0
problem() {
  echo "package: $*" >&2
  fail=1
}

# cmake --install to a prefix of its own: the unit names that prefix's walklistd.
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" 2>&1 ||
  { cat "$work/install.log" >&2; echo "package: cmake --install failed" >&2; exit 1; }
grep -qxF "ExecStart=$work/prefix/bin/walklistd" "$work/prefix/lib/systemd/system/walklistd.service" ||
  problem "cmake --install --prefix: the unit does not start $work/prefix/bin/walklistd"
[[ -x $work/prefix/bin/walklistctl && -f $work/prefix/share/doc/walklist/examples/walklistd.env ]] ||
  problem "cmake --install --prefix: walklistctl or the example environment file is missing"

cpack --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&2; echo "package: cpack failed" >&2; exit 1; }
deb=$work/out/walklist_${version}_$(dpkg --print-architecture).deb
[[ -f $deb ]] || { ls -R "$work/out" >&2; echo "package: no $deb" >&2; exit 1; }

contents=$(dpkg-deb -c "$deb" | awk '{print $6}')
for path in ./usr/bin/walklistd ./usr/bin/walklistctl ./usr/bin/walklist-scanner \
  ./usr/lib/systemd/system/walklistd.service ./usr/share/doc/walklist/copyright \
  ./usr/share/doc/walklist/changelog.gz ./usr/share/doc/walklist/examples/walklistd.env \
  ./usr/share/doc/walklist/README.md ./usr/share/doc/walklist/docs/api.md \
  ./usr/share/doc/walklist/docs/operations.md \
  ./usr/share/man/man8/walklistd.8.gz ./usr/share/man/man1/walklistctl.1.gz \
  ./usr/share/man/man1/walklist-scanner.1.gz; do
  grep -qxF -- "$path" <<<"$contents" || problem "the package lacks $path"
done
# Only what is listed above and its folders: no test programs, no static libraries.
if extra=$(grep -vE '/$|^\./usr/(bin/walkl|lib/systemd/system/walklistd\.service|share/(doc/walklist/|man/man[18]/walkl))' <<<"$contents"); then
  problem "unexpected files in the package: $extra"
fi

info=$(dpkg-deb -I "$deb")
grep -qE "^ Package: walklist$" <<<"$info" || problem "control: Package is not walklist"
grep -qE "^ Version: ${version//./\\.}$" <<<"$info" || problem "control: Version is not $version"
grep -qE "^ Depends: .*libpq5" <<<"$info" || problem "control: Depends lacks libpq5 (dpkg-shlibdeps)"

if ! lintian_out=$(lintian --fail-on error --tag-display-limit 0 "$deb" 2>&1); then
  problem "lintian reports errors:"
  echo "$lintian_out" >&2
fi

# A throwaway dpkg database; dependencies are not there, so they are not enforced.
root=$work/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
force=(--force-depends --force-script-chrootless)
((EUID == 0)) || force+=(--force-not-root)
if ! dpkg --root="$root" "${force[@]}" -i "$deb" >"$work/dpkg.log" 2>&1; then
  cat "$work/dpkg.log" >&2
  ((fail == 0)) || exit 1
  echo "package: dpkg cannot install into a root of its own here: install test skipped" >&2
  exit 77
fi
"$root/usr/bin/walklistd" --version | grep -qxF "walklistd $version ($(
  "$build/bin/walklistd" --version | sed 's/.*(//'
)" || problem "the installed walklistd does not say version $version"
unit=$root/usr/lib/systemd/system/walklistd.service
grep -qxF "ExecStart=/usr/bin/walklistd" "$unit" || problem "the unit's ExecStart is not /usr/bin/walklistd"
grep -qxF "Type=$unit_type" "$unit" || problem "the unit is not Type=$unit_type"
for hardening in DynamicUser=yes ProtectSystem=strict NoNewPrivileges=yes PrivateTmp=yes; do
  grep -qxF "$hardening" "$unit" || problem "the unit lacks $hardening"
done
if command -v systemd-analyze >/dev/null; then
  # systemd's own parser on the unit, with ExecStart at the binary just installed; any
  # "Unknown key" or "Failed to parse" is a mistake in the unit.
  sed "s#^ExecStart=/usr/bin/#ExecStart=$root/usr/bin/#" "$unit" >"$work/walklistd.service"
  verify=$(systemd-analyze verify --man=no "$work/walklistd.service" 2>&1 || true)
  [[ -z $verify ]] || problem "systemd-analyze verify: $verify"
fi
dpkg --root="$root" "${force[@]}" -r walklist >>"$work/dpkg.log" 2>&1 || problem "dpkg -r failed"
[[ ! -e $root/usr/bin/walklistd && ! -e $unit ]] || problem "dpkg -r left files behind"
exit "$fail"
