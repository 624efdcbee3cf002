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

# The system libraries DBeacon builds and runs with.
install_build_dependencies() {
    apt_install libsqlite3-dev libspatialite-dev libgeos-dev libsqlite3-mod-spatialite
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
