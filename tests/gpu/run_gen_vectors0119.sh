#!/usr/bin/env bash
# Makes the reference vectors of tests/fixtures/humming0119 with the real humming-kernels
# 0.1.19 (tests/gpu/gen_vectors0119.py; README there). Run from the repository root on a
# GPU machine (sm90) with torch and safetensors installed:
#   tests/gpu/run_gen_vectors0119.sh WHEEL_DIR OUT_DIR [NAME ...]
# WHEEL_DIR holds humming_kernels-0.1.19-*.whl (never committed).
set -u
w=$(cd "$1" && pwd) || exit 1
out=$2; shift 2
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$w"/humming_kernels-0.1.19-*.whl || exit 1
PYTHONPATH=/tmp/site python3 "$(dirname "$0")/gen_vectors0119.py" "$out" "$@"
