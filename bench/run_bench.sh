#!/usr/bin/env bash
# Side-by-side benchmark on the H200, one device call: our kernels (built
# ahead of time: build/libhc_kernels.so + build/tests/gpu/hc_gpu_sweep),
# cuBLAS fp16 through PyTorch, and Humming (wheels in ./.whl, optional).
# Layout as bench/gpu_check.sh (run from the carried folder). Summary last.
set -u
here=$(cd "$(dirname "$0")" && pwd)
cd "$here"
out=${OUT:-$here/out}
mkdir -p "$out"
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export HC_KERNELS_LIB=$here/build/libhc_kernels.so
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
timeout ${OURS_S:-150} ./build/tests/gpu/hc_gpu_sweep --bench > "$out/ours.txt" 2>&1; echo "ours rc=$?"
if [ -n "${REF_FILE:-}" ]; then  # reuse reference timings of an earlier run (device time)
  cp "$REF_FILE" "$out/ref.txt"; echo "ref: reused $REF_FILE"
else
  timeout ${REF_S:-300} python3 bench_ref.py ${HUMMING_BUDGET:-200} > "$out/ref.txt" 2>&1; echo "ref rc=$?"
fi
python3 - "$out" <<'PY'
import re, sys
out = sys.argv[1]
ours, cub, hum, first = {}, {}, {}, {}
for l in open(out + "/ours.txt"):
    m = re.match(r"BENCH ours (.+?)\s+N=(\d+)\s+K=(\d+)\s+M=(\d+)\s+median ([\d.]+)", l)
    if m: ours[(m[1].strip(), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
for l in open(out + "/ref.txt"):
    m = re.match(r"REF cublas fp16 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+)", l)
    if m: cub[(int(m[1]), int(m[2]), int(m[3]))] = float(m[4])
    m = re.match(r"REF humming (.+?) N=(\d+) K=(\d+) M=(\d+) median ([\d.]+) ms first ([\d.]+)", l)
    if m:
        k = (m[1].strip(), int(m[2]), int(m[3]), int(m[4])); hum[k] = float(m[5]); first[k] = float(m[6])
print("%-22s %6s %6s %5s %9s %9s %9s %8s %8s %9s" % ("format", "N", "K", "M", "ours_ms", "humm_ms",
      "cublas_ms", "o/humm", "o/cublas", "humm_1st"))
for k, t in sorted(ours.items()):
    h, c = hum.get(k), cub.get(k[1:])
    print("%-22s %6d %6d %5d %9.4f %9s %9s %8s %8s %9s" % (k + (t,) + (
        "%.4f" % h if h else "-", "%.4f" % c if c else "-", "%.2f" % (t / h) if h else "-",
        "%.2f" % (t / c) if c else "-", "%.0f ms" % first[k] if k in first else "-")))
PY
grep -h "FAILED\|skipped\|unavailable" "$out/ref.txt" | cut -c1-300
