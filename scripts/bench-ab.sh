#!/usr/bin/env bash
# Two builds side by side, for a step too small for the bench's ratios to show (their spread
# between runs is some ±4 %): the base build serves the bench's city, the new one a copy of it,
# both at once, and `wrk` loads them in turn, A B B A A B…, with the same walks, in the same
# minutes. Prints each round's requests/s and each server's CPU per request (from /proc), then
# the means without the first round (warm-up).
#
#   scripts/bench-ab.sh BASE_DBEACON NEW_DBEACON [load] [connections] [rounds] [beacons]
#   scripts/bench-ab.sh /tmp/base/dbeacon .build/release/dbeacon owntracks 64 9 1000000
#
# load is one of the bench's wrk scripts (owntracks, fixes, full, lean, healthz, regions), made
# by a run of `dbeacon-bench --beacons N --reuse --peers` (which also makes the city). Run A/A
# (the same binary twice) first to see the two servers' own difference. Traffic goes to
# 127.0.0.1 only.
#
# AB_PERIMETER_TEXT_B=formatted serves B from a copy whose index keeps large perimeters' GeoJSON
# as text (`--perimeter-text formatted`; its copy is made without the index, which B's first start
# builds: some 9 GB at 1M), to compare the two forms (the same binary on both sides).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib.sh
[ $# -ge 2 ] || { sed -n 2,14p "$0"; exit 2; }
base_bin=$(realpath "$1"); new_bin=$(realpath "$2")
load=${3:-owntracks}; connections=${4:-64}; rounds=${5:-9}; beacons=${6:-1000000}
seconds=5; port_a=18191; port_b=18192
perimeter_b=${AB_PERIMETER_TEXT_B:-hinted}
case $perimeter_b in hinted|formatted) ;; *) echo "bench-ab: AB_PERIMETER_TEXT_B must be hinted or formatted" >&2; exit 2 ;; esac
city=data/bench/bench-$beacons-2026.sqlite
script=data/bench/peers-$beacons/$load.lua
[ -f "$city" ] && [ -f "$script" ] || {
    echo "bench-ab: $city or $script missing: run dbeacon-bench --beacons $beacons --reuse --peers first" >&2; exit 1; }
command -v wrk >/dev/null || { echo "bench-ab: wrk missing (apt-get install wrk)" >&2; exit 1; }

# The copy, with the index snapshot, made once (remove data/bench/ab-copy for a new one: both
# servers write to their city, so neither stays newer than the other).
copies=data/bench/ab-copy
[ "$perimeter_b" = hinted ] || copies=data/bench/ab-copy-$perimeter_b
copy=$copies/bench-$beacons.sqlite
mkdir -p "$copies"
if [ ! -f "$copy" ]; then
    echo "==> copying the city to $copy" >&2
    rm -rf "$copy"-* "$copy".index
    cp --reflink=auto "$city" "$copy"
    # The index goes with it when both sides keep the same form; else B builds its own.
    if [ -e "$city.index" ] && [ "$perimeter_b" = hinted ]; then cp -r --reflink=auto "$city.index" "$copy.index"; fi
fi

pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; wait 2>/dev/null || true; }
trap cleanup EXIT
start() { # BIN DB PORT PERIMETER_TEXT
    "$1" serve --db "$2" --port "$3" --admin-token bench-admin-token --log-level warning --perimeter-text "$4" \
        --max-connections 12000 --max-connections-per-client 0 \
        --location-rate 0 --fixes-per-minute 0 --write-rate 0 >"$copies/server-$3.log" 2>&1 &
    pids+=($!)
}
ready() { # PORT: up, and every polygon of the index prepared
    wait_for_index "$1" ||
        { echo "bench-ab: the server on port $1 did not get ready (see $copies/server-$1.log)" >&2; exit 1; }
}
start "$base_bin" "$city" $port_a hinted; pid_a=${pids[0]}
start "$new_bin" "$copy" $port_b "$perimeter_b"; pid_b=${pids[1]}
ready $port_a; ready $port_b
echo "==> A: $base_bin on $city; B: $new_bin on $copy ($perimeter_b perimeter text); $load, $connections connections, $rounds rounds of $seconds s" >&2

cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; }  # user + system, in clock ticks
ticks=$(getconf CLK_TCK)
out=$(mktemp)
for r in $(seq 1 "$rounds"); do
    # A B, then B A: neither side always runs second.
    if [ $((r % 2)) -eq 1 ]; then order="a b"; else order="b a"; fi
    for side in $order; do
        if [ $side = a ]; then port=$port_a; pid=$pid_a; else port=$port_b; pid=$pid_b; fi
        c0=$(cpu "$pid")
        report=$(wrk -t1 -c"$connections" -d${seconds}s --latency -s "$script" "http://127.0.0.1:$port")
        rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$report")
        # p99 in ms (wrk prints it in us, ms or s)
        p99=$(awk '$1 == "99%" { v = $2 + 0; if ($2 ~ /us$/) v /= 1000; else if ($2 ~ /[0-9]s$/) v *= 1000; print v }' <<<"$report")
        c1=$(cpu "$pid")
        echo "$r $side $rps $c0 $c1 ${p99:-nan}" >>"$out"
    done
done
python3 - "$out" "$ticks" "$seconds" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
ticks, seconds = float(sys.argv[2]), float(sys.argv[3])
sides = {"a": [], "b": []}
print("| round | A req/s | B req/s | A CPU/req (µs) | B CPU/req (µs) | A p99 (ms) | B p99 (ms) |")
print("|---:|---:|---:|---:|---:|---:|---:|")
by_round = {}
for r, side, rps, c0, c1, p99 in rows:
    rps = float(rps)
    cpu_us = (float(c1) - float(c0)) / ticks * 1e6 / max(1.0, rps * seconds)
    by_round.setdefault(int(r), {})[side] = (rps, cpu_us, float(p99))
    if int(r) > 1:
        sides[side].append((rps, cpu_us, float(p99)))
for r in sorted(by_round):
    a, b = by_round[r]["a"], by_round[r]["b"]
    print(f"| {r} | {a[0]:,.0f} | {b[0]:,.0f} | {a[1]:.0f} | {b[1]:.0f} | {a[2]:.1f} | {b[2]:.1f} |")
mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
ra, rb = mean([x[0] for x in sides["a"]]), mean([x[0] for x in sides["b"]])
ca, cb = mean([x[1] for x in sides["a"]]), mean([x[1] for x in sides["b"]])
pa, pb = mean([x[2] for x in sides["a"]]), mean([x[2] for x in sides["b"]])
print(f"\nwithout round 1: A {ra:,.0f} req/s, B {rb:,.0f} req/s, B ÷ A {rb / ra:.3f}; "
      f"CPU per request A {ca:.0f} µs, B {cb:.0f} µs; mean p99 A {pa:.1f} ms, B {pb:.1f} ms")
EOF
