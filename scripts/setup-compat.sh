#!/usr/bin/env bash
# Prepares the Castle SDKs that the compatibility tests (test/compat) drive:
#   .venv/castle6  -> castle (PyPI) 6.1.0, the last 6.x: authenticate, track, risk, filter, log, devices
#   .venv/castle7  -> castle (PyPI) 7.3.0, the last 7.x: risk, filter, log, privacy, lists, events
#   test/compat/java/target -> the Java driver, built with Maven against io.castle:castle-java 2.3.2
#                     (the pin is in test/compat/java/pom.xml); Maven's local repository is
#                     <repo>/.m2, so nothing lands in the user's ~/.m2. A JDK and Maven come from
#                     Debian's packages when missing (scripts/ensure-java.sh).
#   .venv/schemathesis -> schemathesis (PyPI) 4.32.5, which fuzzes the REST API from its OpenAPI
#                     document (test/e2e/openapi.test.ts)
# Only the SDKs and their own dependencies are installed. Idempotent: a venv whose SDK is already
# at the pinned version is left alone, and the Java driver is rebuilt only when its pom or sources
# changed. The Node SDK (@castleio/sdk 0.4.x) comes from package.json and needs nothing here; the
# Go SDK is not run (its wire format is replayed by test/compat/go-wire.test.ts).
# Environment: PYTHON (interpreter used to create the venvs, default python3, must be >= 3.9),
# COMPAT_VENV_DIR (default <repo>/.venv), COMPAT_MAVEN_REPO (default <repo>/.m2/repository).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
VENV_DIR="${COMPAT_VENV_DIR:-$ROOT/.venv}"

CASTLE6_VERSION="6.1.0"
CASTLE7_VERSION="7.3.0"

command -v "$PYTHON" >/dev/null || { echo "setup-compat: $PYTHON not found" >&2; exit 1; }
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 9) else 1)' \
  || { echo "setup-compat: Python >= 3.9 is required (castle 7.x needs it)" >&2; exit 1; }

SCHEMATHESIS_VERSION="4.32.5"

installed_version() {
  # Prints the installed version of a package (default castle) in the venv, or nothing.
  local py="$1" package="${2:-castle}"
  [ -x "$py" ] || return 0
  "$py" - "$package" <<'EOF' 2>/dev/null || true
import sys
try:
    from importlib.metadata import version
    print(version(sys.argv[1]))
except Exception:
    pass
EOF
}

setup_venv() {
  local name="$1" want="$2" package="${3:-castle}" python="${4:-$PYTHON}"
  local dir="$VENV_DIR/$name"
  local py="$dir/bin/python"

  if [ "$(installed_version "$py" "$package")" = "$want" ]; then
    echo "setup-compat: $name already has $package==$want"
    return 0
  fi

  if [ ! -x "$py" ]; then
    echo "setup-compat: creating $dir"
    mkdir -p "$VENV_DIR"
    "$python" -m venv "$dir"
  fi

  echo "setup-compat: installing $package==$want into $name"
  "$py" -m pip install --quiet --disable-pip-version-check "$package==$want"

  local got
  got="$(installed_version "$py" "$package")"
  if [ "$got" != "$want" ]; then
    echo "setup-compat: $name has $package '$got', expected $want" >&2
    exit 1
  fi
}

build_java_driver() {
  local dir="$ROOT/test/compat/java"
  local stamp="$dir/target/classpath.txt"
  if [ -f "$stamp" ] && [ -z "$(find "$dir/pom.xml" "$dir/src" -newer "$stamp" -print -quit)" ]; then
    echo "setup-compat: the Java driver is up to date"
    return 0
  fi
  bash "$ROOT/scripts/ensure-java.sh"
  echo "setup-compat: building the Java driver (castle-java, Maven)"
  rm -f "$stamp"
  # The classpath file is written last: its presence says the build is complete. (Debian's Maven
  # prints colour resets even in batch mode; they are stripped.)
  (cd "$dir" && mvn --batch-mode --quiet --no-transfer-progress -Dmaven.repo.local="$MAVEN_REPO" \
    compile dependency:build-classpath -Dmdep.outputFile=target/classpath.txt) 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
  [ -s "$stamp" ] || { echo "setup-compat: the Java driver's classpath was not written" >&2; exit 1; }
}

MAVEN_REPO="${COMPAT_MAVEN_REPO:-$ROOT/.m2/repository}"

setup_venv castle6 "$CASTLE6_VERSION"
setup_venv castle7 "$CASTLE7_VERSION"
# CPython 3.11 before 3.11.9 can fail inside `ast.parse` under hypothesis ("AST constructor recursion
# depth mismatch"); schemathesis gets the newest interpreter at hand (SCHEMATHESIS_PYTHON to choose).
SCHEMATHESIS_PYTHON="${SCHEMATHESIS_PYTHON:-}"
if [ -z "$SCHEMATHESIS_PYTHON" ]; then
  candidates=(python3.13 python3.12 "$PYTHON")
  if command -v pyenv >/dev/null; then
    for v in $(pyenv versions --bare 2>/dev/null | sort -rV); do candidates+=("$(pyenv root)/versions/$v/bin/python3"); done
  fi
  for candidate in "${candidates[@]}"; do
    if command -v "$candidate" >/dev/null && "$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11, 9) else 1)' 2>/dev/null; then
      SCHEMATHESIS_PYTHON="$candidate"
      break
    fi
  done
  SCHEMATHESIS_PYTHON="${SCHEMATHESIS_PYTHON:-$PYTHON}"
fi
setup_venv schemathesis "$SCHEMATHESIS_VERSION" schemathesis "$SCHEMATHESIS_PYTHON"
build_java_driver
echo "setup-compat: ok ($VENV_DIR/castle6: castle==$CASTLE6_VERSION, $VENV_DIR/castle7: castle==$CASTLE7_VERSION, $VENV_DIR/schemathesis: schemathesis==$SCHEMATHESIS_VERSION, test/compat/java: castle-java 2.3.2)"
