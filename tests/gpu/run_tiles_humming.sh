#!/usr/bin/env bash
# Device-side check of the tiles layout (--layout tiles --humming-version 0.1.19) and of
# python/humming_convert against the real humming-kernels 0.1.19 (docs/output-format.md,
# "Loading the tiles"). Run from the repository root on the GPU machine (sm90) with the
# staging folder of run_canonical_humming.sh (default .dev, ignored) holding:
#   build/humming-convert build/gen_example_model
#   lib/   the shared libraries the image lacks (libcjson, libyaml)
#   whl/   humming_kernels-0.1.19-*.whl (never committed)
# torch and safetensors are the machine's. For every model and preset: converts into the
# tiles and the canonical layout, loads every tiles layer with humming_convert.load_layer
# and the same layer with Humming's own from_safetensors + transform (and vLLM's call
# sequence), and compares LayerConfig, tensors and humming_forward outputs bit for bit
# (tests/gpu/tiles_humming.py; HC_TILES_MODELS, HC_PRESETS, HC_TILES_BUDGET_S there).
# Summary last; exit 1 on any mismatch.
set -u
d=$(cd "${1:-.dev}" && pwd) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$d"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site LD_LIBRARY_PATH=$d/lib
t=/tmp/hc-tiles; rm -rf "$t"; mkdir -p "$t"
python3 tests/gpu/tiles_humming.py "$d/build/humming-convert" "$d/build/gen_example_model" "$t"
