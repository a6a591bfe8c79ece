#!/usr/bin/env bash
# Build the release server and run it in the foreground; any arguments go to the server
# (defaults: 127.0.0.1:5984, data in ./data). Example: bash scripts/run.sh --admin admin:pass
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/setup.sh
swift build -c release --product couchlite
exec "$(swift build -c release --show-bin-path)/couchlite" "$@"
