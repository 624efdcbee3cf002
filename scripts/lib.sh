# Shared helpers for the scripts in this folder (sourced, not run).

# apt_install PKG…: installs the Debian packages that are missing (root or sudo).
apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "==> installing Debian packages: ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}

# The system libraries DBeacon builds and runs with (and Leaflet, which the map console at /
# serves from Debian's libjs-leaflet).
install_build_dependencies() {
    apt_install libsqlite3-dev libspatialite-dev libgeos-dev libproj-dev libsqlite3-mod-spatialite libjs-leaflet
}

# A virtualenv with the independent references the tests compare against (shapely,
# geographiclib, standardwebhooks from PyPI); exports DBEACON_PYTHON for the test suite.
install_test_references() {
    command -v python3 >/dev/null 2>&1 || apt_install python3 python3-venv
    if [ ! -x .venv-test/bin/python ]; then
        python3 -m venv .venv-test 2>/dev/null || { apt_install python3-venv; rm -rf .venv-test; python3 -m venv .venv-test; }
    fi
    .venv-test/bin/python -m pip install --quiet --disable-pip-version-check -r Tests/Reference/requirements.txt
    export DBEACON_PYTHON="$PWD/.venv-test/bin/python"
}

# start_test_postgres: installs PostgreSQL 15 + PostGIS 3 (Debian packages), starts a
# throwaway cluster in a temporary folder, listening on 127.0.0.1 only (port
# $DBEACON_PG_PORT, default the first free one from 54329), creates the database dbeacon_test with PostGIS and
# exports DBEACON_POSTGRES_URL (the test suite then runs every store and HTTP test on PostGIS
# as well). PostgreSQL refuses to run as root: as root the server runs as the `postgres`
# user. Without fsync (throwaway), unless DBEACON_PG_DURABLE=1. Prints why and returns 1 when
# anything fails; stop it with stop_test_postgres.
start_test_postgres() {
    apt_install postgresql-15 postgresql-15-postgis-3 || { echo "start_test_postgres: cannot install PostgreSQL" >&2; return 1; }
    local bin=/usr/lib/postgresql/15/bin port="${DBEACON_PG_PORT:-}" dir
    # Tests need no durability; DBEACON_PG_DURABLE=1 (benchmarks) keeps PostgreSQL's defaults.
    local durability="-c fsync=off -c synchronous_commit=off"
    [ "${DBEACON_PG_DURABLE:-}" = 1 ] && durability="-c fsync=on -c synchronous_commit=on"
    if [ -z "$port" ]; then # the first free port from 54329 (another cluster may be running)
        for port in $(seq 54329 54349); do
            (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
        done
    fi
    dir=$(mktemp -d /tmp/dbeacon-pg.XXXXXX)
    local as=()
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
        chown postgres "$dir"
        as=(runuser -u postgres --)
    fi
    if ! "${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres --auth=trust -E UTF8 >"$dir/initdb.log" 2>&1; then
        echo "start_test_postgres: initdb failed:" >&2; cat "$dir/initdb.log" >&2; return 1
    fi
    if ! "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 start \
            -o "-c listen_addresses=127.0.0.1 -p $port -k $dir -c max_connections=500 $durability" \
            >/dev/null; then
        echo "start_test_postgres: the server did not start:" >&2; cat "$dir/server.log" >&2; return 1
    fi
    export DBEACON_PG_DIR="$dir"
    local psql=("${as[@]}" "$bin/psql" -h 127.0.0.1 -p "$port" -U postgres -v ON_ERROR_STOP=1 -qAt)
    if ! "${psql[@]}" -d postgres -c "CREATE DATABASE dbeacon_test" || ! "${psql[@]}" -d dbeacon_test -c "CREATE EXTENSION postgis"; then
        echo "start_test_postgres: cannot create the database with PostGIS" >&2; stop_test_postgres; return 1
    fi
    export DBEACON_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/dbeacon_test"
    echo "==> PostgreSQL $("${psql[@]}" -d dbeacon_test -c 'SHOW server_version') with PostGIS" \
         "$("${psql[@]}" -d dbeacon_test -c 'SELECT postgis_lib_version()') at $DBEACON_POSTGRES_URL"
}

# stop_test_postgres: stops the cluster of start_test_postgres and removes its folder.
stop_test_postgres() {
    [ -n "${DBEACON_PG_DIR:-}" ] && [ -d "$DBEACON_PG_DIR/data" ] || return 0
    local as=()
    [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
    "${as[@]}" /usr/lib/postgresql/15/bin/pg_ctl -D "$DBEACON_PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    rm -rf "$DBEACON_PG_DIR"
    unset DBEACON_PG_DIR
}

# run_with_watchdog SECONDS COMMAND…: runs COMMAND; if it is still running after SECONDS, prints
# what it is doing (the thread stacks of every test process, with gdb; the process tree; the
# test database's sessions) and kills it, so a hung test ends the run with a diagnosis
# instead of running into CI's time limit with nothing said. Returns COMMAND's status (124
# when the watchdog ended it).
run_with_watchdog() {
    local limit=$1; shift
    "$@" &
    local pid=$!
    (
        sleep "$limit" & wait $!
        kill -0 "$pid" 2>/dev/null || exit 0
        echo "==> watchdog: '$*' still running after ${limit}s; what it is doing:" >&2
        ps -eo pid,ppid,etimes,pcpu,rss,args --forest >&2 || true
        if command -v gdb >/dev/null 2>&1; then
            for p in $(pgrep -f 'PackageTests.xctest' || true); do
                echo "==> watchdog: thread stacks of $p" >&2
                timeout 120 gdb -p "$p" -batch -ex "thread apply all bt 40" 2>/dev/null \
                    | grep -E '^(Thread|#)' | sed -E 's/ \(.*\) at / at /' | cut -c1-240 >&2 || true
            done
        fi
        if [ -n "${DBEACON_POSTGRES_URL:-}" ] && command -v psql >/dev/null 2>&1; then
            psql "$DBEACON_POSTGRES_URL" -Atc "SELECT pid, state, now() - xact_start, left(query, 300) FROM pg_stat_activity WHERE datname = current_database()" >&2 || true
        fi
        echo "==> watchdog: ending it" >&2
        pkill -KILL -f 'PackageTests.xctest' || true
        kill -KILL "$pid" 2>/dev/null || true
    ) &
    local watchdog=$!
    local status=0
    wait "$pid" || status=$?
    pkill -P "$watchdog" sleep 2>/dev/null || true
    kill "$watchdog" 2>/dev/null || true
    wait "$watchdog" 2>/dev/null || true
    [ "$status" -eq 137 ] && status=124
    return "$status"
}

# wait_for_index PORT [SECONDS]: waits until the server on 127.0.0.1:PORT answers /metrics
# (with the bench's admin token) and has prepared every polygon of its index; returns 1 after
# SECONDS (default 900) without that.
wait_for_index() {
    local port=$1 limit=${2:-900}
    for _ in $(seq 1 "$limit"); do
        if curl -sf -H "Authorization: Bearer bench-admin-token" "http://127.0.0.1:$port/metrics" 2>/dev/null |
            awk '$1 ~ /^dbeacon_index_pending_polygons/ && $2 + 0 == 0 { ok = 1 } END { exit !ok }'; then return 0; fi
        sleep 1
    done
    return 1
}
