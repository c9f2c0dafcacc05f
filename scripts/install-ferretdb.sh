#!/usr/bin/env bash
# Installs FerretDB (the embedded, MongoDB wire-compatible default database) into .tools/bin.
# FerretDB is fetched through the Go module proxy. `go install ...@v1.24.2` alone is not enough:
# the module zip lacks build/version/version.txt, so such a binary panics at start, and some
# proxies refuse the version list that `go install pkg@version` asks for. We therefore download the
# module, add the version file and build it ourselves. Idempotent.
set -euo pipefail
VERSION="v1.24.2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${FERRETDB_BIN:-$ROOT/.tools/bin/ferretdb}"

# (Output is captured first: piping into `grep -q`/`head` would end in SIGPIPE under pipefail.)
installed_version() { [ -x "$DEST" ] && "$DEST" --version 2>/dev/null || true; }
case "$(installed_version)" in
  *"version: $VERSION"*) exit 0 ;;
esac
command -v go >/dev/null || { echo "install-ferretdb: Go is required to build FerretDB ($VERSION)" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'module rampart-ferretdb-fetch\n\ngo 1.21\n\nrequire github.com/FerretDB/FerretDB %s\n' "$VERSION" > go.mod
dir="$(go mod download -json "github.com/FerretDB/FerretDB@$VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
[ -n "$dir" ] || { echo "install-ferretdb: could not download FerretDB $VERSION" >&2; exit 1; }
cp -r "$dir" src
chmod -R u+w src
echo "$VERSION" > src/build/version/version.txt
mkdir -p "$(dirname "$DEST")"
(cd src && GOFLAGS=-mod=mod go build -o "$DEST" ./cmd/ferretdb)
case "$(installed_version)" in
  *"version: $VERSION"*) echo "install-ferretdb: FerretDB $VERSION installed at $DEST" ;;
  *) echo "install-ferretdb: the built binary does not report $VERSION" >&2; exit 1 ;;
esac
