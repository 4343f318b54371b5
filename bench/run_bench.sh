#!/usr/bin/env bash
# Side-by-side benchmark on the H200 in one device call (bench/NOTES.md):
#   1. correctness first: the GPU sweep (every combination vs the CPU reference)
#      and the golden vectors through our kernel;
#   2. our kernels (build/libhc_kernels.so, built ahead of time) timed by
#      build/tests/gpu/hc_gpu_sweep --bench: CUDA-graph replay, median of 20;
#   3. cuBLAS fp16 (PyTorch) and the real Humming library (wheels in ./.whl,
#      never committed) by bench_ref.py: graph replay and eager medians, first
#      call (Humming compiles there);
#   4. the table: ours / Humming and ours / cuBLAS per cell.
# Run from a folder holding build/, lib/ (shared libraries the image may lack),
# shared/golden, bench_ref.py and optionally .whl/. Logs go to $OUT (or ./out).
set -u
source "$(dirname "$0")/device_env.sh"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
t0=$(date +%s)
HCK_TRACE=1 timeout ${SWEEP_S:-90} ./build/tests/gpu/hc_gpu_sweep > "$out/sweep.txt" 2> "$out/sweep_trace.txt"
echo "sweep rc=$? ($(( $(date +%s) - t0 )) s)"; grep -h "FAIL" "$out/sweep.txt" | head; grep -h "SUMMARY" "$out/sweep.txt"
echo "kernel launches in the sweep by path:"; awk '/^HCK/{print $2, $3, $4}' "$out/sweep_trace.txt" | sort | uniq -c
if [ -d shared/golden ]; then
  HC_SHARED_DIR=$here/shared timeout 60 ./build/tests/test_verify_golden > "$out/golden.txt" 2>&1
  echo "golden rc=$?"; grep -h "^GOLDEN-GPU" "$out/golden.txt" | awk '{print "  " $2, $8, $9}'
fi
t0=$(date +%s)
HC_BENCH_ALL=1 timeout ${OURS_S:-240} stdbuf -oL ./build/tests/gpu/hc_gpu_sweep --bench > "$out/ours.txt" 2>&1
echo "ours rc=$? ($(( $(date +%s) - t0 )) s)"
t0=$(date +%s)
if [ -n "${REF_FILE:-}" ]; then  # reuse reference timings of an earlier run (device time)
  cp "$REF_FILE" "$out/ref.txt"; echo "ref: reused $REF_FILE"
else
  timeout ${REF_S:-300} python3 bench_ref.py ${HUMMING_BUDGET:-240} all > "$out/ref.txt" 2>&1
  echo "ref rc=$? ($(( $(date +%s) - t0 )) s)"
fi
python3 - "$out" <<'PY' | tee "$out/table.md"
import re, sys
out = sys.argv[1]
ours, cub, hum, first = {}, {}, {}, {}
for l in open(out + "/ours.txt"):
    m = re.match(r"BENCH ours (.+?)\s+N=(\d+)\s+K=(\d+)\s+M=(\d+)\s+median ([\d.]+)", l)
    if m: ours[(m[1].strip(), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
for l in open(out + "/ref.txt"):
    m = re.match(r"REF cublas fp16 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+)", l)
    if m: cub[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
    m = re.match(r"REF humming (.+?) N=(\d+) K=(\d+) M=(\d+) median ([\d.na]+) ms eager ([\d.]+) ms (first|newM) ([\d.]+)", l)
    if m:
        k = (m[1].strip(), int(m[2]), int(m[3]), int(m[4]))
        hum[k] = float(m[5]) if m[5] != "nan" else float(m[6])
        if m[7] == "first": first[(k[0], k[1], k[2])] = float(m[8])
print("| format | N x K | M | ours ms | Humming ms | cuBLAS fp16 ms | ours/Humming | ours/cuBLAS |")
print("| --- | --- | --- | --- | --- | --- | --- | --- |")
for k in sorted(ours, key=lambda k: (k[0], k[1], k[2], k[3])):
    t, h, c = ours[k], hum.get(k), cub.get(k[1:])
    f = lambda v: "%.4f" % v if v else "-"
    r = lambda a, b: "%.2f" % (a / b) if b else "-"
    print(f"| {k[0]} | {k[1]}x{k[2]} | {k[3]} | {t:.4f} | {f(h)} | {f(c)} | {r(t, h)} | {r(t, c)} |")
print()
print("Humming first call (compiles its kernel), ms:", ", ".join(f"{k[0]} {k[1]}x{k[2]} {v:.0f}" for k, v in sorted(first.items())))
PY
grep -h "FAILED\|skipped\|unavailable" "$out/ref.txt" | cut -c1-300
