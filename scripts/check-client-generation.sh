#!/usr/bin/env bash
# Runs Apple's swift-openapi-generator (built by `swift build`/`swift test` for DBeaconKit) over
# schema/openapi.yaml with DBeaconKit's configuration and fails on any warning or error.
set -euo pipefail
cd "$(dirname "$0")/.."
tool="$(swift build --show-bin-path)/swift-openapi-generator-tool"
[ -x "$tool" ] || swift build --target DBeaconKit >/dev/null
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"$tool" generate schema/openapi.yaml --config Sources/DBeaconKit/openapi-generator-config.yaml \
    --output-directory "$out" >"$out/log" 2>&1 || { cat "$out/log"; exit 1; }
if grep -iE "warning|error" "$out/log"; then
    echo "check-client-generation: the generator warned about schema/openapi.yaml (above)" >&2
    exit 1
fi
echo "check-client-generation: DBeaconKit generated from schema/openapi.yaml without a warning ($(cat "$out"/*.swift | wc -l) lines)"
