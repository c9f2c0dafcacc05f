#!/usr/bin/env bash
# CI: every commit since the rule was adopted has a subject of at most 72 characters
# (CONTRIBUTING.md). Commits before it are history; a clone without that commit (a shallow one)
# checks the newest commit only.
set -euo pipefail
cd "$(dirname "$0")/.."
since=$(cat .ci/commit-subjects-since)
if git cat-file -e "${since}^{commit}" 2>/dev/null; then range="${since}..HEAD"; else range="-1"; fi
bad=0
while IFS= read -r line; do
  hash=${line%% *}
  subject=${line#* }
  if [ "${#subject}" -gt 72 ]; then
    echo "commit ${hash:0:10}: subject of ${#subject} characters (at most 72): ${subject}" >&2
    bad=1
  fi
done < <(git log --format='%H %s' ${range})
exit "$bad"
