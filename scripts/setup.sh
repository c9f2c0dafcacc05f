#!/usr/bin/env bash
# `npm run setup`, and what `npm ci` runs after installing the packages (postinstall): everything
# Rampart needs besides node_modules, so that `npm start` never downloads or installs anything.
#   1. FerretDB, the embedded database, built from source with Go into .tools/bin
#      (scripts/install-ferretdb.sh); skipped when MONGODB_URI is set;
#   2. the address lists (VPN, Tor, hosting ranges) into .tools/ip-lists, with pip
#      (scripts/install-ip-lists.sh);
#   3. the build into dist/ (scripts/build.js), when a source changed since the last one and
#      TypeScript is installed (an `npm ci --omit=dev` has no compiler: it runs a dist/ built elsewhere).
# Idempotent and offline once done: each step checks its stamp first and downloads nothing when
# what it installs is there and current, so a second `npm ci` without network succeeds. A step
# that must download and cannot fails the install, naming what is missing.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
trap 'echo "setup: incomplete; fix what is named above, then run \`npm run setup\` (the packages are installed)" >&2' ERR

if [ -n "${MONGODB_URI:-}" ]; then
  echo "setup: MONGODB_URI is set; the embedded database (FerretDB) is not built"
else
  bash scripts/install-ferretdb.sh
fi
bash scripts/install-ip-lists.sh
if [ -f node_modules/typescript/bin/tsc ]; then
  node scripts/build.js --if-stale
else
  echo "setup: TypeScript is not installed (npm ci --omit=dev?); dist/ is not built here"
fi
echo "setup: done; \`npm start\` runs the service"
