#!/usr/bin/env bash
# Idempotent environment setup for couchlite on Debian: C libraries for the server,
# Python + pytest + requests for the conformance suite, wrk for benchmarks, and a Swift
# toolchain check. Safe to run repeatedly; installs only what is missing.
# Source it (`. scripts/setup.sh`) to keep the PATH fix for /opt/swift in the caller.
set -euo pipefail

log() { printf 'setup: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else log "need root to run: $*"; return 1
  fi
}

# --- Debian packages -------------------------------------------------------------------
missing=()
for pkg in libsqlite3-dev libssl-dev zlib1g-dev libqrencode-dev zbar-tools wrk; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
# Any python3 on PATH will do (pyenv's, say); Debian's only when there is none.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then missing+=(python3-pip); fi

if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "missing packages (${missing[*]}) and no apt-get; install them by hand"; exit 1
  fi
  log "installing: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# --- Python modules ----------------------------------------------------------------------
if ! python3 -c 'import pytest, requests' >/dev/null 2>&1; then
  log "installing pytest and requests with pip"
  if ! python3 -m pip install -q pytest requests 2>/tmp/couchlite-pip.err; then
    if grep -q "externally-managed-environment" /tmp/couchlite-pip.err; then
      python3 -m pip install -q --break-system-packages pytest requests
    else
      cat /tmp/couchlite-pip.err >&2; exit 1
    fi
  fi
  python3 -c 'import pytest, requests' || { log "pytest/requests still not importable"; exit 1; }
fi

# --- Swift toolchain ---------------------------------------------------------------------
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  export PATH="/opt/swift/usr/bin:$PATH"
fi
if ! command -v swift >/dev/null 2>&1; then
  log "no 'swift' on PATH and none at /opt/swift/usr/bin: install Swift 6 (https://swift.org/install) first"
  exit 1
fi
log "ok ($(swift --version 2>/dev/null | head -n1))"
