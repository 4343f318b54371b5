#!/usr/bin/env bash
# gpu3 device call: sweep (correctness, fast path traced) + golden + W4A16 bench
# (v5 default, v4 configuration, split model only) + cuBLAS ref. Humming: v1 figures (ref_v1.txt).
set -u
here=$(cd "$(dirname "$0")" && pwd); cd "$here"
out=${OUT:-$here/out}; mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib HC_KERNELS_LIB=$here/build/libhc_kernels.so PYTHONUNBUFFERED=1
nvidia-smi -L
t0=$(date +%s)
HCK_TRACE=1 timeout ${SWEEP_S:-110} ./build/tests/gpu/hc_gpu_sweep > "$out/sweep.txt" 2> "$out/trace.txt"; echo "sweep rc=$? $(( $(date +%s)-t0 ))s"
echo "fast launches: $(grep -c 'HCK fast' "$out/trace.txt") mt=1 $(grep -c 'mt=1 ' "$out/trace.txt") mt=4 $(grep -c 'mt=4 ' "$out/trace.txt") mt=8 $(grep -c 'mt=8 ' "$out/trace.txt") bf16 $(grep -c 'bf16=1' "$out/trace.txt") perm32 $(grep -c 'perm=32' "$out/trace.txt") E>1 $(grep -c 'E=3' "$out/trace.txt")"
grep -h "FAIL" "$out/sweep.txt" | head -20; grep -h "SUMMARY" "$out/sweep.txt"
HC_SHARED_DIR=$here/shared timeout 30 ./build/tests/test_verify_golden > "$out/golden.txt" 2>&1; echo "golden rc=$?"
grep -h "^GOLDEN-GPU w4a16" "$out/golden.txt" | cut -c1-90
export HC_BENCH_W4A16=1
t0=$(date +%s)
timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > "$out/ours.txt" 2>&1; echo "ours rc=$? $(( $(date +%s)-t0 ))s"
HCK_SPLIT_OLD=1 HCK_NO_BIG=1 timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > "$out/v4cfg.txt" 2>&1; echo "v4cfg rc=$?"
HCK_NO_BIG=1 timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > "$out/splitonly.txt" 2>&1; echo "splitonly rc=$?"
HCK_TRACE=1 timeout 30 ./build/tests/gpu/hc_gpu_sweep --bench > /dev/null 2> "$out/bench_trace.txt"; sort "$out/bench_trace.txt" | uniq -c | head -20
timeout ${REF_S:-70} python3 bench_ref.py 0 > "$out/ref.txt" 2>&1; echo "ref rc=$?"
grep "REF humming W4A16" ref_v1.txt >> "$out/ref.txt"
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
def load(f):
    r = {}
    try:
        for l in open(out + "/" + f):
            m = re.match(r"BENCH ours (.+?)\s+N=(\d+)\s+K=(\d+)\s+M=(\d+)\s+median ([\d.]+)", l)
            if m: r[(int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
    except OSError: pass
    return r
v5, v4, so = load("ours.txt"), load("v4cfg.txt"), load("splitonly.txt")
cub, hum = {}, {}
for l in open(out + "/ref.txt"):
    m = re.match(r"REF cublas fp16 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+)", l)
    if m: cub[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
    m = re.match(r"REF humming W4A16 uint4 g128 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+) ms", l)
    if m: hum[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
f = lambda v: "%.4f" % v if v else "-"
r = lambda a, b: "%.2f" % (a / b) if a and b else "-"
print("| N x K | M | v4 cfg ms | split model only ms | v5 ms | Humming (v1) ms | cuBLAS ms | v5/Humming | v5/cuBLAS |")
for k in sorted(set(v5) | set(v4)):
    a = v5.get(k)
    print("| %dx%d | %d | %s | %s | %s | %s | %s | %s | %s |" % (k[0], k[1], k[2], f(v4.get(k)), f(so.get(k)), f(a), f(hum.get(k)), f(cub.get(k)), r(a, hum.get(k)), r(a, cub.get(k))))
PY
