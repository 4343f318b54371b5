#!/usr/bin/env bash
# Installs what the build and tests need: Debian packages (must succeed) and the
# Python oracle packages used only by tests (optional: tests skip with a notice).
set -u
pkgs="gcc make libcjson-dev libyaml-dev libcmocka-dev zlib1g-dev python3"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "install-deps: installing Debian packages:$missing"
    SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq || { echo "install-deps: apt-get update failed" >&2; exit 1; }
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing \
        || { echo "install-deps: apt-get install failed" >&2; exit 1; }
fi
py=${PYTHON:-python3}
if ! "$py" -c 'import numpy, safetensors, ml_dtypes' 2>/dev/null; then
    echo "install-deps: installing Python test oracles (numpy, safetensors, ml_dtypes) from PyPI"
    "$py" -m pip install -q --disable-pip-version-check numpy safetensors ml_dtypes 2>&1 | grep -v WARNING \
        || true
    "$py" -c 'import numpy, safetensors, ml_dtypes' 2>/dev/null \
        || echo "install-deps: NOTICE: Python oracles unavailable (PyPI unreachable?); oracle tests will be skipped"
fi
exit 0
