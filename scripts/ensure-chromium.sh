#!/usr/bin/env bash
# The browser client's end-to-end test drives real headless Chromium: Debian's `chromium` package
# (or the one RAMPART_CHROMIUM names). Nothing downloads a browser at run time; this installs the
# distribution's package when it is missing and the machine allows it.
set -euo pipefail
if [ -n "${RAMPART_CHROMIUM:-}" ] && [ -x "${RAMPART_CHROMIUM}" ]; then exit 0; fi
if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo -n"; fi
  echo "ensure-chromium: installing Debian's chromium package"
  if $SUDO apt-get install -y -qq chromium >/dev/null 2>&1 || { $SUDO apt-get update -qq && $SUDO apt-get install -y -qq chromium; }; then
    exit 0
  fi
fi
echo "ensure-chromium: Chromium is missing; install your distribution's chromium package or set RAMPART_CHROMIUM" >&2
exit 1
