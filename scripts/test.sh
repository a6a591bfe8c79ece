#!/usr/bin/env bash
# Full test run: Swift unit tests, then the black-box HTTP conformance suite (conformance/)
# against a freshly started couchlite on a free port with a throw-away data dir.
# Then, when it started couchlite itself, the end-to-end replication tests (conformance/e2e),
# which start, kill and restart two more couchlite servers, and the gallery's browser tests
# (conformance/browser, headless Chromium).
# With COUCH_URL already set (e.g. http://admin:pass@127.0.0.1:5984 for a real CouchDB), the
# Swift steps still run but no server is started: the suite tests that URL instead (no e2e).
# Exits non-zero if any step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh

readonly UP_TIMEOUT_S=30      # seconds to wait for GET /_up after starting the server

step() { printf '\n=== %s\n' "$*"; }

step "swift format lint (.swift-format: no force unwrap, no try!, 120 columns)"
swift format lint --strict -r Sources Tests fuzz Package.swift

step "no closure kept inside a lock (scripts/check-stored-closures.py: use Callbacks.CallbackSlot)"
python3 scripts/check-stored-closures.py

# The gallery's and the console's pages, styles, scripts and images are real files compiled into the binary: lint
# them as what they are.
step "gallery and console assets (node --check; HTML, SVG and CSS well-formed: scripts/check-gallery-assets.py)"
node --check Sources/PhotoDrop/Gallery/Assets/app.js
node --check Sources/CouchServer/Console/Assets/console.js
python3 scripts/check-gallery-assets.py

# Part of the lint: the one debug build treats compiler warnings as errors, so a warning fails the
# run instead of scrolling past (no second build: `swift test` below reuses these products).
step "swift build --build-tests -Xswiftc -warnings-as-errors"
swift build --build-tests -Xswiftc -warnings-as-errors

step "self-contained: nothing outside the clone is read (scripts/check-self-contained.sh)"
bash scripts/check-self-contained.sh

step "swift test"
swift test --skip-build

# Every libFuzzer target (fuzz/) for a few seconds from its committed seeds; a crash, leak, hang or failed
# invariant fails the run. The instrumented modules are rebuilt only when a source changes (.build/fuzz/).
step "fuzz targets, ${FUZZ_SECONDS:=4} s each (fuzz/run.sh --all)"
nice -n 19 bash fuzz/run.sh --all "$FUZZ_SECONDS"

server_pid=""
tmp_dir=""
cleanup() {
  if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
    kill "$server_pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$server_pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$server_pid" 2>/dev/null || true
  fi
  if [ -n "$tmp_dir" ]; then rm -rf "$tmp_dir"; fi
}
trap cleanup EXIT

if [ -z "${COUCH_URL:-}" ]; then
  # The debug binary is already built by the step above; a release build would add minutes
  # and the suite checks behaviour, not speed.
  bin="$(swift build --show-bin-path)/couchlite"
  [ -x "$bin" ] || { echo "test.sh: $bin not found" >&2; exit 1; }
  port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')"
  tmp_dir="$(mktemp -d -t couchlite-test.XXXXXX)"
  step "starting couchlite on 127.0.0.1:$port (data $tmp_dir/data)"
  # --pbkdf2-iterations 1000: the suite creates many users; 600,000 (the default, which
  # conformance/e2e checks) would add minutes of hashing.
  "$bin" --bind 127.0.0.1 --port "$port" --data-dir "$tmp_dir/data" --admin admin:pass --log-level info \
    --pbkdf2-iterations 1000 \
    >"$tmp_dir/server.log" 2>&1 &
  server_pid=$!
  if ! python3 - "$port" "$UP_TIMEOUT_S" "$server_pid" <<'PY'
import sys, time, urllib.request, os
port, timeout, pid = int(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + timeout
while time.monotonic() < deadline:
    try:
        os.kill(pid, 0)
    except OSError:
        sys.exit("server exited before answering GET /_up")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_up", timeout=2) as r:
            if r.status == 200:
                sys.exit(0)
    except Exception:
        pass
    time.sleep(0.2)
sys.exit(f"GET /_up did not answer 200 within {timeout:.0f} s")
PY
  then
    echo "--- server log (tail)" >&2; tail -n 50 "$tmp_dir/server.log" >&2 || true
    exit 1
  fi
  export COUCH_URL="http://admin:pass@127.0.0.1:$port"
fi

step "conformance suite against $(printf '%s' "$COUCH_URL" | sed -E 's#//[^/@]*@#//#')"
set +e
python3 -m pytest conformance -q -p no:cacheprovider -rfE --ignore=conformance/e2e --ignore=conformance/browser
rc=$?
set -e
if [ "$rc" -ne 0 ] && [ -n "$tmp_dir" ]; then
  echo "--- server log (tail)" >&2; tail -n 50 "$tmp_dir/server.log" >&2 || true
fi

# A one-to-two-second run of every benchmark workload, so the instrument cannot rot (figures are
# not judged here: machines are noisy; see BENCHMARKS.md).
step "benchmark smoke run (bench/smoke.sh)"
set +e
BENCH_PID="$server_pid" BENCH_TLS_BIN="${bin:-}" bash bench/smoke.sh "$COUCH_URL"
bench_rc=$?
set -e

# End-to-end replication between two couchlite servers that the tests start, kill and restart
# themselves: only when testing couchlite (not a foreign server named by COUCH_URL).
e2e_rc=0
if [ -n "$tmp_dir" ]; then
  step "end-to-end replication (conformance/e2e, two couchlite servers)"
  set +e
  COUCHLITE_BIN="$bin" python3 -m pytest conformance/e2e -q -p no:cacheprovider -rfE
  e2e_rc=$?
  set -e
fi

# The photo gallery in a real headless Chromium (Debian's, driven by Playwright): its tests start
# their own couchlite, so they run only when testing couchlite.
browser_rc=0
if [ -n "$tmp_dir" ]; then
  step "photo gallery and database console in headless Chromium (conformance/browser)"
  set +e
  COUCHLITE_BIN="$bin" python3 -m pytest conformance/browser -q -p no:cacheprovider -rfE
  browser_rc=$?
  set -e
fi

if [ "$rc" -ne 0 ] || [ "$e2e_rc" -ne 0 ] || [ "$bench_rc" -ne 0 ] || [ "$browser_rc" -ne 0 ]; then
  echo "test.sh: conformance exit $rc, e2e exit $e2e_rc, bench smoke exit $bench_rc," \
    "browser exit $browser_rc" >&2
  exit 1
fi
