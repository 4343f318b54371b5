#!/usr/bin/env bash
# Side-by-side benchmark on the H200 in one device call (bench/README.md):
#   1. correctness first: the GPU sweep (every combination vs the CPU reference)
#      and the golden vectors through our kernel;
#   2. our kernels (build/libhc_kernels.so, built ahead of time) timed by
#      build/tests/gpu/hc_gpu_sweep --bench: CUDA-graph replay, median of 20,
#      activation quantization included;
#   3. cuBLAS fp16 (PyTorch) and the real Humming library (wheels in ./.whl,
#      never committed) by bench_ref.py: graph replay and eager medians, first
#      call (Humming compiles there);
#   4. the table: ours / Humming and ours / cuBLAS per cell.
# Run from a folder holding build/, lib/ (shared libraries the image may lack),
# shared/golden, bench_ref.py, make_table.py and optionally .whl/. Logs and
# the table go to $OUT (device_env.sh). Ours is timed twice, as bench_ref.py times the references:
# after a read of 256 MB before each call (L2 clean, --flush 2) and after
# do_bench's zeroing of 256 MB (L2 dirty, --flush 1); the table divides like
# by like. Layers without bias (HC_BENCH_BIAS=0), as Humming's.
set -u
source "$(dirname "$0")/device_env.sh"
export PYTHONUNBUFFERED=1
export HC_BENCH_BIAS=${HC_BENCH_BIAS:-0}  # Humming's layers are timed without a bias
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
t0=$(date +%s)
if [ -z "${SKIP_SWEEP:-}" ]; then  # gpu_check.sh ran it in the same session
  timeout ${SWEEP_S:-90} ./build/tests/gpu/hc_gpu_sweep > "$out/sweep.txt" 2>&1
  echo "sweep rc=$? ($(( $(date +%s) - t0 )) s)"; grep -h "FAIL" "$out/sweep.txt" | head; grep -h "SUMMARY" "$out/sweep.txt"
fi
t0=$(date +%s)
HC_BENCH_ALL=1 timeout ${OURS_S:-240} stdbuf -oL ./build/tests/gpu/hc_gpu_sweep --bench --flush 2 > "$out/ours.txt" 2>&1
echo "ours, L2 clean before each call, rc=$? ($(( $(date +%s) - t0 )) s)"
t0=$(date +%s)
HC_BENCH_ALL=1 timeout ${OURS_S:-240} stdbuf -oL ./build/tests/gpu/hc_gpu_sweep --bench --flush 1 > "$out/ours_flush.txt" 2>&1
echo "ours, L2 flushed before each call, rc=$? ($(( $(date +%s) - t0 )) s)"
t0=$(date +%s)
if [ -n "${REF_FILE:-}" ]; then  # reuse reference timings of an earlier run (device time)
  cp "$REF_FILE" "$out/ref.txt"; echo "ref: reused $REF_FILE"
else
  timeout ${REF_S:-300} python3 bench_ref.py ${HUMMING_BUDGET:-240} all > "$out/ref.txt" 2>&1
  echo "ref rc=$? ($(( $(date +%s) - t0 )) s)"
fi
python3 make_table.py "$out/ours.txt" "$out/ours_flush.txt" "$out/ref.txt" | tee "$out/table.md"
grep -h "FAILED\|skipped\|unavailable" "$out/ref.txt" | cut -c1-300
