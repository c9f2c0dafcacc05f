#!/usr/bin/env bash
# Prepares the Android client's Maven build (clients/android) so that its tests run offline:
# resolves the Kotlin compiler, android-all (API 34), Robolectric and its pre-instrumented
# android-all jar, OkHttp, MockWebServer and the plugins into a local Maven repository through
# Maven's own client, once. test/e2e/android.test.ts then runs `mvn -o` against it and never
# downloads. A JDK and Maven come from Debian's packages when missing (scripts/ensure-java.sh).
#
# The repository is outside the clone, so that every clone and CI run on a machine share one
# (about 400 MB): RAMPART_MAVEN_REPO, else ${XDG_CACHE_HOME:-~/.cache}/rampart/maven (the rule is
# repeated in test/support/android.ts). Idempotent: a stamp holds the pom's hash, and nothing is
# resolved again while it matches.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="$ROOT/clients/android"
REPO="${RAMPART_MAVEN_REPO:-${XDG_CACHE_HOME:-$HOME/.cache}/rampart/maven}"
STAMP="$REPO/.rampart-android-ready"

want="$(sha256sum "$DIR/pom.xml" | cut -d' ' -f1)"
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$want" ]; then
  echo "setup-android: the Maven dependencies are ready ($REPO)"
  exit 0
fi

bash "$ROOT/scripts/ensure-java.sh"
mkdir -p "$REPO"
rm -f "$STAMP"
echo "setup-android: resolving the Android client's Maven dependencies into $REPO"
# Everything a build and test run uses: the plugins and their dependencies (go-offline, with the
# Surefire JUnit 4 provider named in the pom), then a build without running the tests, which
# resolves what the lifecycle's executions copy (the pre-instrumented jar, the AARs).
(cd "$DIR" && mvn --batch-mode --quiet --no-transfer-progress -Dmaven.repo.local="$REPO" \
  dependency:go-offline package -DskipTests) 2>&1 | sed 's/\x1b\[[0-9;]*m//g'
echo "$want" > "$STAMP"
echo "setup-android: ok"
