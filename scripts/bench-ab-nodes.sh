#!/usr/bin/env bash
# Two builds side by side on the scale-out path: one PostgreSQL + PostGIS (fsync on) holding a
# copy of the bench's city, and in turn two `dbeacon serve` nodes of each build on it, A B B A
# A B…, each round with fresh nodes, a 5 s warm-up and then `wrk` (the bench's fixes walks, half
# of the connections on each node) for the round's seconds. Prints each round's fixes per second,
# p99 and CPU per fix (the two nodes', and PostgreSQL's: its processes' user + system time from
# /proc over the measured load, divided by the fixes answered), then each build's means and the
# new ÷ base ratios. CPU per fix spreads much less than fixes per second between rounds (the
# machine is saturated either way), so a step too small for the rate shows there. Traffic goes to
# 127.0.0.1 only.
#
#   scripts/bench-ab-nodes.sh BASE_DBEACON NEW_DBEACON [rounds] [beacons] [connections] [seconds]
#   scripts/bench-ab-nodes.sh /tmp/base/dbeacon .build/release/dbeacon 6 100000
#
# The city and the walks come from a run of `dbeacon-bench --beacons N --reuse --peers`.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 2 ] || { sed -n 2,13p "$0"; exit 2; }
base_bin=$(realpath "$1"); new_bin=$(realpath "$2")
rounds=${3:-6}; beacons=${4:-100000}; connections=${5:-256}; seconds=${6:-16}
city=data/bench/bench-$beacons-2026.sqlite
script=data/bench/peers-$beacons/fixes.lua
[ -f "$city" ] && [ -f "$script" ] || {
    echo "bench-ab-nodes: $city or $script missing: run dbeacon-bench --beacons $beacons --reuse --peers first" >&2; exit 1; }
source scripts/lib.sh
apt_install wrk curl >/dev/null
DBEACON_PG_DURABLE=1 start_test_postgres >&2
scratch=$(mktemp -d /tmp/dbeacon-ab-nodes.XXXXXX)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    stop_test_postgres
    rm -rf "$scratch"
}
trap cleanup EXIT

# Both builds write to the same copy, so neither keeps a fresher database than the other.
url="$DBEACON_POSTGRES_URL?schema=ab_nodes"
cp --reflink=auto "$city" "$scratch/city.sqlite"
"$new_bin" migrate --from "$scratch/city.sqlite" --to "$url" >"$scratch/migrate.log" 2>&1 ||
    { cat "$scratch/migrate.log" >&2; exit 1; }

ready() { # PORT: up, and every polygon of the index prepared
    wait_for_index "$1" 600 ||
        { echo "bench-ab-nodes: the node on port $1 did not get ready (see $scratch/node-$1.log)" >&2; exit 1; }
}
load() { # SECONDS LATENCY…: wrk on both nodes at once; prints "rate p99_ms"
    local each=$((connections / 2)) w=()
    for port in 18301 18302; do
        wrk -t1 -c"$each" -d"$1s" --latency -s "$script" "http://127.0.0.1:$port" >"$scratch/wrk-$port.txt" &
        w+=($!)
    done
    wait "${w[@]}"
    cat "$scratch"/wrk-1830[12].txt | awk '
        /Requests\/sec/ { rate += $2 }
        $1 == "99%" { v = $2; ms = v + 0; if (v ~ /us$/) ms /= 1000; else if (v ~ /[^m]s$/) ms *= 1000; if (ms > p99) p99 = ms }
        END { printf "%.0f %.1f\n", rate, p99 }'
}
ticks() { # PID…: their user + system CPU in clock ticks (a process gone meanwhile counts 0)
    local total=0 p v
    for p in "$@"; do
        v=$(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null) || v=0
        total=$((total + ${v:-0}))
    done
    echo "$total"
}
hz=$(getconf CLK_TCK)
round() { # BIN: two fresh nodes, warm-up, one measured load; prints "rate p99 node_us pg_us"
    local bin=$1 nodes=()
    for port in 18301 18302; do
        "$bin" serve --db "$url" --port $port --admin-token bench-admin-token --log-level warning --perimeter-text hinted \
            --max-connections 12000 --max-connections-per-client 0 \
            --location-rate 0 --fixes-per-minute 0 --write-rate 0 --exit-with-parent >"$scratch/node-$port.log" 2>&1 &
        nodes+=($!); pids+=($!)
    done
    ready 18301; ready 18302
    load 5 >/dev/null
    # The cluster's processes now: the postmaster and its children (the nodes' backends among them).
    local postmaster pg n0 g0 out
    postmaster=$(head -1 "$DBEACON_PG_DIR/data/postmaster.pid")
    pg=("$postmaster" $(pgrep -P "$postmaster"))
    n0=$(ticks "${nodes[@]}"); g0=$(ticks "${pg[@]}")
    out=$(load "$seconds")
    local n1 g1
    n1=$(ticks "${nodes[@]}"); g1=$(ticks "${pg[@]}")
    kill "${nodes[@]}"; wait "${nodes[@]}" 2>/dev/null || true
    echo "$out" | awk -v n="$((n1 - n0))" -v g="$((g1 - g0))" -v hz="$hz" -v s="$seconds" '
        { fixes = $1 * s; if (fixes < 1) fixes = 1
          printf "%s %s %.0f %.0f\n", $1, $2, n / hz * 1e6 / fixes, g / hz * 1e6 / fixes }'
}

echo "==> A: $base_bin, B: $new_bin; two nodes each, $connections connections, $rounds rounds of $seconds s" >&2
a=() b=()
for r in $(seq 1 "$rounds"); do
    # A B, B A, A B…: neither build always runs first.
    if [ $((r % 2)) -eq 1 ]; then order="A B"; else order="B A"; fi
    for side in $order; do
        if [ "$side" = A ]; then out=$(round "$base_bin"); a+=("$out"); else out=$(round "$new_bin"); b+=("$out"); fi
        read -r rate p99 node_us pg_us <<<"$out"
        echo "round $r $side: $rate fixes/s, p99 $p99 ms, CPU per fix: nodes $node_us µs, PostgreSQL $pg_us µs"
    done
done
printf '%s\n' "${a[@]}" >"$scratch/a"; printf '%s\n' "${b[@]}" >"$scratch/b"
paste -d' ' "$scratch/a" "$scratch/b" | awk '
    # columns: A rate p99 node pg, B rate p99 node pg
    { sa += $1; sb += $5; rs = rs sprintf(" %.2f", $5 / $1)
      na += $3; nb += $7; ga += $4; gb += $8; cs = cs sprintf(" %.2f", ($7 + $8) / ($3 + $4)) }
    END {
        printf "A mean %.0f, B mean %.0f fixes/s; B ÷ A %.3f (per round:%s)\n", sa / NR, sb / NR, sb / sa, rs
        printf "CPU per fix: A nodes %.0f + PostgreSQL %.0f µs, B nodes %.0f + PostgreSQL %.0f µs; B ÷ A %.3f (per round:%s)\n",
            na / NR, ga / NR, nb / NR, gb / NR, (nb + gb) / (na + ga), cs }'
