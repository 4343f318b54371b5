#!/usr/bin/env bash
# Runs each fuzz target FUZZ_SECONDS seconds (default 60), one after another,
# starting from the seed corpus tests/corpus/<target>/. New inputs go to
# $FUZZ_BUILD/corpus/<target>/ (not committed); crashes, leaks, timeouts and
# sanitizer reports to $FUZZ_BUILD/artifacts/<target>/. Prints libFuzzer's final
# stats per target and exits non-zero if any target reported a finding.
set -u
b=${FUZZ_BUILD:-build-fuzz}
secs=${FUZZ_SECONDS:-60}
status=0
summary=""
for t in "$@"; do
    mkdir -p "$b/corpus/$t" "$b/artifacts/$t" tests/corpus/$t
    log="$b/fuzz_$t.$(date +%Y%m%d-%H%M%S).log"
    echo "=== fuzz_$t: ${secs}s (log $log)"
    ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
        "$b/fuzz_$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$b/artifacts/$t/" \
        "$b/corpus/$t" "tests/corpus/$t" >"$log" 2>&1
    rc=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    cov=$(grep -o 'cov: [0-9]* ft: [0-9]*' "$log" | tail -1)
    if [ "$rc" -ne 0 ]; then
        status=1
        echo "fuzz_$t: FINDING (exit $rc); see $log and $b/artifacts/$t/"
        grep -m3 -E 'ERROR|runtime error|contract violated|SUMMARY' "$log"
    fi
    summary="$summary
fuzz_$t: ${execs:-?} executions, ${cov:-cov ?}, exit $rc"
done
echo "--- fuzz summary (${secs}s per target)$summary"
exit $status
