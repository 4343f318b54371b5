#!/usr/bin/env bash
# Runs every CMocka test binary, the GPU sweep and every Python oracle test,
# then prints one summary line "tests: N passed, N failed, N skipped" counting
# CMocka test cases and whole Python / GPU suites.
#
# Skips are honest: a test that cannot run what it exists to check prints
# "SKIP[kind]: reason" and is counted as skipped (CMocka skip(), or exit 77 for
# a whole suite). The run fails on any skip whose kind is not listed in
# HC_ALLOW_SKIPS (default "gpu isa": this machine may have no GPU, and a CPU
# without AVX-512 or AVX2 runs only the portable forms, so there is no second
# form to compare; the golden vectors, the pinned Python oracles, PyPI and
# tmpfs mounts must be there).
# Exits non-zero on any failure or disallowed skip.
set -u
build=${HC_BUILD:-build}
export HC_BUILD=$build HC_SHARED_DIR=${HC_SHARED_DIR:-$(cd .. && pwd)/shared}
export HC_CLI=$build/humming-convert
allow=" ${HC_ALLOW_SKIPS:-gpu isa} "
allow=${allow//,/ }
py=${PYTHON:-python3}
log=$(mktemp); trap 'rm -f "$log"' EXIT
passed=0; failed=0; skipped=0; failures=""; skip_kinds=""

# Counts one suite from its exit code and output (in $log).
tally() { # name rc cmocka(0|1)
    local name=$1 rc=$2 cm=$3 p=0 f=0 s=0
    if [ "$cm" = 1 ]; then
        p=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) test(s)\.$/\1/p' "$log" | tail -n1)
        f=$(sed -n 's/^\[  FAILED  \] \([0-9]*\) test(s), listed below:$/\1/p' "$log" | tail -n1)
        s=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) test(s), listed below:$/\1/p' "$log" | tail -n1)
        p=${p:-0}; f=${f:-0}; s=${s:-0}
        # a crash or an exit before CMocka's summary is one failure
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi
    elif [ "$rc" -eq 0 ]; then p=1
    elif [ "$rc" -eq 77 ]; then s=1
    else f=1
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    [ "$f" -gt 0 ] && failures="$failures $name"
    local kinds
    kinds=$(sed -n 's/^SKIP\[\([a-z]*\)\]: .*/\1/p' "$log" | sort -u | tr '\n' ' ')
    if [ "$s" -gt 0 ] && [ -z "$kinds" ]; then kinds="unexplained "; fi
    for k in $kinds; do skip_kinds="$skip_kinds $k:$name"; done
}

run_suite() { # name cmocka(0|1) command...
    local name=$1 cm=$2; shift 2
    echo "=== $name"
    "$@" 2>&1 | tee "$log"
    tally "$name" "${PIPESTATUS[0]}" "$cm"
}

for t in "$build"/tests/test_*; do
    [ -x "$t" ] || continue
    run_suite "$(basename "$t")" 1 "$t"
done
[ -x "$build/tests/gpu/hc_gpu_sweep" ] && run_suite hc_gpu_sweep 0 "$build/tests/gpu/hc_gpu_sweep" --quick
[ -x "$HC_CLI" ] && run_suite verify_presets_gpu 0 bash tests/gpu/run_verify_presets.sh "$build" sm90
# the layer rule of lib/README.md (Python standard library and nm only)
run_suite check_layers_selftest 0 "$py" tests/check_layers.py --self-test
run_suite check_layers 0 "$py" tests/check_layers.py . "$build"
if [ -n "${HC_SKIP_PYTHON:-}" ]; then
    echo "NOTICE: HC_SKIP_PYTHON set: Python oracle suites not run in this pass"
else
    for t in tests/py/test_*.py; do
        [ -f "$t" ] || continue
        run_suite "$(basename "$t")" 0 "$py" "$t"
    done
fi

bad_skips=""
for ks in $skip_kinds; do
    case "$allow" in *" ${ks%%:*} "*) ;; *) bad_skips="$bad_skips $ks" ;; esac
done
[ -n "$skip_kinds" ] && echo "skipped (kind:suite):$skip_kinds"
[ -n "$failures" ] && echo "failed suites:$failures"
if [ -n "$bad_skips" ]; then
    echo "ERROR: checks that must run here were skipped:$bad_skips"
    echo "       (install what they need, e.g. ../shared/golden, tests/requirements.txt; or list the kind in HC_ALLOW_SKIPS)"
fi
echo "tests: $passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ] && [ -z "$bad_skips" ]
