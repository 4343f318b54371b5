#!/usr/bin/env bash
# Device-side correctness run (one call): the GPU sweep (our kernel on the
# humming-kernels 0.1.19 tensors of every combination vs the CPU reference),
# the golden-0119 vectors through our kernel (vs Humming's y.humming),
# `--verify gpu` vs `--verify cpu` on the tiles of every preset, and on the
# canonical example model (its summary printed last). Run from a folder
# holding build/, lib/ (shared libraries the image may lack),
# shared/golden-0119, demo/example-humming and run_verify_presets.sh.
# Writes logs to $OUT (see device_env.sh) and prints a short summary last.
set -u
source "$(dirname "$0")/device_env.sh"
nvidia-smi -L
t0=$(date +%s)
./build/tests/gpu/hc_gpu_sweep > "$out/sweep.txt" 2>&1; echo "sweep rc=$? ($(( $(date +%s) - t0 )) s)"
fx=$here/fixtures/humming0119; [ -d "$fx" ] || fx=$top/tests/fixtures/humming0119
HC_SHARED_DIR=$here/shared HC_FIXTURES0119_DIR=$fx ./build/tests/test_layout_golden0119 > "$out/golden.txt" 2>&1; echo "golden-0119 rc=$?"
bash ./run_verify_presets.sh build sm90 /tmp/hcp > "$out/presets.txt" 2>&1; echo "verify presets rc=$?"
rm -rf /tmp/hcv && mkdir -p /tmp/hcv
for v in cpu gpu; do
  for a in "sm90" "sm89 --activation float8e4m3" "sm80 --activation int8"; do
    tag=$(echo "$a" | tr -d ' -')
    ./build/humming-convert demo/example-humming /tmp/hcv/$v-$tag --arch $a --verify $v \
      > "$out/verify-$v-$tag.txt" 2>&1; echo "verify canonical $v $tag rc=$?"
    cp /tmp/hcv/$v-$tag/humming_report.json "$out/report-$v-$tag.json" 2>/dev/null
  done
done
grep -h "^GOLDEN-GPU" "$out/golden.txt" | cut -c1-200
grep -h "FAIL" "$out/sweep.txt" "$out/presets.txt" | head -20
grep -h "SUMMARY\|quantizer" "$out/sweep.txt" "$out/presets.txt"
# the --verify comparison last, so that a cut tail keeps it
python3 - "$out" <<'PY'
import json, sys, glob, os
out = sys.argv[1]
for f in sorted(glob.glob(out + "/report-cpu-*.json")):
    g = f.replace("report-cpu-", "report-gpu-")
    if not os.path.exists(g): continue
    c, d = json.load(open(f)), json.load(open(g))
    worst = {}
    for lc, lg in zip(c["layers"], d["layers"]):
        for k in ("gemm_rel_err", "qact_gemm_rel_err", "weight_rel_err"):
            if k in lc and k in lg:
                worst[k] = max(worst.get(k, 0), abs(lc[k] - lg[k]))
        if lc["status"] != lg["status"]: print("STATUS DIFFERS", f, lc.get("name"), lc["status"], lg["status"])
    gmax = max((l.get("gpu_gemm_rel_err", 0) for l in d["layers"]), default=0)
    print("canonical", os.path.basename(f)[11:-5], "backend", d.get("run", {}).get("verify_backend"),
          "pass cpu/gpu", sum(l["status"] == "pass" for l in c["layers"]), "/",
          sum(l["status"] == "pass" for l in d["layers"]), "of", len(c["layers"]),
          "GPU-checked", sum("gpu_gemm_rel_err" in l for l in d["layers"]),
          "max |metric diff|", worst, "worst gpu vs cpu rel err %.3g" % gmax)
PY
