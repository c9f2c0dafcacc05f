#!/usr/bin/env bash
# Installs the maintained address lists Rampart's intel reads (src/intel/ranges.ts) into
# .tools/ip-lists, from the packages that publish them on PyPI (no list is written by hand):
#   iporigin 1.1.2 (MIT; data from CC0 aggregations, rebuilt weekly upstream):
#     ranges.bin: Tor exits, VPN egress (ProtonVPN, Mullvad, iCloud Private Relay), hosting and
#     cloud ranges (AWS, Azure, GCP, OVH, Hetzner, DigitalOcean, Vultr, Linode, ...), IPv4 and IPv6;
#   pymispwarninglists 1.7.0 (BSD-3-Clause; MISP warning lists, from X4BNet lists_vpn):
#     vpn-ipv4.json, vpn-ipv6.json: ranges of VPN providers and data centres (anonymisers).
# Idempotent: nothing is downloaded when the stamp says these versions are installed.
# Environment: PYTHON (default python3), IP_LISTS_DIR (default <repo>/.tools/ip-lists).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
DEST="${IP_LISTS_DIR:-$ROOT/.tools/ip-lists}"
IPORIGIN="1.1.2"
MISP="1.7.0"
WANT="iporigin==$IPORIGIN pymispwarninglists==$MISP"

if [ -f "$DEST/stamp" ] && [ "$(cat "$DEST/stamp")" = "$WANT" ] && [ -f "$DEST/ranges.bin" ] && [ -f "$DEST/vpn-ipv4.json" ] && [ -f "$DEST/vpn-ipv6.json" ]; then
  exit 0
fi
command -v "$PYTHON" >/dev/null || { echo "install-ip-lists: $PYTHON is required to fetch the address lists" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: --dest "$work" "iporigin==$IPORIGIN" "pymispwarninglists==$MISP" \
  || { echo "install-ip-lists: could not download the address lists from PyPI" >&2; exit 1; }
for wheel in "$work"/*.whl; do "$PYTHON" -m zipfile -e "$wheel" "$work/x"; done
src_bin="$work/x/iporigin/data/ranges.bin"
src_v4="$work/x/pymispwarninglists/data/misp-warninglists/lists/vpn-ipv4/list.json"
src_v6="$work/x/pymispwarninglists/data/misp-warninglists/lists/vpn-ipv6/list.json"
for f in "$src_bin" "$src_v4" "$src_v6"; do
  [ -f "$f" ] || { echo "install-ip-lists: $(basename "$f") is not where the package used to keep it" >&2; exit 1; }
done
mkdir -p "$DEST"
cp "$src_bin" "$DEST/ranges.bin.new" && mv -f "$DEST/ranges.bin.new" "$DEST/ranges.bin"
cp "$src_v4" "$DEST/vpn-ipv4.json.new" && mv -f "$DEST/vpn-ipv4.json.new" "$DEST/vpn-ipv4.json"
cp "$src_v6" "$DEST/vpn-ipv6.json.new" && mv -f "$DEST/vpn-ipv6.json.new" "$DEST/vpn-ipv6.json"
echo "$WANT" > "$DEST/stamp"
echo "install-ip-lists: $WANT installed in $DEST"
