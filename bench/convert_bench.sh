#!/usr/bin/env bash
# make bench: conversion speed and memory of humming-convert on a generated
# fp16 checkpoint of about 2.2 GB (6 Llama-7B-sized layers), against the time
# to read the same bytes (cat to /dev/null) measured in the same run, and peak
# RSS against the largest single tensor. Prints ratios; no pass/fail.
set -euo pipefail
build=${1:-build}
dir=${HC_BENCH_DIR:-build/bench}
layers=${HC_BENCH_LAYERS:-6}
command -v /usr/bin/time >/dev/null || { echo "bench: needs GNU time (apt-get install time)"; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
echo "bench: generating a $layers-layer fp16 checkpoint (hidden 4096, intermediate 11008)"
"$build/examples/gen_example_model" "$dir/in" --format float16 --hidden 4096 \
    --intermediate 11008 --layers "$layers" --experts 0 >/dev/null
bytes=$(stat -c %s "$dir/in/model.safetensors")
largest=$((4096 * 11008 * 2))

seconds() { # runs "$@" under GNU time; prints "wall_seconds max_rss_kb"
    /usr/bin/time -f "%e %M" -o "$dir/time.txt" "$@" >/dev/null 2>"$dir/stderr.txt" \
        || { cat "$dir/stderr.txt"; exit 1; }
    cat "$dir/time.txt"
}
cat "$dir/in/model.safetensors" >/dev/null # warm the page cache, as for every run below
read -r t_cat _ < <(seconds cat "$dir/in/model.safetensors")
printf "%-34s %8s %10s %12s %14s\n" run seconds "MB/s" "x cat time" "peak RSS/MB"
printf "%-34s %8.2f %10.0f %12s %14s\n" "cat model.safetensors" "$t_cat" \
    "$(echo "$bytes / 1000000 / ($t_cat + 0.001)" | bc -l)" "1.00" "-"
run() { # label, humming-convert arguments
    local label=$1; shift
    rm -rf "$dir/out"
    read -r t rss < <(seconds "$build/humming-convert" "$dir/in" "$dir/out" -q "$@")
    printf "%-34s %8.2f %10.0f %12.2f %14.1f  (%.2f x largest tensor)\n" "$label" "$t" \
        "$(echo "$bytes / 1000000 / ($t + 0.001)" | bc -l)" "$(echo "$t / ($t_cat + 0.001)" | bc -l)" \
        "$(echo "$rss / 1024" | bc -l)" "$(echo "$rss * 1024 / $largest" | bc -l)"
}
run "w4a16, --verify off" --format w4a16 --verify off
run "w4a16, verify on CPU (16 tokens)" --format w4a16 --verify cpu
run "nvfp4, --verify off" --format nvfp4 --verify off
if [ -n "${HC_BENCH_MSE:-}" ]; then # 51 clip ratios per group: about 50x rtn's work
    run "w4a16 mse, --verify off" --format w4a16 --quantizer mse --verify off
fi
echo "input: $((bytes / 1000000)) MB, largest tensor: $((largest / 1000000)) MB, $(nproc) cores"
