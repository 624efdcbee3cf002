#!/usr/bin/env bash
# Reproduces BENCHMARKS.md: installs the libraries and wrk (the HTTP load generator), builds
# in release mode and runs `dbeacon bench`. Extra arguments go to `dbeacon bench`, e.g.
#   scripts/bench.sh --beacons 100000 --duration 3
#   scripts/bench.sh --json > bench.jsonl
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_build_dependencies
apt_install wrk nginx-light
swift build -c release --product dbeacon >&2
swift build -c release --product dbeacon-bench >&2
exec .build/release/dbeacon-bench "$@"
