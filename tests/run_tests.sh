#!/usr/bin/env bash
# Runs every CMocka test binary and every Python oracle test; prints one
# "N passed, N failed" line at the end and exits non-zero on any failure.
set -u
build=${HC_BUILD:-build}
export HC_BUILD=$build HC_SHARED_DIR=${HC_SHARED_DIR:-$(cd .. && pwd)/shared}
export HC_CLI=$build/humming-convert
py=${PYTHON:-python3}
passed=0; failed=0; skipped=0; failures=""
for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    echo "=== $(basename "$t")"
    if "$t"; then passed=$((passed+1)); else failed=$((failed+1)); failures="$failures $(basename "$t")"; fi
done
# GPU sweep (docs/kernels.md): prints a skip notice where no GPU/driver/kernels exist
if [ -x "$build/tests/gpu/hc_gpu_sweep" ]; then
    echo "=== hc_gpu_sweep --quick"
    if "$build/tests/gpu/hc_gpu_sweep" --quick; then passed=$((passed+1)); else failed=$((failed+1)); failures="$failures hc_gpu_sweep"; fi
fi
if [ -z "${HC_SKIP_PYTHON:-}" ]; then
    if "$py" -c 'import numpy, safetensors, ml_dtypes' 2>/dev/null; then
        for t in tests/py/test_*.py; do
            [ -f "$t" ] || continue
            echo "=== $(basename "$t")"
            if "$py" "$t"; then passed=$((passed+1)); else failed=$((failed+1)); failures="$failures $(basename "$t")"; fi
        done
    else
        echo "NOTICE: numpy/safetensors/ml_dtypes not importable (PyPI unreachable?): Python oracle tests skipped"
        skipped=$((skipped + $(ls tests/py/test_*.py 2>/dev/null | wc -l)))
    fi
fi
[ -n "$failures" ] && echo "failed suites:$failures"
echo "suites: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
