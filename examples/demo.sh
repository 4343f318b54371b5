#!/usr/bin/env bash
# make demo: generate the example model (Humming format) and convert it for
# the H200 (sm90) and for an Ampere GPU (sm80), printing the plan.
set -euo pipefail
build=${1:-build}
out=${HC_DEMO_DIR:-build/demo}
rm -rf "$out"
mkdir -p "$out"
"$build/examples/gen_example_model" "$out/example-humming" --format humming
"$build/humming-convert" "$out/example-humming" "$out/example-sm90" --arch sm90
"$build/humming-convert" "$out/example-humming" "$out/example-sm89-fp8" --arch sm89 --activation float8e4m3
echo "demo: accuracy reports: $out/example-sm90/humming_report.{json,html,md}"
"$build/humming-convert" report "$out/example-sm90" -q && echo "demo: report re-verified"
echo "demo: outputs in $out/example-sm90 and $out/example-sm89-fp8:"
ls -l "$out/example-sm90"
