#!/usr/bin/env bash
# gpu3 second device call: after the split-model fix (first feasible s). Default sweep,
# long-k sweep (K x 8, one split: MT=1 blocks over several 1024-k chunks, MT=8 over many
# 128-k chunks), W4A16 bench (v5 default and HCK_NO_BIG). No cuBLAS rerun (v5a call has it).
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
out=${OUT:-$here/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib HC_KERNELS_LIB=$here/build/libhc_kernels.so PYTHONUNBUFFERED=1
t0=$(date +%s)
HCK_TRACE=1 timeout 60 ./build/tests/gpu/hc_gpu_sweep > "$out/sweep.txt" 2> "$out/trace.txt"; echo "sweep rc=$? $(( $(date +%s)-t0 ))s"
grep -h "FAIL" "$out/sweep.txt" | head; grep -h "SUMMARY" "$out/sweep.txt"
HCK_SPLITS=1 HC_SWEEP_KMUL=8 HCK_TRACE=1 timeout 90 ./build/tests/gpu/hc_gpu_sweep > "$out/sweep_long.txt" 2> "$out/trace_long.txt"; echo "long-k sweep rc=$? $(( $(date +%s)-t0 ))s"
echo "long-k fast launches: $(grep -c 'HCK fast' "$out/trace_long.txt"); by variant:"; awk '/HCK fast/{print $4,$5,$8}' "$out/trace_long.txt" | sort | uniq -c | head
grep -h "FAIL" "$out/sweep_long.txt" | head; grep -h "SUMMARY" "$out/sweep_long.txt"
HC_SHARED_DIR=$here/shared timeout 30 ./build/tests/test_verify_golden > "$out/golden.txt" 2>&1; echo "golden rc=$?"
export HC_BENCH_W4A16=1
timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > "$out/ours.txt" 2>&1; echo "ours rc=$?"
HCK_NO_BIG=1 timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > "$out/nobig.txt" 2>&1; echo "nobig rc=$?"
HCK_TRACE=1 timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > /dev/null 2> "$out/bench_trace.txt"; sort "$out/bench_trace.txt" | uniq -c | awk '{print $4,$5,$8,$9,$10}'
paste <(grep ^BENCH "$out/ours.txt" | awk '{print $6,$7,$8,$10}') <(grep ^BENCH "$out/nobig.txt" | awk '{print $10}')
