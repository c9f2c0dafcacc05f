#!/usr/bin/env bash
# Installs FerretDB (the embedded, MongoDB wire-compatible default database) into .tools/bin,
# built from its Go module source with Rampart's patches (scripts/ferretdb/*.patch, see
# docs/embedded-database.md):
#   0001  _id look-ups use the _id index (they scanned the table);
#   0002  update and findAndModify are atomic per document (concurrent $inc lost increments);
#   0003  an insert with comment "rampart:upsert" replaces documents (bulk whole-document upsert);
#   0004  no leak-hunting resource tracking (a stack trace and a finalizer per iterator);
#   0005  `_id: {$in: [...]}` look-ups use the _id index (they scanned the table);
#   0006  with FERRETDB_RELOAD_METADATA_ON_MISS=1, an unknown collection re-reads the list of them;
#   0007  an insert of one statement runs in autocommit, without BEGIN…COMMIT and its statement journal.
#   0008  compact (without force) checkpoints the WAL and truncates it: a purge leaves no old frames.
#   0009  non-unique indexes on top-level fields serve equality (or `$in`), range and keyset filters with their sort and limit.
#   0010  reads hold SQLite's snapshot only while SQLite steps: rows are read into memory (a whole table in chunks of
#         rowids) before any is decoded, and compact's checkpoint waits at most 500 ms for readers (the WAL stays bounded).
# `go install ...@v1.24.2` alone is not enough: the module zip lacks build/version/version.txt,
# so such a binary panics at start, and some proxies refuse the version list that
# `go install pkg@version` asks for. We therefore download the module, patch it and build it.
#
# Idempotent: a binary is rebuilt only when the stamp next to it (FerretDB version + sha256 of the
# patches) differs from what this script would build, so an unpatched or older-patched binary
# found in place is replaced. The new binary is built aside and moved in atomically (a running
# FerretDB keeps its old file).
set -euo pipefail
VERSION="v1.24.2"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DEST="${FERRETDB_BIN:-$ROOT/.tools/bin/ferretdb}"
PATCHES=("$ROOT"/scripts/ferretdb/*.patch)

stamp_of_patches() {
  { echo "$VERSION"; cat "${PATCHES[@]}"; } | sha256sum | cut -d' ' -f1
}
WANT="$(stamp_of_patches)"
STAMP="$DEST.stamp"

# (Output is captured first: piping into `grep -q`/`head` would end in SIGPIPE under pipefail.)
installed_version() { [ -x "$DEST" ] && "$DEST" --version 2>/dev/null || true; }
if [ -x "$DEST" ] && [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
  case "$(installed_version)" in
    *"version: $VERSION"*) exit 0 ;;
  esac
fi
if [ -x "$DEST" ]; then echo "install-ferretdb: $DEST is not the current patched build; rebuilding" >&2; fi
command -v go >/dev/null || { echo "install-ferretdb: Go is required to build FerretDB ($VERSION)" >&2; exit 1; }
# `patch` where it is installed, else `git apply` (which also works outside a repository).
apply_patch() {
  if command -v patch >/dev/null; then patch -p1 --forward --quiet < "$1"
  elif command -v git >/dev/null; then git apply -p1 "$1"
  else echo "install-ferretdb: 'patch' or 'git' is required to patch FerretDB" >&2; return 1
  fi
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$work"
printf 'module rampart-ferretdb-fetch\n\ngo 1.21\n\nrequire github.com/FerretDB/FerretDB %s\n' "$VERSION" > go.mod
dir="$(go mod download -json "github.com/FerretDB/FerretDB@$VERSION" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')"
[ -n "$dir" ] || { echo "install-ferretdb: could not download FerretDB $VERSION" >&2; exit 1; }
cp -r "$dir" src
chmod -R u+w src
echo "$VERSION" > src/build/version/version.txt
for p in "${PATCHES[@]}"; do
  (cd src && apply_patch "$p") || { echo "install-ferretdb: patch $(basename "$p") does not apply to FerretDB $VERSION" >&2; exit 1; }
done
mkdir -p "$(dirname "$DEST")"
(cd src && GOFLAGS=-mod=mod go build -o "$DEST.new" ./cmd/ferretdb)
case "$("$DEST.new" --version 2>/dev/null || true)" in
  *"version: $VERSION"*) ;;
  *) rm -f "$DEST.new"; echo "install-ferretdb: the built binary does not report $VERSION" >&2; exit 1 ;;
esac
mv -f "$DEST.new" "$DEST"
echo "$WANT" > "$STAMP"
echo "install-ferretdb: FerretDB $VERSION (patched: $(cd "$ROOT/scripts/ferretdb" && ls *.patch | tr '\n' ' '| sed 's/ $//')) installed at $DEST"
