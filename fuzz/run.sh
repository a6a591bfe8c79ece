#!/usr/bin/env bash
# Builds and runs the libFuzzer targets (see fuzz/README.md).
#
#   fuzz/run.sh TARGET [SECONDS] [LIBFUZZER ARGS...]   build if needed, then fuzz TARGET (default 60 s)
#   fuzz/run.sh --all SECONDS                          every target for SECONDS each, one after another (CI)
#   fuzz/run.sh --build [TARGET...]                    build only (all targets by default)
#   fuzz/run.sh --list                                 the target names
#   fuzz/run.sh --found TARGET DIR...                  keep in fuzz/found/TARGET the inputs of DIRs (a long run's
#                                                      corpus) that reach coverage the seeds and fuzz/found do not
#
# Targets are fuzz/targets/NAME.swift. The modules they test (CouchCrypto, CouchWire, CouchQuery and RevTree, the
# pure tree algorithms) are compiled once with `swiftc -sanitize=fuzzer,address` into .build/fuzz/ and reused until
# a source file or a flag changes. Seeds are read from fuzz/corpus/NAME (committed); inputs libFuzzer finds are
# kept in .build/fuzz/corpus/NAME, crashes in .build/fuzz/artifacts/. Exit status: libFuzzer's (non-zero on a
# crash, leak, timeout or failed invariant).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/opt/swift/usr/bin:$PATH"
# Swift's own crash backtracer reads wild memory under ASan and hides the report; libFuzzer reports instead.
export SWIFT_BACKTRACE=enable=no
# ASan records a stack trace of every malloc and free (30 frames by default), which was a third of the CPU of the
# targets that allocate per byte fed; with 4 frames the unwinding and the stack depot were still 10-12 % of
# multipart and base64. Detection does not depend on them: only a report's "allocated/freed here" stacks are
# missing (the faulting access's stack is always there). Replay a saved crash with
# ASAN_OPTIONS=malloc_context_size=30 for the full stacks.
export ASAN_OPTIONS="${ASAN_OPTIONS:-malloc_context_size=0}"

readonly OUT=.build/fuzz
# Largest generated input per target, bytes: enough to pass every limit the code under test enforces, no more
# (longer inputs only make each execution slower). http_request: the 8 KiB request-line limit; chunked: the
# 4 KiB chunk-extension limit; multipart: the 16 KiB preamble and part-header limits; json: JSON's only limit is
# 512 levels of nesting (513 bytes), so 1 KiB; selector: the same plus documents to match; gzip: a bomb reaches
# the 256 KiB output limit from a few hundred bytes; base64 has no length limit; revtree reads at most 226 bytes
# (48 revisions of 3 bytes, a limit, 40 paths of 2) and the last; dns: past the 9,000-byte packet limit;
# websocket: past its harness's 8 KiB message limit; blip: several frames of a message past the 16 KiB frame size.
max_len_of() {
  case "$1" in
    http_request | multipart) echo 16384 ;;
    chunked) echo 8192 ;;
    selector | gzip | base64) echo 4096 ;;
    json) echo 1024 ;;
    revtree) echo 256 ;;
    dns) echo 9216 ;;
    websocket | blip) echo 16384 ;;
    *) echo 16384 ;;
  esac
}
readonly INPUT_TIMEOUT_S=10       # seconds one input may take before libFuzzer calls it a hang
# -O: the long runs need the speed; -g: symbolized ASan reports. Same language settings as Package.swift.
readonly SWIFT_FLAGS=(-sanitize=fuzzer,address -O -g -parse-as-library -swift-version 6 -package-name couchlite
  -enable-upcoming-feature ExistentialAny -enable-upcoming-feature MemberImportVisibility -use-ld=lld)
readonly HARNESS_FLAGS=(-sanitize=address "${SWIFT_FLAGS[@]:1}")

