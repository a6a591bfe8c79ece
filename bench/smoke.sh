#!/usr/bin/env bash
# Smoke run of the benchmark suite: every workload for about a second with small data
# (2,000 seeded docs, 300 feeds, 8 photos, a 4 MiB attachment) against a running server, then
# the soak (bench/soak.py) with 50 clients for 6 s. Checks that nothing errors under load, not
# how fast it is. Each part finishes in well under 60 s.
#
#   bench/smoke.sh [URL]        URL defaults to $COUCH_URL (http://user:pass@host:port)
#   BENCH_PID=<server pid>      optional: also sample the server's RSS
#   BENCH_TLS_BIN=<couchlite>   optional: also smoke-run bench/tls.py (HTTPS) with its own server
#
# Exits non-zero if any workload errors (bad status, per-item error, lost longpoll wakeup,
# short attachment, failed soak request, lost acknowledged document) or if a part exceeds SMOKE_TIMEOUT_S;
# then smoke-runs bench/filtered_changes.py (1,000 docs, a JavaScript filter) under FILTER_SMOKE_TIMEOUT_S.
set -euo pipefail
cd "$(dirname "$0")/.."

readonly SMOKE_TIMEOUT_S=60   # hard cap on each part of the smoke run, seconds
readonly FILTER_SMOKE_TIMEOUT_S=30   # and on that of bench/filtered_changes.py
readonly SOAK_CLIENTS=50      # concurrent soak clients
readonly SOAK_SECONDS=6       # soak duration, seconds

url="${1:-${COUCH_URL:-}}"
if [ -z "$url" ]; then
  echo "usage: bench/smoke.sh URL   (or set COUCH_URL)" >&2
  exit 2
fi
pid_args=()
if [ -n "${BENCH_PID:-}" ]; then pid_args=(--pid "$BENCH_PID"); fi

timeout --kill-after=5 "$SMOKE_TIMEOUT_S" python3 bench/run --smoke --url "$url" "${pid_args[@]}"
# HTTPS workloads (bench/tls.py) need a server with --tls auto: it starts its own from BENCH_TLS_BIN.
if [ -n "${BENCH_TLS_BIN:-}" ]; then
  timeout --kill-after=5 "$SMOKE_TIMEOUT_S" python3 bench/tls.py --smoke --server-bin "$BENCH_TLS_BIN"
fi
# The JavaScript filter benchmark (bench/filtered_changes.py) over a few documents, capped on its own.
timeout --kill-after=5 "$FILTER_SMOKE_TIMEOUT_S" python3 bench/filtered_changes.py --url "$url" --docs 1000 --runs 1
# Views (bench/views.py): a build over 2,000 documents, checked answers.
timeout --kill-after=5 "$SMOKE_TIMEOUT_S" python3 bench/views.py --smoke "$url"
# Mango (bench/mango.py): an index build and indexed/unindexed _find over 2,000 photos, checked answers.
timeout --kill-after=5 "$SMOKE_TIMEOUT_S" python3 bench/mango.py --smoke "$url"
# The soak workload (bench/soak.py), small and short.
exec timeout --kill-after=5 "$SMOKE_TIMEOUT_S" python3 bench/soak.py --url "$url" "${pid_args[@]}" \
  --clients "$SOAK_CLIENTS" --duration "$SOAK_SECONDS" --dbs 4 --photo-kib 32
