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
swift test "$@"
./scripts/schemathesis.sh
./scripts/readme-tour.py
