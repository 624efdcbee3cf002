#!/usr/bin/env bash
# Runs schemathesis (PyPI) with every check against a real `dbeacon serve` on a temporary
# SpatiaLite database with the sample data, with a user token, the admin token, and the token of
# a user made for the account lifecycle's operations (which rotate and erase it), for a bounded
# time each; fails on any failure. Part of ./scripts/test.sh.
#
#   scripts/schemathesis.sh                 # uses .build/debug/dbeacon (built by swift test)
#   DBEACON_BIN=.build/release/dbeacon SCHEMATHESIS_SECONDS=300 scripts/schemathesis.sh
#   SCHEMATHESIS_SEED=20261123 scripts/schemathesis.sh   # replay a run's cases
#
# Rate limits are off for this run (they are tested on their own); everything else is as served.
# One worker: hypothesis builds strategies with ast.parse, which CPython 3.11 does not allow from
# two threads at once ("AST constructor recursion depth mismatch").
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${DBEACON_BIN:-.build/debug/dbeacon}"
seconds="${SCHEMATHESIS_SECONDS:-90}"
# A new seed each run, so every run explores new cases (printed: SCHEMATHESIS_SEED=… replays one).
seed="${SCHEMATHESIS_SEED:-$(python3 -c 'import secrets; print(secrets.randbelow(2**31))')}"
echo "==> schemathesis seed $seed (replay with SCHEMATHESIS_SEED=$seed scripts/schemathesis.sh)"
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

# run NAME TOKEN SECONDS [FILTERS…]: one schemathesis pass as the token's owner.
status=0
run() {
    local name=$1 token=$2 secs=$3
    shift 3
    echo "==> schemathesis (all checks, ${secs}s) as ${name}…"
    # Every check, with ensure_resource_availability replaced by a copy that knows a beacon
    # deleted as a beacon is gone from its service's path too (scripts/schemathesis_hooks.py).
    if ! SCHEMATHESIS_HOOKS=scripts/schemathesis_hooks.py "$st" run schema/openapi.yaml --url "http://127.0.0.1:$port" \
            -H "Authorization: Bearer $token" --checks all --exclude-checks ensure_resource_availability \
            --max-time "$secs" --seed "$seed" --workers 1 --no-color "$@" >"$dir/run.txt" 2>&1; then
        status=1
        cat "$dir/run.txt"
    else
        grep -E "passed|failed|Test cases" "$dir/run.txt" | tail -3
    fi
}
# Anna's pass leaves out the two operations that end her token (a rotation, an erasure); the
# admin's covers every operation (its calls on users name ids that do not exist, or 403).
run anna demo-token-anna "$seconds" --exclude-operation-id rotateOwnToken --exclude-operation-id deleteMe
run admin st-admin-token "$seconds"
# The account lifecycle as users of its own: one reads (export, and the admin's operations:
# 403), one rotates and erases its account (after the first rotation or erasure its token is
# refused, 401, as the document says).
new_user() {
    python3 -c "
import json, urllib.request
r = urllib.request.Request('http://127.0.0.1:$port/v1/users', data=b'{\"name\":\"$1\"}', method='POST',
    headers={'Authorization': 'Bearer st-admin-token', 'Content-Type': 'application/json'})
print(json.load(urllib.request.urlopen(r))['token'])"
}
run "a user of its own (accounts)" "$(new_user st-reader)" "$(( seconds / 3 + 1 ))" --include-tag accounts \
    --exclude-operation-id rotateOwnToken --exclude-operation-id deleteMe
run "a user who rotates and erases" "$(new_user st-leaver)" "$(( seconds / 6 + 1 ))" --include-operation-id rotateOwnToken \
    --include-operation-id deleteMe
exit $status
