#!/usr/bin/env bash
# `--verify gpu` on the tiles of every preset against `--verify cpu`
# (docs/kernels.md). For each preset of `humming-convert --list-formats`, the
# example model (gen_example_model: dense layers and an MoE block) is
# converted with --layout tiles for ARCH, once with each verifier; the GPU run
# must use the GPU kernels on every layer, pass every layer the CPU run
# passes, and agree with its numbers (the metrics both compute, from the same
# decoded weights and activations, within 1e-6 relative). A preset that
# humming-kernels 0.1.19 does not take on ARCH is refused by the conversion
# with the same message in both runs; it is listed and retried on the
# fallback arch (sm89: int4 activations). Prints one line per preset and a
# summary; exit 1 on any failure, 77 with "SKIP[gpu]:" when no GPU is present.
#
#   tests/gpu/run_verify_presets.sh BUILD_DIR [ARCH] [WORK_DIR]
set -u
build=${1:?usage: run_verify_presets.sh BUILD_DIR [ARCH] [WORK_DIR]}
arch=${2:-sm90}
if [ -n "${3:-}" ]; then work=$3; else work=$(mktemp -d) && trap 'rm -rf "$work"' EXIT; fi
cli=$build/humming-convert
mkdir -p "$work"
"$build/examples/gen_example_model" "$work/model" --format float16 > /dev/null || exit 1
presets=$("$cli" --list-formats --arch "$arch" | awk '/^presets:/{p=1; next} p && /^  [a-z0-9-]+ /{print $1} /^$/{p=0}')
[ -n "$presets" ] || { echo "FAIL: no presets listed"; exit 1; }
fail=0 ran=0 refused=0
for p in $presets; do
  for a in "$arch" sm89; do
    for v in cpu gpu; do
      rm -rf "$work/$p-$v"
      "$cli" "$work/model" "$work/$p-$v" --format "$p" --layout tiles --arch "$a" --verify "$v" \
        > "$work/$p-$v.log" 2>&1
      echo $? > "$work/$p-$v.rc"
    done
    rc_c=$(cat "$work/$p-cpu.rc") rc_g=$(cat "$work/$p-gpu.rc")
    if [ "$rc_c" = 0 ] || [ "$a" = sm89 ]; then break; fi
    echo "refused $p on $arch: $(grep -m1 -i 'error\|refus\|not' "$work/$p-cpu.log" | cut -c1-150)"
    refused=$((refused + 1))
  done
  python3 - "$work" "$p" "$a" "$rc_c" "$rc_g" <<'PY'

import json, os, sys
work, p, arch, rc_c, rc_g = sys.argv[1:]
if rc_c != "0" or rc_g != "0":
    same = rc_c == rc_g
    print(("ok  " if same and rc_c != "0" else "FAIL"), p, arch, "cpu rc", rc_c, "gpu rc", rc_g)
    sys.exit(0 if same and rc_c != "0" and arch == "sm89" else 1)
c = json.load(open(os.path.join(work, p + "-cpu", "humming_report.json")))
g = json.load(open(os.path.join(work, p + "-gpu", "humming_report.json")))
bad = []
if g["run"].get("verify_backend") != "gpu":
    print("SKIP[gpu]: --verify gpu fell back to", g["run"].get("verify_backend")); sys.exit(77)
worst_diff, worst_gpu = 0.0, 0.0
for lc, lg in zip(c["layers"], g["layers"]):
    if lc["status"] != lg["status"] or lg["status"] != "pass": bad.append((lc["name"], lc["status"], lg["status"]))
    if "gpu_gemm_rel_err" not in lg: bad.append((lg["name"], "no GPU GEMM"))
    worst_gpu = max(worst_gpu, lg.get("gpu_gemm_rel_err", 0))
    for k, v in lc.items():
        if isinstance(v, float) and "seconds" not in k and isinstance(lg.get(k), float):
            d = abs(v - lg[k]) / max(abs(v), 1e-30)
            if d > 1e-6: bad.append((lc["name"], k, v, lg[k]))
            worst_diff = max(worst_diff, d)
print("%s %-10s %s: %d layers, %d pass on the GPU, worst |cpu-gpu| metric diff %.2e, worst GPU vs CPU GEMM rel err %.3g%s"
      % ("FAIL" if bad else "ok  ", p, arch, len(g["layers"]), sum(l["status"] == "pass" for l in g["layers"]),
         worst_diff, worst_gpu, (" " + str(bad[:3])) if bad else ""))
sys.exit(1 if bad else 0)
PY
  r=$?
  [ $r = 77 ] && exit 77
  [ $r = 0 ] || fail=$((fail + 1))
  ran=$((ran + 1))
done
echo "SUMMARY verify presets: $ran presets, $fail failed, $refused refused on $arch"
[ $fail = 0 ]
