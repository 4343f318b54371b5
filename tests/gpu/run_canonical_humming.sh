#!/usr/bin/env bash
# Device-side check of the canonical layout against the real humming-kernels
# (docs/output-format.md, "How it is checked"). Run from the repository root on
# the GPU machine with a staging folder (default .dev, ignored) holding:
#   build/humming-convert build/gen_example_model build/libhc_kernels.so
#   lib/   the shared libraries the image lacks (libcjson, libyaml)
#   whl/   humming_kernels-0.1.19-*.whl (never committed)
# Converts the example model (float16, and a Humming-format copy) with every
# preset the canonical layout holds, verifying each on our GPU kernels
# (--verify gpu), then loads every layer with Humming's own from_safetensors,
# transform and forward (tests/gpu/canonical_humming.py). Summary last.
set -u
d=${1:-.dev}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$d"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site LD_LIBRARY_PATH=$d/lib HC_KERNELS_LIB=$d/build/libhc_kernels.so
t=/tmp/hc-canonical; rm -rf "$t"; mkdir -p "$t"
"$d"/build/gen_example_model "$t/in" --format float16 >/dev/null || exit 1
"$d"/build/gen_example_model "$t/in-humming" --format humming >/dev/null || exit 1
outs=""
# w4a4 (int4 activations) is refused for sm90: 0.1.19 runs them on sm75-sm89 only
for f in ${HC_PRESETS:-w4a16 w8a16 w2a16 w4a8 w4a8-int8 w8a8 w8a8-int8 mxfp4 mxfp4-a8 mxint4 fp8}; do
    "$d"/build/humming-convert "$t/in" "$t/$f" --format "$f" --arch sm90 --verify gpu -q \
        > "$t/$f.log" 2>&1
    rc=$?
    echo "convert $f --verify gpu rc=$rc $(grep -o '"verify_backend": *"[a-z]*"' "$t/$f/humming_report.json" 2>/dev/null)"
    [ $rc -eq 0 ] && outs="$outs $t/$f" || tail -3 "$t/$f.log"
done
"$d"/build/humming-convert "$t/in-humming" "$t/repack" --arch sm90 --verify gpu -q > "$t/repack.log" 2>&1
echo "repack humming-format input --verify gpu rc=$?"
python3 tests/gpu/canonical_humming.py "$t/in" $outs
