#!/usr/bin/env bash
# Runs a command in the Swift chroot that scripts/ensure-swift.sh sets up, with clients/ios
# bind-mounted at a fixed path (/rampart/ios: a .build made under another path fails on its
# precompiled module cache) and as the working directory. The mounts live in a private mount
# namespace and vanish with the command. The chroot shares the host's network, so a Rampart
# listening on the host's loopback is reachable from the tests.
#
#   scripts/swift.sh swift build
#   scripts/swift.sh swift test --disable-swift-testing
#
# Variables named RAMPART_* are passed into the chroot; nothing else of the environment is.
set -euo pipefail
ROOT="${RAMPART_SWIFT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/rampart/swift-trixie}"
PACKAGE="$(cd "$(dirname "$0")/../clients/ios" && pwd)"
if [ ! -f "$ROOT/.rampart-swift-ready" ]; then
  echo "swift.sh: no Swift chroot at $ROOT; run scripts/ensure-swift.sh first" >&2
  exit 1
fi
if [ "$#" -eq 0 ]; then set -- swift --version; fi

ENVS=(PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb)
while IFS= read -r line; do ENVS+=("$line"); done < <(env | grep -E '^RAMPART_[A-Z0-9_]*=' | grep -v '^RAMPART_SWIFT_ROOT=' || true)

exec unshare --mount --propagation private -- bash -c '
  set -euo pipefail
  root="$1"; package="$2"; shift 2
  mkdir -p "$root/rampart/ios"
  mount --bind "$package" "$root/rampart/ios"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs tmpfs "$root/tmp"
  exec chroot "$root" /usr/bin/env -i "$@"
' _ "$ROOT" "$PACKAGE" "${ENVS[@]}" bash -c 'cd /rampart/ios && exec "$@"' _ "$@"
