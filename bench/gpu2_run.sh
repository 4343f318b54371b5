#!/usr/bin/env bash
# gpu2 device call: sweep (correctness, fast path traced) + golden + bench ours + cuBLAS ref.
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
out=${OUT:-$here/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib HC_KERNELS_LIB=$here/build/libhc_kernels.so PYTHONUNBUFFERED=1
nvidia-smi -L
t0=$(date +%s)
HCK_TRACE=1 timeout ${SWEEP_S:-150} ./build/tests/gpu/hc_gpu_sweep > "$out/sweep.txt" 2> "$out/trace.txt"; echo "sweep rc=$? $(( $(date +%s)-t0 ))s"
echo "fast-path launches in sweep: $(grep -c 'HCK fast' "$out/trace.txt")  (mt=1: $(grep -c 'mt=1' "$out/trace.txt"), mt=4: $(grep -c 'mt=4' "$out/trace.txt"), bf16: $(grep -c 'bf16=1' "$out/trace.txt"), tr: $(grep -c 'tr=1' "$out/trace.txt"), perm32: $(grep -c 'perm=32' "$out/trace.txt"), E>1: $(grep -c 'E=3' "$out/trace.txt"))"
HC_SHARED_DIR=$here/shared timeout 60 ./build/tests/test_verify_golden > "$out/golden.txt" 2>&1; echo "golden rc=$?"
t0=$(date +%s)
timeout ${OURS_S:-120} ./build/tests/gpu/hc_gpu_sweep --bench > "$out/ours.txt" 2>&1; echo "ours rc=$? $(( $(date +%s)-t0 ))s"
t0=$(date +%s)
HC_BENCH_W4A16=1 HCK_NO_FAST=1 timeout ${BEFORE_S:-90} ./build/tests/gpu/hc_gpu_sweep --bench > "$out/before.txt" 2>&1; echo "before (general kernel) rc=$? $(( $(date +%s)-t0 ))s"
HC_BENCH_W4A16=1 HCK_SPLITS=4 timeout 40 ./build/tests/gpu/hc_gpu_sweep --bench > "$out/splits4.txt" 2>&1; echo "splits4 rc=$?"
if [ -n "${CUBLAS:-1}" ]; then timeout 90 python3 bench_ref.py 0 > "$out/ref.txt" 2>&1; echo "ref rc=$?"; fi
grep "REF humming" ref_v1.txt >> "$out/ref.txt"
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
ours, cub, hum = {}, {}, {}
for l in open(out + "/ours.txt"):
    m = re.match(r"BENCH ours (.+?)\s+N=(\d+)\s+K=(\d+)\s+M=(\d+)\s+median ([\d.]+)", l)
    if m: ours[(m[1].strip(), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
for l in open(out + "/ref.txt"):
    m = re.match(r"REF cublas fp16 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+)", l)
    if m: cub[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
    m = re.match(r"REF humming (.+?) N=(\d+) K=(\d+) M=(\d+) median ([\d.]+) ms", l)
    if m: hum[(m[1].strip(), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
print("%-20s %5s %5s %4s %8s %8s %8s %6s %6s" % ("format", "N", "K", "M", "ours", "humm", "cublas", "o/h", "o/c"))
for k, t in sorted(ours.items()):
    h, c = hum.get(k), cub.get(k[1:])
    print("%-20s %5d %5d %4d %8.4f %8s %8s %6s %6s" % (k + (t,) + ("%.4f" % h if h else "-", "%.4f" % c if c else "-",
          "%.2f" % (t / h) if h else "-", "%.2f" % (t / c) if c else "-")))
PY
echo "general kernel (HCK_NO_FAST), same harness:"; grep -h "^BENCH" "$out/before.txt" | awk '{print $3,$4,$5,$6,$7,$8,$10}'
echo "fast path, 4 splits forced:"; grep -h "^BENCH" "$out/splits4.txt" | awk '{print $6,$7,$8,$10}' | head -5
grep -h "^GOLDEN-GPU" "$out/golden.txt" | cut -c1-90
grep -h "FAIL" "$out/sweep.txt" | head -20
grep -h "SUMMARY" "$out/sweep.txt"
