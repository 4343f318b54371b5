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
# HC_TILES_JOBS=N (default 1) runs each model and preset as its own process, N at a time:
# Humming compiles its kernels on the CPU (10-50 s per preset), so this cuts the wall time
# about N-fold on a machine with N spare cores; each run's log goes to HC_TILES_LOGS (default
# the work folder) as it is written, so a run cut short leaves what it did. Summary last;
# exit 1 on any mismatch.
set -u
d=$(cd "${1:-.dev}" && pwd) || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$d"/whl/*.whl || exit 1
export PYTHONPATH=/tmp/site LD_LIBRARY_PATH=$d/lib
t=/tmp/hc-tiles; rm -rf "$t"; mkdir -p "$t"
jobs=${HC_TILES_JOBS:-1}
if [ "$jobs" -le 1 ]; then
    exec python3 tests/gpu/tiles_humming.py "$d/build/humming-convert" "$d/build/gen_example_model" "$t"
fi
presets=${HC_PRESETS:-$(python3 -c 'import sys; sys.path.insert(0, "tests/gpu"); import ast, re
src = open("tests/gpu/tiles_humming.py").read()
print(ast.literal_eval(re.search(r"^PRESETS = (\(.*?\))", src, re.S | re.M).group(1)))')}
logs=${HC_TILES_LOGS:-$t}; mkdir -p "$logs"
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
one() {  # MODEL PRESET: one run in its own work folder, its log and exit status in $logs
    mkdir -p "$t/$1-$2"
    HC_TILES_MODELS=$1 HC_PRESETS=$2 python3 tests/gpu/tiles_humming.py "$d/build/humming-convert" \
        "$d/build/gen_example_model" "$t/$1-$2" > "$logs/$1-$2.log" 2>&1
    echo "$1 $2 rc=$?" >> "$logs/rc.txt"
}
export -f one; export d t logs
for m in ${HC_TILES_MODELS:-example odd padded}; do for p in $presets; do echo "$m $p"; done; done |
    xargs -P "$jobs" -L 1 bash -c 'one "$@"' one
cat "$logs"/*.log
sort "$logs/rc.txt"
bad=$(grep -vc ' rc=0$' "$logs/rc.txt")
echo "tiles_humming (HC_TILES_JOBS=$jobs): $(grep -c ' rc=0$' "$logs/rc.txt") model/preset runs passed, $bad failed"
[ "$bad" -eq 0 ]
