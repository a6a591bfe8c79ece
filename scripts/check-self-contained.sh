#!/usr/bin/env bash
# Proves the test suite needs nothing outside the clone, so that anyone can run it from a fresh clone: a fresh
# clone in an empty folder, with no shared/ folder beside the clone, must pass scripts/test.sh.
#  1. No test, script or build file names a path outside the repository (the parent's shared/ folder, /work/…).
#  2. The conformance files that read test data (the transcript replays and the replicator
#     self-check, which run without a server) pass from a copy of conformance/ in an empty
#     temporary folder, where a path that climbs out of the copy finds nothing.
# Exits non-zero, naming the offending lines, if either fails.
set -euo pipefail
cd "$(dirname "$0")/.."

if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  files() { git ls-files --cached --others --exclude-standard -- Tests conformance scripts bench .ci Package.swift; }
else
  files() { find Tests conformance scripts bench .ci Package.swift -type f; }
fi
# The transcripts are recorded data (their bodies may name anything); this script names the patterns.
hits="$(files | grep -v -e '^conformance/transcripts/' -e '^scripts/check-self-contained.sh$' \
  | tr '\n' '\0' | xargs -0 grep -n -E '\.\./shared|/work/' -- 2>/dev/null || true)"
if [ -n "$hits" ]; then
  echo "check-self-contained: these lines read outside the clone:" >&2
  printf '%s\n' "$hits" >&2
  exit 1
fi

tmp="$(mktemp -d -t couchlite-selfcontained.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/clone"
cp -R conformance "$tmp/clone/conformance"
(cd "$tmp/clone" && env -u COUCH_URL python3 -m pytest -q -p no:cacheprovider \
  conformance/test_replay_selfcheck.py conformance/test_replicator_selfcheck.py)
echo "check-self-contained: ok (no path outside the clone; self-checks pass from an isolated copy)"
