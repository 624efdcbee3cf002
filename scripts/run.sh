#!/usr/bin/env bash
# Sets up and runs the DBeacon server on the embedded SpatiaLite database with the sample
# data (Stuttgart), on http://127.0.0.1:8080. Webhooks may reach loopback (the README tour's
# receiver). Extra arguments go to `dbeacon serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
install_build_dependencies
swift build -c release --product dbeacon
export DBEACON_ADMIN_TOKEN="${DBEACON_ADMIN_TOKEN:-dev-admin-token}"
echo "==> admin token: $DBEACON_ADMIN_TOKEN; sample users' tokens are in samples/users.json"
exec .build/release/dbeacon serve --samples samples --allow-private-webhooks "$@"
