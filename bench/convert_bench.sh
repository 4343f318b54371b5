#!/usr/bin/env bash
# make bench: conversion speed and memory of humming-convert against the time
# to read the same bytes (cat to /dev/null, page cache warm) measured in the
# same run, and peak RSS against the largest single tensor. Two inputs:
#   512mib: 4 fp16 tensors of 4096 x 16384 (and the same shapes as GPTQ
#           uint4 g128, for the lossless repack);
#   7b:     Llama-2-7B-shaped fp16 (its real tensor shapes, embedding and
#           lm_head included), HC_BENCH_LAYERS layers (default 2 of the real
#           32: disk and time on the 2-core machine).
# cat writes nothing, and a conversion must write its output durably, so each
# row also has a floor measured in the same run: cat of the input plus writing
# that row's own output bytes to a new file with fsync (dd conv=fsync), and
# its "x floor" ratio.
# Every time is the minimum of HC_BENCH_REPEAT runs (default 3): the machine
# may be shared, and the minimum is the least disturbed. Prints a table per
# input; no pass/fail. HC_BENCH_BIN=path times another humming-convert build
# (e.g. an older one) on the same inputs; HC_BENCH_ONLY=512mib|7b one input;
# HC_BENCH_MSE=1 adds the mse quantizer.
set -euo pipefail
build=${1:-build}
bin=${HC_BENCH_BIN:-$build/humming-convert}
dir=${HC_BENCH_DIR:-build/bench}
layers=${HC_BENCH_LAYERS:-2}
repeat=${HC_BENCH_REPEAT:-3}
only=${HC_BENCH_ONLY:-}
command -v /usr/bin/time >/dev/null || { echo "bench: needs GNU time (apt-get install time)"; exit 1; }
mkdir -p "$dir"

# gen DIR command...: (re)generates DIR unless a finished copy of the same recipe is there
gen() {
    local d=$1; shift
    local recipe="$*"
    if [ -f "$d/.recipe" ] && [ "$(cat "$d/.recipe")" = "$recipe" ]; then return; fi
    rm -rf "$d"
    "$@" >/dev/null
    echo "$recipe" >"$d/.recipe"
}

now_ns() { date +%s%N; }

t_cat=1
best() { # prints "seconds rss_kb" of the fastest of $repeat runs of "$@"
    local best_t="" best_r=0 t0 t1 t r
    for _ in $(seq "$repeat"); do
        rm -rf "$dir/out"
        t0=$(now_ns)
        if ! /usr/bin/time -f "%M" -o "$dir/rss.txt" "$@" >/dev/null 2>"$dir/stderr.txt"; then
            echo "failed"
            return
        fi
        t1=$(now_ns)
        t=$(echo "($t1 - $t0) / 1000000000" | bc -l)
        r=$(tail -n1 "$dir/rss.txt")
        if [ -z "$best_t" ] || [ "$(echo "$t < $best_t" | bc -l)" = 1 ]; then best_t=$t; best_r=$r; fi
    done
    echo "$best_t $best_r"
}

header() {
    printf "%-44s %8s %9s %9s %11s %13s %9s %9s\n" run seconds "MB/s" "x cat" "peak RSS MB" \
        "x largest" "floor s" "x floor"
}

row() { # label bytes largest seconds rss_kb floor_seconds
    printf "%-44s %8.3f %9.0f %9.2f %11.1f %13.2f %9.3f %9.2f\n" "$1" "$4" \
        "$(echo "$2 / 1000000 / $4" | bc -l)" "$(echo "$4 / $t_cat" | bc -l)" \
        "$(echo "$5 / 1024" | bc -l)" "$(echo "$5 * 1024 / $3" | bc -l)" "$6" \
        "$(echo "$4 / $6" | bc -l)"
}

