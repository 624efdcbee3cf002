#!/usr/bin/env bash
# Runs schemathesis (PyPI) with every check against a real `dbeacon serve` on a temporary
# SpatiaLite database with the sample data, once with a user token and once with the admin
# token, for a bounded time each; fails on any failure. Part of ./scripts/test.sh.
#
#   scripts/schemathesis.sh                 # uses .build/debug/dbeacon (built by swift test)
#   DBEACON_BIN=.build/release/dbeacon SCHEMATHESIS_SECONDS=300 scripts/schemathesis.sh
#
# Rate limits are off for this run (they are tested on their own); everything else is as served.
# One worker: hypothesis builds strategies with ast.parse, which CPython 3.11 does not allow from
# two threads at once ("AST constructor recursion depth mismatch").
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${DBEACON_BIN:-.build/debug/dbeacon}"
seconds="${SCHEMATHESIS_SECONDS:-90}"
seed="${SCHEMATHESIS_SEED:-20261123}"
st="${SCHEMATHESIS:-.venv-test/bin/schemathesis}"
[ -x "$bin" ] || { echo "schemathesis.sh: $bin not built (swift build first)" >&2; exit 1; }
[ -x "$st" ] || { echo "schemathesis.sh: $st missing (scripts/test.sh installs it)" >&2; exit 1; }

dir=$(mktemp -d /tmp/dbeacon-schemathesis.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$bin" serve --db "$dir/st.sqlite" --samples samples --port "$port" --admin-token st-admin-token \
    --write-rate 0 --location-rate 0 --fixes-per-minute 0 --auth-failure-rate 0 --log-level error \
    >"$dir/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; wait $server 2>/dev/null || true; rm -rf "$dir"' EXIT
for _ in $(seq 1 100); do
    python3 -c "import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null && break
    kill -0 $server 2>/dev/null || { cat "$dir/serve.log" >&2; exit 1; }
    sleep 0.1
done

status=0
for token in demo-token-anna st-admin-token; do
    echo "==> schemathesis (all checks, ${seconds}s) as ${token%%-token*}…"
    if ! "$st" run schema/openapi.yaml --url "http://127.0.0.1:$port" -H "Authorization: Bearer $token" \
            --checks all --max-time "$seconds" --seed "$seed" --workers 1 --no-color >"$dir/run.txt" 2>&1; then
        status=1
        cat "$dir/run.txt"
    else
        grep -E "passed|failed|Test cases" "$dir/run.txt" | tail -3
    fi
done
exit $status
