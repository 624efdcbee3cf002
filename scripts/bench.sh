#!/usr/bin/env bash
# Reproduces BENCHMARKS.md: installs the libraries and wrk (the HTTP load generator), builds
# in release mode and runs `dbeacon bench`. Extra arguments go to `dbeacon bench`, e.g.
#   scripts/bench.sh --beacons 100000 --duration 3
#   scripts/bench.sh --json > bench.jsonl
#   scripts/bench.sh --peers --beacons 100000   # the ratios of BENCHMARKS.md
# With --peers and no --postgres, a throwaway PostgreSQL + PostGIS with fsync on is started for
# the scale-out ratio (two nodes on PostgreSQL against one embedded node) and removed after.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_build_dependencies
apt_install wrk nginx-light
swift build -c release --product dbeacon >&2
swift build -c release --product dbeacon-bench >&2
case " $* " in
    *" --peers "*)
        case " $* " in
            *" --postgres "*) ;;
            *)
                DBEACON_PG_DURABLE=1 start_test_postgres >&2
                trap stop_test_postgres EXIT
                set -- "$@" --postgres "$DBEACON_POSTGRES_URL"
                ;;
        esac
        ;;
esac
.build/release/dbeacon-bench "$@"
