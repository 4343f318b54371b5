#!/usr/bin/env bash
# make demo: generate the bundled example model (a small Llama-shaped fp16
# checkpoint with an MoE block), quantize it with the shipped Llama recipe for
# the H200 (sm90), verify every layer and write the accuracy report; then
# repack a Humming-format copy losslessly for an Ada GPU with fp8 activations.
set -euo pipefail
build=${1:-build}
out=${HC_DEMO_DIR:-build/demo}
rm -rf "$out"
mkdir -p "$out"
"$build/examples/gen_example_model" "$out/example-fp16" --format float16
"$build/humming-convert" "$out/example-fp16" "$out/example-w4a16-sm90" \
    --recipe recipes/llama.yaml --arch sm90
"$build/examples/gen_example_model" "$out/example-humming" --format humming
"$build/humming-convert" "$out/example-humming" "$out/example-sm89-fp8" -q \
    --arch sm89 --activation float8e4m3
"$build/humming-convert" report "$out/example-w4a16-sm90" -q
echo
echo "demo: quantized model:   $out/example-w4a16-sm90"
echo "demo: accuracy report:   $out/example-w4a16-sm90/humming_report.{html,md,json}"
echo "demo: lossless repack:   $out/example-sm89-fp8 (Humming-format input, fp8 activations)"
ls -l "$out/example-w4a16-sm90"
