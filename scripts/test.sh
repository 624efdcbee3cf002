#!/usr/bin/env bash
# Sets up everything the tests need (Debian libraries, the Python reference libraries and
# schemathesis in a virtualenv) and runs the whole test suite: the Swift tests, then
# schemathesis against schema/openapi.yaml with every check (scripts/schemathesis.sh), then the
# README's tour as written (scripts/readme-tour.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_build_dependencies
install_test_references
# Everything the run writes to the temporary folder (test databases, logs, servers' files) goes
# to one folder removed at the end, even when a test process crashes.
TMPDIR=$(mktemp -d "${TMPDIR:-/tmp}/dbeacon-test-run.XXXXXX")
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT
swift test "$@"
./scripts/schemathesis.sh
./scripts/readme-tour.py
