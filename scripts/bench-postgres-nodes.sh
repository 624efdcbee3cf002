#!/usr/bin/env bash
# The scale-out path, measured: one PostgreSQL + PostGIS (fsync on) and two `dbeacon serve`
# nodes on this machine, with the synthetic city of `dbeacon bench`.
#
#   scripts/bench-postgres-nodes.sh [--beacons 100000] [--duration 10] [--connections 64]
#
# Prints: the copy of the city into PostgreSQL, durable location fixes per second through both
# nodes at once (with the events they produced), nearby answers per second through both, and how
# long a beacon created on one node takes to be answered by the other (median and worst of 20).
# DBEACON_FENCE_BATCH=1 makes the nodes decide fixes one transaction each (no group commit).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh

beacons=100000 duration=10 connections=64
while [ $# -gt 0 ]; do
    case "$1" in
        --beacons) beacons="$2"; shift 2 ;;
        --duration) duration="$2"; shift 2 ;;
        --connections) connections="$2"; shift 2 ;;
        *) echo "usage: $0 [--beacons N] [--duration S] [--connections C]" >&2; exit 2 ;;
    esac
done
work="${DBEACON_BENCH_DIR:-./data/bench}"
mkdir -p "$work"
apt_install wrk curl >/dev/null
swift build -c release --product dbeacon >/dev/null
swift build -c release --product dbeacon-bench >/dev/null
db="$work/bench-$beacons-2026.sqlite"
if [ ! -f "$db" ]; then
    echo "==> generating the city of $beacons beacons (SQLite, kept in $work)"
    .build/release/dbeacon-bench --beacons "$beacons" --reuse --skip-http --skip-sql --skip-fixes --skip-lookups \
        --streams 0 --workdir "$work" >/dev/null
fi

DBEACON_PG_DURABLE=1 start_test_postgres
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    stop_test_postgres
}
trap cleanup EXIT
url="$DBEACON_POSTGRES_URL"
psql=(/usr/lib/postgresql/15/bin/psql "$url" -qAt)
[ "$(id -u)" -eq 0 ] && psql=(runuser -u postgres -- "${psql[@]}")

started=$SECONDS
.build/release/dbeacon migrate --from "$db" --to "$url" >/dev/null
migrate_s=$((SECONDS - started))

ports=(18191 18192)
for port in "${ports[@]}"; do
    .build/release/dbeacon serve --db "$url" --port "$port" --admin-token bench-admin-token --log-level warning \
        --max-connections 4000 --max-connections-per-client 0 --location-rate 0 --fixes-per-minute 0 --write-rate 0 ${DBEACON_NODE_FLAGS:-} \
        >"$work/node-$port.log" 2>&1 &
    pids+=($!)
done
for port in "${ports[@]}"; do
    for _ in $(seq 600); do curl -fs "http://127.0.0.1:$port/healthz" >/dev/null && break; sleep 0.2; done
    curl -fs "http://127.0.0.1:$port/healthz" >/dev/null || { echo "node $port did not start:" >&2; cat "$work/node-$port.log" >&2; exit 1; }
done
# Measured once both indexes are prepared (large polygons' rasters and text are built in the background).
for port in "${ports[@]}"; do
    for _ in $(seq 600); do
        curl -fs -H "Authorization: Bearer bench-admin-token" "http://127.0.0.1:$port/metrics" \
            | grep -Eq '^dbeacon_index_pending_polygons(_count)? 0(\.0)?$' && break
        sleep 0.5
    done
done

# Random walks of the city's 1,000 users (20 m steps), as the in-process fix bench makes them.
cat >"$work/fixes.lua" <<'LUA'
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
local pos = {}
wrk.method = "POST"
request = function()
  local u = math.random(0, 999)
  local p = pos[u]
  if p == nil then
    p = {48.78 + (math.random() * 2 - 1) * 0.4491, 9.18 + (math.random() * 2 - 1) * 0.6816}
    pos[u] = p
  end
  local a = math.random() * 2 * math.pi
  p[1] = p[1] + 20 / 111320 * math.sin(a)
  p[2] = p[2] + 20 / 73400 * math.cos(a)
  local body = string.format('{"lat":%.7f,"lon":%.7f,"accuracy_m":10}', p[1], p[2])
  return wrk.format("POST", "/v1/me/location",
    {["Authorization"] = "Bearer bench-token-" .. u, ["Content-Type"] = "application/json"}, body)
