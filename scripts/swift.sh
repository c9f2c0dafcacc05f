#!/usr/bin/env bash
# Runs a command in the Swift chroot that scripts/ensure-swift.sh sets up, with the repository's
# clients/ bind-mounted at a fixed path (/rampart/clients: a .build made under another path fails
# on its precompiled module cache; the shared test vectors sit beside the package) and
# /rampart/clients/ios as the working directory. The mounts live in a private mount
# namespace and vanish with the command. The chroot shares the host's network, so a Rampart
# listening on the host's loopback is reachable from the tests.
#
#   scripts/swift.sh swift build
#   scripts/swift.sh swift test --disable-swift-testing
#
# Variables named RAMPART_* are passed into the chroot; nothing else of the environment is.
set -euo pipefail
ROOT="${RAMPART_SWIFT_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/rampart/swift-trixie}"
CLIENTS="$(cd "$(dirname "$0")/../clients" && pwd)"
if [ ! -f "$ROOT/.rampart-swift-ready" ]; then
  echo "swift.sh: no Swift chroot at $ROOT; run scripts/ensure-swift.sh first" >&2
  exit 1
fi
if [ "$#" -eq 0 ]; then set -- swift --version; fi

ENVS=(PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb)
while IFS= read -r line; do ENVS+=("$line"); done < <(env | grep -E '^RAMPART_[A-Z0-9_]*=' | grep -v '^RAMPART_SWIFT_ROOT=' || true)

exec unshare --mount --propagation private -- bash -c '
  set -euo pipefail
  root="$1"; clients="$2"; shift 2
  mkdir -p "$root/rampart/clients"
  mount --bind "$clients" "$root/rampart/clients"
  mount -t proc proc "$root/proc"
  mount --rbind /dev "$root/dev"
  mount -t tmpfs tmpfs "$root/tmp"
  exec chroot "$root" /usr/bin/env -i "$@"
' _ "$ROOT" "$CLIENTS" "${ENVS[@]}" bash -c 'cd /rampart/clients/ios && exec "$@"' _ "$@"