# floor: cat of the input (t_cat) plus the best time to write the bytes of the
# last run's output shards into new files, each fsynced (the shards read once
# first: the converter writes them with O_DIRECT, so they are not cached)
floor() {
    local best_t="" t0 t1 t f
    cat "$dir"/out/*.safetensors >/dev/null
    for _ in $(seq "$repeat"); do
        rm -rf "$dir/floor"
        mkdir -p "$dir/floor"
        t0=$(now_ns)
        for f in "$dir"/out/*.safetensors; do
            dd if="$f" of="$dir/floor/$(basename "$f")" bs=4M conv=fsync status=none
        done
        t1=$(now_ns)
        t=$(echo "($t1 - $t0) / 1000000000" | bc -l)
        if [ -z "$best_t" ] || [ "$(echo "$t < $best_t" | bc -l)" = 1 ]; then best_t=$t; fi
    done
    rm -rf "$dir/floor"
    echo "$t_cat + $best_t" | bc -l
}

cat_row() { # file largest
    local bytes
    bytes=$(stat -c %s "$1")
    cat "$1" >/dev/null # warm the page cache, as for every run below
    read -r t_cat _ < <(best cat "$1")
    printf "%-44s %8.3f %9.0f %9s %11s %13s %9s %9s\n" \
        "cat $(basename "$(dirname "$1")")/$(basename "$1")" \
        "$t_cat" "$(echo "$bytes / 1000000 / $t_cat" | bc -l)" "1.00" "-" "-" "-" "-"
}

conv() { # label in_dir largest [env=val] -- humming-convert args
    local label=$1 in=$2 largest=$3; shift 3
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    local bytes t rss
    bytes=$(stat -c %s "$in/model.safetensors")
    read -r t rss < <(best env "${envs[@]}" "$bin" "$in" "$dir/out" -q "$@")
    if [ "$t" = failed ]; then
        printf "%-44s refused: %s\n" "$label" "$(grep -m1 error "$dir/stderr.txt" | cut -c1-150)"
        return
    fi
    row "$label" "$bytes" "$largest" "$t" "$rss" "$(floor)"
}

suite() { # in_dir largest_bytes [extra args for nvfp4, e.g. --layout tiles]
    local in=$1 largest=$2 all nv=("${@:3}")
    all=$(nproc)
    cat_row "$in/model.safetensors" "$largest"
    conv "w4a16, --verify off" "$in" "$largest" -- --format w4a16 --verify off
    conv "w4a16, --verify off, 1 core" "$in" "$largest" OMP_NUM_THREADS=1 -- --format w4a16 --verify off
    conv "w4a16, --verify off, $all cores" "$in" "$largest" OMP_NUM_THREADS="$all" -- --format w4a16 --verify off
    conv "w4a8, --verify off" "$in" "$largest" -- --format w4a8 --verify off
    conv "nvfp4${nv[*]:+ ${nv[*]}}, --verify off" "$in" "$largest" -- --format nvfp4 --verify off "${nv[@]}"
    conv "mxfp4, --verify off" "$in" "$largest" -- --format mxfp4 --verify off
    conv "w4a16 --layout tiles, --verify off" "$in" "$largest" -- --format w4a16 --layout tiles --verify off
    conv "w4a16, default verification (CPU here)" "$in" "$largest" -- --format w4a16
    conv "w4a16, default verification, 1 core" "$in" "$largest" OMP_NUM_THREADS=1 -- --format w4a16
    if [ -n "${HC_BENCH_MSE:-}" ]; then # 51 clip ratios per group: about 50x rtn's work
        conv "w4a16 mse, --verify off" "$in" "$largest" -- --format w4a16 --quantizer mse --verify off
    fi
}

gptq_suite() { # in_dir largest_bytes
    local in=$1 largest=$2
    cat_row "$in/model.safetensors" "$largest"
    conv "GPTQ repack, --verify off" "$in" "$largest" -- --verify off
    conv "GPTQ repack, --verify off, 1 core" "$in" "$largest" OMP_NUM_THREADS=1 -- --verify off
    conv "GPTQ repack --layout tiles, --verify off" "$in" "$largest" -- --layout tiles --verify off
    conv "GPTQ repack, default verification" "$in" "$largest" --
}

repack_suite() { # label in_dir largest_bytes: AWQ / compressed-tensors lossless repacks
    local label=$1 in=$2 largest=$3
    conv "$label repack, --verify off" "$in" "$largest" -- --verify off
    conv "$label repack, --verify off, 1 core" "$in" "$largest" OMP_NUM_THREADS=1 -- --verify off
}

echo "bench: $bin, min of $repeat runs, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ -z "$only" ] || [ "$only" = 512mib ]; then
    gen "$dir/f16-512mib" python3 bench/gen_bench_ckpt.py "$dir/f16-512mib" float16 4 4096 16384
    gen "$dir/gptq-512mib" python3 bench/gen_bench_ckpt.py "$dir/gptq-512mib" gptq 4 4096 16384
    largest=$((4096 * 16384 * 2))
    echo
    echo "== 512 MiB: 4 fp16 tensors 4096 x 16384 (largest tensor $((largest / 1048576)) MiB)"
    header
    suite "$dir/f16-512mib" "$largest"
    echo
    echo "== the same shapes as GPTQ uint4 g128 sym (lossless repack; largest input tensor qweight 32 MiB, output row 128 MiB fp16-equivalent)"
    header
    gptq_suite "$dir/gptq-512mib" "$largest"
    gen "$dir/awq-512mib" python3 bench/gen_bench_ckpt.py "$dir/awq-512mib" awq 4 4096 16384
    gen "$dir/ct-512mib" python3 bench/gen_bench_ckpt.py "$dir/ct-512mib" ct 4 4096 16384
    for f in awq ct; do
        echo
        echo "== the same shapes as $f uint4 g128 (lossless repack)"
        header
        cat_row "$dir/$f-512mib/model.safetensors" "$largest"
        repack_suite "$f" "$dir/$f-512mib" "$largest"
    done
fi
if [ -z "$only" ] || [ "$only" = 7b ]; then
    gen "$dir/f16-7b" python3 bench/gen_bench_ckpt.py "$dir/f16-7b" llama7b "$layers" 0 0
    largest=$((32000 * 4096 * 2))
    echo
    echo "== Llama-2-7B-shaped fp16: $layers of its 32 layers, embedding and lm_head ($(($(stat -c %s "$dir/f16-7b/model.safetensors") / 1000000)) MB; largest tensor the 32000 x 4096 embedding / lm_head, $((largest / 1048576)) MiB, copied; largest quantized 11008 x 4096)"
    header
    suite "$dir/f16-7b" "$largest"
fi