end
LUA
cat >"$work/nearby-nodes.lua" <<'LUA'
math.randomseed(os.time() + math.floor(os.clock() * 1e6))
request = function()
  local lat = 48.78 + (math.random() * 2 - 1) * 0.4491
  local lon = 9.18 + (math.random() * 2 - 1) * 0.6816
  return wrk.format("GET", string.format("/v1/nearby?lat=%.6f&lon=%.6f&limit=20", lat, lon),
    {["Authorization"] = "Bearer bench-token-" .. math.random(0, 49)})
end
LUA

# Both nodes at once, each with its own wrk; prints "sum_rps max_p99_ms".
both() {
    local script="$1" out=()
    for port in "${ports[@]}"; do
        wrk -t1 -c"$connections" -d"${duration}s" --latency -s "$script" "http://127.0.0.1:$port" >"$work/wrk-$port.txt" 2>&1 &
        out+=($!)
    done
    wait "${out[@]}"
    python3 - "$work/wrk-${ports[0]}.txt" "$work/wrk-${ports[1]}.txt" <<'PY'
import re, sys
rps, p99 = 0.0, 0.0
for path in sys.argv[1:]:
    text = open(path).read()
    rps += float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))
    m = re.search(r"99%\s+([\d.]+)(us|ms|s)\b", text)
    v = float(m.group(1)) * {"us": 0.001, "ms": 1, "s": 1000}[m.group(2)]
    p99 = max(p99, v)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
    if errors: print(f"warning: {errors.group(1)} error responses in {path}", file=sys.stderr)
print(f"{rps:.0f} {p99:.2f}")
PY
}

events_before=$("${psql[@]}" -c "SELECT count(*) FROM events")
read -r fixes fixes_p99 < <(both "$work/fixes.lua")
events_after=$("${psql[@]}" -c "SELECT count(*) FROM events")
events_per_s=$(( (events_after - events_before) / duration ))
read -r nearby nearby_p99 < <(both "$work/nearby-nodes.lua")

# A beacon created through one node, answered by the other: 20 times, alternating.
propagation=$(python3 - "${ports[@]}" <<'PY'
import http.client, json, random, sys, time
ports = [int(p) for p in sys.argv[1:]]
random.seed(7)
ms = []
for i in range(20):
    a, b = (ports[0], ports[1]) if i % 2 == 0 else (ports[1], ports[0])
    lat, lon = 48.78 + random.uniform(-0.4, 0.4), 9.18 + random.uniform(-0.6, 0.6)
    token = f"bench-token-{i}"
    body = json.dumps({"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]},
                       "properties": {"name": f"propagation {i}", "perimeter": {"type": "Circle", "radius_m": 30}}})
    ca, cb = http.client.HTTPConnection("127.0.0.1", a), http.client.HTTPConnection("127.0.0.1", b)
    ca.request("POST", "/v1/beacons", body, {"Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    r = ca.getresponse(); created = json.loads(r.read())
    assert r.status == 201, created
    start = time.monotonic()
    while True:
        cb.request("GET", f"/v1/nearby?lat={lat}&lon={lon}&perimeter=none", headers={"Authorization": f"Bearer {token}"})
        seen = [f["id"] for f in json.loads(cb.getresponse().read())["features"]]
        if created["id"] in seen: break
        if time.monotonic() - start > 10: raise SystemExit("not seen on the other node within 10 s")
    ms.append((time.monotonic() - start) * 1000)
ms.sort()
print(f"{ms[len(ms) // 2]:.1f} {ms[-1]:.1f}")
PY
)
read -r prop_median prop_max <<<"$propagation"

cat <<TABLE
two dbeacon serve nodes on PostgreSQL $("${psql[@]}" -c 'SHOW server_version') + PostGIS (fsync on), $beacons beacons
copy of the city into PostgreSQL (dbeacon migrate) $migrate_s s
durable fixes/s, both nodes ($connections connections each)   $fixes (p99 $fixes_p99 ms), $events_per_s events/s
HTTP nearby full, both nodes                     $nearby req/s (p99 $nearby_p99 ms)
created on one node → answered by the other      median $prop_median ms, worst $prop_max ms (20 beacons)
TABLE
