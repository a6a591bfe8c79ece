#!/usr/bin/env bash
# Idempotent environment setup for couchlite on Debian: C libraries for the server (SQLite, libcrypto, Duktape,
# zlib, libjpeg-turbo and libpng for thumbnails; PCRE2 for Mango's $regex; libheif (HEIC/AVIF), FFmpeg's
# libavformat/libavcodec/libswscale (video posters) and libexif (dates taken), heif-enc for test samples; libssl
# for HTTPS, the openssl command for its tests), Python + pytest + requests for the conformance suite,
# Chromium + Playwright + ffmpeg (test videos) for the gallery's browser tests, iproute2 (`ip netns`) and
# python-zeroconf for the LAN discovery e2e test (two network namespaces), wrk for benchmarks, curl for the
# README's examples (and their e2e test), Node.js to lint the gallery's script, and a Swift toolchain check. Safe to run repeatedly; installs only what is missing.
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
for pkg in libsqlite3-dev libssl-dev openssl zlib1g-dev duktape-dev libqrencode-dev zbar-tools libjpeg62-turbo-dev libpng-dev \
  libpcre2-dev libheif-dev libheif-examples libexif-dev libwebp-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev \
  wrk chromium ffmpeg iproute2; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
command -v curl >/dev/null 2>&1 || missing+=(curl)
# Any node on PATH will do (for `node --check` of the gallery's script in scripts/test.sh); Debian's when there is none.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
# Any python3 on PATH will do (pyenv's, say); Debian's only when there is none.
command -v python3 >/dev/null 2>&1 || missing+=(python3)
if ! command -v python3 >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then missing+=(python3-pip); fi

if [ "${#missing[@]}" -gt 0 ]; then
  if ! command -v apt-get >/dev/null 2>&1; then
    log "missing packages (${missing[*]}) and no apt-get; install them by hand"; exit 1
  fi
  log "installing: ${missing[*]}"
  # A new machine often runs its own apt (unattended upgrades) for a while: wait for the lock
  # instead of failing at once.
  apt_get=(env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 -q)
  as_root "${apt_get[@]}" update
  as_root "${apt_get[@]}" install -y "${missing[@]}"
fi

# --- Python modules ----------------------------------------------------------------------
if ! python3 -c 'import pytest, requests, playwright, zeroconf' >/dev/null 2>&1; then
  log "installing pytest, requests, playwright and zeroconf with pip"
  # Quiet: no root warning (a throw-away test machine runs as root on purpose), no version nag.
  export PIP_ROOT_USER_ACTION=ignore PIP_DISABLE_PIP_VERSION_CHECK=1
  pip_err="$(mktemp -t couchlite-pip.XXXXXX)"
  if ! python3 -m pip install -q pytest requests playwright zeroconf 2>"$pip_err"; then
    # Debian's own Python refuses pip installs (PEP 668) unless told this is meant.
    if grep -q "externally-managed-environment" "$pip_err"; then
      python3 -m pip install -q --break-system-packages pytest requests playwright zeroconf 2>"$pip_err" || {
        cat "$pip_err" >&2; rm -f "$pip_err"; exit 1; }
    else
      cat "$pip_err" >&2; rm -f "$pip_err"; exit 1
    fi
  fi
  rm -f "$pip_err"
  python3 -c 'import pytest, requests, playwright, zeroconf' || {
    log "pytest/requests/playwright/zeroconf still not importable"; exit 1; }
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
