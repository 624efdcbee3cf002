#!/usr/bin/env bash
# Sets up everything the tests need (Debian libraries and chromium, the Python reference
# libraries and schemathesis in a virtualenv, a throwaway PostgreSQL + PostGIS unless
# DBEACON_POSTGRES_URL names one) and runs the whole test suite: the Swift tests on both stores,
# the PostgreSQL fault suite (scripts/fault-test.py), then schemathesis against schema/openapi.yaml with every check (scripts/schemathesis.sh), the
# README's tour as written (scripts/readme-tour.py) and the map console in headless chromium
# (scripts/console-test.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_build_dependencies
apt_install chromium fonts-liberation gdb
install_test_references
# Everything the run writes to the temporary folder (test databases, logs, servers' files) goes
# to one folder removed at the end, even when a test process crashes.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/dbeacon-test-run.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
# Every store-touching test runs on SpatiaLite and PostGIS: without a database named by
# DBEACON_POSTGRES_URL (.ci/run starts one), a throwaway PostgreSQL + PostGIS on loopback, so a
# newcomer's run is CI's run.
if [ -z "${DBEACON_POSTGRES_URL:-}" ]; then
    echo "==> DBEACON_POSTGRES_URL is not set: starting a throwaway PostgreSQL + PostGIS for the PostGIS half"
    start_test_postgres || { echo "test.sh: PostgreSQL + PostGIS could not be started" >&2; exit 1; }
    trap 'stop_test_postgres; rm -rf "$TMPDIR"' EXIT
fi
# The build first (however long a slow machine takes), then the tests: line-buffered (stdbuf),
# so a run that is ended shows everything up to its last line, and bounded (run_with_watchdog,
# 30 min; they take about 4 here): a hung test is reported with the thread stacks of the test
# process and the database's sessions, and ends the run. Each test is bounded too (`.bounded`,
# 12 min), which names a test that hangs.
# ConnectionLimitTests floods a server with slow connections and times how fast it closes them:
# it runs alone after the others, on an otherwise idle machine (beside the parallel suite a
# saturated machine, not the server, set its figures).
swift build --build-tests
run_with_watchdog "${SWIFT_TEST_LIMIT:-1800}" stdbuf -oL -eL swift test --skip-build --skip ConnectionLimitTests "$@"
run_with_watchdog 600 stdbuf -oL -eL swift test --skip-build --filter ConnectionLimitTests
# DBeaconKit (the typed client) is generated from schema/openapi.yaml at build time: the
# generator must read the whole document without a warning (a warning means a schema it
# skipped, i.e. a property missing from the client).
./scripts/check-client-generation.sh
# The PostgreSQL fault suite: two nodes on a throwaway cluster, PostgreSQL stopped, crashed and
# restarted and a node killed under write load (bounded: FAULT_ROUNDS rounds of three faults).
apt_install postgresql-15 postgresql-15-postgis-3
python3 scripts/fault-test.py --rounds "${FAULT_ROUNDS:-3}"
./scripts/schemathesis.sh
./scripts/readme-tour.py
.venv-test/bin/python scripts/console-test.py