targets() { for f in fuzz/targets/*.swift; do basename "$f" .swift; done; }

# Harness sources besides the target: fuzz/Support, and the gzip encoder the tests use (the server only decodes
# gzip, so the encoder lives with the tests; the gzip target compresses with it for its round trip).
harness_sources() { printf '%s\n' fuzz/Support/*.swift Tests/CouchWireTests/Support/GzipEncoder.swift; }

# A stamp over the sources and flags: unchanged stamp → the products in $OUT are reused.
stamp_of() { { printf '%s\n' "${SWIFT_FLAGS[*]}"; cat "$@"; } | sha256sum | cut -c1-16; }

# build_module NAME INCLUDE_DIRS... -- SOURCES...
build_module() {
  local name=$1; shift
  local includes=()
  while [ "$1" != "--" ]; do includes+=(-I "$1"); shift; done
  shift
  local stamp; stamp="$(stamp_of "$@")"
  if [ -f "$OUT/$name.o" ] && [ "$(cat "$OUT/$name.stamp" 2>/dev/null)" = "$stamp" ]; then return; fi
  echo "fuzz: compiling module $name ($# files)" >&2
  swiftc "${SWIFT_FLAGS[@]}" -wmo -module-name "$name" "${includes[@]}" -I "$OUT" \
    -emit-module -emit-module-path "$OUT/$name.swiftmodule" -c "$@" -o "$OUT/$name.o"
  echo "$stamp" >"$OUT/$name.stamp"
}

build_modules() {
  mkdir -p "$OUT"
  build_module CouchCrypto Sources/COpenSSL -- Sources/CouchCrypto/*.swift
  # shellcheck disable=SC2046
  build_module CouchWire Sources/COpenSSL Sources/CZlib -- $(find Sources/CouchWire -name '*.swift' | sort)
  # shellcheck disable=SC2046
  build_module CouchQuery Sources/COpenSSL Sources/CZlib Sources/CPCRE2 -- $(find Sources/CouchQuery -name '*.swift' | sort)
  # The pure tree algorithms (the SQLite store, CouchStore, is not under test here).
  build_module RevTree Sources/COpenSSL -- Sources/RevTree/Tree/*.swift
  # The DNS codec and the responder's and browser's decisions, without the sockets.
  build_module Discovery -- Sources/Discovery/DNS/*.swift Sources/Discovery/Logic/*.swift
  # BLIP 3 framing (Couchbase Lite 3's sync transport), pure.
  build_module Blip Sources/CZlib -- Sources/Blip/*.swift
}

build_target() {
  local name=$1 src="fuzz/targets/$1.swift"
  [ -f "$src" ] || { echo "fuzz: no target $name (fuzz/targets/$name.swift); targets: $(targets | xargs)" >&2; exit 2; }
  local support; mapfile -t support < <(harness_sources)
  local stamp; stamp="$(stamp_of "$src" "${support[@]}" "$OUT"/*.stamp <(printf '%s' "${HARNESS_FLAGS[*]}"))"
  if [ -x "$OUT/bin/$name" ] && [ "$(cat "$OUT/bin/$name.stamp" 2>/dev/null)" = "$stamp" ]; then return; fi
  echo "fuzz: linking $name" >&2
  mkdir -p "$OUT/bin"
  # The harness itself gets ASan but no coverage instrumentation: its equality checks over whole outputs were
  # most of the CPU (a traced comparison per byte) and guide the fuzzer nowhere; the modules under test keep it.
  swiftc "${HARNESS_FLAGS[@]}" -wmo -module-name "fuzz_$name" -I "$OUT" -I Sources/COpenSSL -I Sources/CZlib \
    -I Sources/CPCRE2 -c "$src" "${support[@]}" -o "$OUT/bin/$name.o"
  swiftc "${SWIFT_FLAGS[@]}" "$OUT/bin/$name.o" "$OUT/CouchCrypto.o" "$OUT/CouchWire.o" "$OUT/CouchQuery.o" \
    "$OUT/RevTree.o" "$OUT/Discovery.o" "$OUT/Blip.o" -lz -lcrypto -lpcre2-8 -o "$OUT/bin/$name"
  rm -f "$OUT/bin/$name.o"
  echo "$stamp" >"$OUT/bin/$name.stamp"
}

# run_target NAME SECONDS [ARGS...]
run_target() {
  local name=$1 seconds=$2; shift 2
  mkdir -p "$OUT/corpus/$name" "$OUT/artifacts"
  # fuzz/found/NAME: inputs earlier long runs found, minimized against the seeds (fuzz/README.md), when there are any.
  local found=()
  [ -d "fuzz/found/$name" ] && found=("fuzz/found/$name")
  echo "fuzz: $name for ${seconds}s (seeds fuzz/corpus/$name ${found[*]})" >&2
  "$OUT/bin/$name" -max_total_time="$seconds" -max_len="$(max_len_of "$name")" -timeout="$INPUT_TIMEOUT_S" \
    -print_final_stats=1 -artifact_prefix="$OUT/artifacts/$name-" "$@" "$OUT/corpus/$name" "fuzz/corpus/$name" \
    "${found[@]}"
}

case "${1:-}" in
  "" | -h | --help)
    sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
    ;;
  --list) targets ;;
  --found)
    name=${2:?"usage: fuzz/run.sh --found TARGET DIR..."}
    shift 2
    build_modules
    build_target "$name"
    # libFuzzer's merge keeps what is already in the first directory and adds the fewest inputs that reach the
    # edges it does not (set cover; -use_counters=0: an edge counts, not how often it ran).
    work="$(mktemp -d)"
    cp "fuzz/corpus/$name"/* "$work"/
    [ -d "fuzz/found/$name" ] && cp "fuzz/found/$name"/* "$work"/
    "$OUT/bin/$name" -set_cover_merge=1 -use_counters=0 -max_len="$(max_len_of "$name")" -timeout="$INPUT_TIMEOUT_S" "$work" "$@" >&2
    mkdir -p "fuzz/found/$name"
    for f in "$work"/*; do [ -e "fuzz/corpus/$name/${f##*/}" ] || cp -n "$f" "fuzz/found/$name/"; done
    rm -rf "$work"
    echo "fuzz: fuzz/found/$name holds $(find "fuzz/found/$name" -type f | wc -l) inputs" >&2
    ;;
  --build)
    shift
    build_modules
    names=("$@")
    [ ${#names[@]} -gt 0 ] || mapfile -t names < <(targets)
    for t in "${names[@]}"; do build_target "$t"; done
    ;;
  --all)
    seconds=${2:?"usage: fuzz/run.sh --all SECONDS"}
    build_modules
    mapfile -t names < <(targets)
    for t in "${names[@]}"; do build_target "$t"; done
    for t in "${names[@]}"; do
      if ! run_target "$t" "$seconds" >"$OUT/$t.log" 2>&1; then
        echo "fuzz: $t FAILED; the report:" >&2
        grep -v '^#' "$OUT/$t.log" | tail -n 60 >&2
        exit 1
      fi
      echo "fuzz: $t ok: $(grep -E '^stat::number_of_executed_units' "$OUT/$t.log" | awk '{print $2}') runs," \
        "$(grep -E '^stat::average_exec_per_sec' "$OUT/$t.log" | awk '{print $2}')/s" >&2
    done
    ;;
  *)
    name=$1 seconds=${2:-60}
    shift $(($# >= 2 ? 2 : 1))
    build_modules
    build_target "$name"
    run_target "$name" "$seconds" "$@"
    ;;
esac
