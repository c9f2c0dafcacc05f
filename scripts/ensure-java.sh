#!/usr/bin/env bash
# The Java SDK's compatibility test (test/compat/java) is a small application built with Maven:
# it needs a JDK (javac, java) and Maven. This installs Debian's packages when either is missing
# and the machine allows it, as ensure-chromium.sh does for the browser. Maven fetches the SDK and
# its dependencies through its own client into <repo>/.m2 (see setup-compat.sh).
set -euo pipefail
if command -v javac >/dev/null 2>&1 && command -v java >/dev/null 2>&1 && command -v mvn >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi
  PACKAGES="default-jdk-headless maven"
  echo "ensure-java: installing Debian's $PACKAGES"
  if $SUDO apt-get install -y -qq $PACKAGES >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq $PACKAGES; }; then
    exit 0
  fi
fi
echo "ensure-java: a JDK (11 or later) and Maven are missing; install your distribution's default-jdk-headless and maven packages" >&2
exit 1
