#!/usr/bin/env bash
# The iOS library (clients/ios) is a Swift package whose platform-independent core builds and tests
# on Linux. Debian 12 has no Swift; Debian 13 (trixie) packages Swift 6 as `swiftlang`. This sets
# up a minimal trixie chroot holding that toolchain, once per machine, OUTSIDE the clone:
#   ${RAMPART_SWIFT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/rampart/swift-trixie}
# It is idempotent (a marker file says the chroot is complete; a lock serialises concurrent runs)
# and takes a few minutes and about 2.6 GB the first time. The Debian mirror is the one this
# machine's apt sources already use (or RAMPART_DEBIAN_MIRROR). scripts/swift.sh runs commands in
# the chroot. Needs root (debootstrap, chroot), as CI and the Dockerfile run.
set -euo pipefail

ROOT="${RAMPART_SWIFT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/rampart/swift-trixie}"
MARKER="$ROOT/.rampart-swift-ready"
STAMP="trixie swiftlang libc6-dev v1"

if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$STAMP" ]; then exit 0; fi

if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-swift: setting up the Swift chroot needs root (debootstrap, chroot)" >&2
  exit 1
fi

mkdir -p "$(dirname "$ROOT")"
exec 9>"$ROOT.lock"
flock 9
if [ -f "$MARKER" ] && [ "$(cat "$MARKER")" = "$STAMP" ]; then exit 0; fi

# The mirror: the URI of the machine's apt source that serves its own release (its codename as a
# suite), in either the one-line or the deb822 format.
mirror() {
  if [ -n "${RAMPART_DEBIAN_MIRROR:-}" ]; then echo "$RAMPART_DEBIAN_MIRROR"; return; fi
  local codename
  codename="$(. /etc/os-release && echo "${VERSION_CODENAME:-}")"
  shopt -s nullglob
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    awk -v c="$codename" '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
      if ($(i + 1) == c) { print $i; exit } }' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    awk -v c="$codename" 'BEGIN { RS = ""; FS = "\n" }
      { uri = ""; ok = 0
        for (j = 1; j <= NF; j++) {
          if ($j ~ /^URIs:/) { split(substr($j, 6), u, " "); for (k in u) if (u[k] != "") { uri = u[k]; break } }
          if ($j ~ /^Suites:/) { n = split(substr($j, 8), s, " "); for (k = 1; k <= n; k++) if (s[k] == c) ok = 1 }
        }
        if (ok && uri != "") { print uri; exit } }' "$f"
  done
}
MIRROR="$(mirror | head -n 1)"
if [ -z "$MIRROR" ]; then
  echo "ensure-swift: no Debian mirror found in /etc/apt/sources.list*; set RAMPART_DEBIAN_MIRROR" >&2
  exit 1
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  echo "ensure-swift: installing Debian's debootstrap"
  apt-get install -y -qq debootstrap >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq debootstrap; }
fi

BUILD="$ROOT.partial"
rm -rf "$BUILD"
echo "ensure-swift: debootstrap trixie into $BUILD (a few minutes)"
debootstrap --variant=minbase trixie "$BUILD" "$MIRROR" >"$ROOT.debootstrap.log" 2>&1 || {
  tail -n 30 "$ROOT.debootstrap.log" >&2
  exit 1
}
cp /etc/resolv.conf "$BUILD/etc/resolv.conf" 2>/dev/null || true
echo "ensure-swift: installing swiftlang in the chroot"
# A private mount namespace: /proc and /dev are mounted for apt and swift (its libraries are found
# through /proc/self/exe) and vanish when it ends.
unshare --mount --propagation private -- bash -c '
  set -euo pipefail
  mount -t proc proc "$1/proc"
  mount --rbind /dev "$1/dev"
  chroot "$1" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
    bash -c "apt-get update -qq && apt-get install -y -qq --no-install-recommends swiftlang libc6-dev >/dev/null && apt-get clean"
  chroot "$1" /usr/bin/env -i PATH=/usr/bin:/bin /usr/bin/swift --version
' _ "$BUILD"
rm -rf "$ROOT"
mv "$BUILD" "$ROOT"
echo "$STAMP" >"$MARKER"
echo "ensure-swift: ready at $ROOT"
