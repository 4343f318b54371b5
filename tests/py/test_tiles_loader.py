#!/usr/bin/env python3
"""The checks of python/humming_convert's tiles loader that need no GPU: converts the
example model (and a padded variant, and one odd-sized layer with a bias) with the
CLI into the tiles layout for every weight arrangement (tiled, packed-K, flat), scale
kind (group, channel, block, tensor, e8m0, fp8 with a second scale), integer and
float zero points, bias, MoE stacks, a sharded output, and runs check_layer on every
layer as load_layer does (humming 0.1.19, sm90, float16): every tensor must have the
dtype and shape that its LayerConfig needs. Then each refusal: another humming
release, another GPU, another dtype, an unknown layer, a canonical output, and
outputs edited to break the layout version, the padding, the LayerConfig, the
tensor set or the dtype; each must raise ValueError naming the layer. Pure Python
(json, struct): neither torch nor humming is imported. Loading and running the
layers on the GPU: tests/gpu/run_tiles_humming.sh."""
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from humming_convert import check_layer  # noqa: E402

BUILD = os.environ.get("HC_BUILD", "build")
CLI = os.environ.get("HC_CLI", os.path.join(BUILD, "humming-convert"))
GEN = os.path.join(BUILD, "examples", "gen_example_model")
ENV = dict(humming_version="0.1.19", sm_version=90, dtype="float16")
STACK = "model.layers.1.mlp.experts.gate_proj"
DENSE = "model.layers.0.self_attn.q_proj"
ODD = "model.layers.0.self_attn.o_proj"

# (output name, model, CLI flags, what it covers)
CASES = [
    ("w4a16", "example", ["--format", "w4a16"], "tiled uint4, group scales"),
    ("w4a8", "example", ["--format", "w4a8"], "packed-K"),
    ("w8a8-int8", "example", ["--format", "w8a8-int8"], "flat int8, channel scales"),
    ("w4a8-int8", "example", ["--format", "w4a8-int8"], "flat ldmatrix uint4 x int8"),
    ("nvfp4", "example", ["--format", "nvfp4"], "fp8 scales, weight_scale_2"),
    ("nvfp4-ch", "padded", ["--format", "nvfp4", "--global-scale", "channel"],
     "weight_scale_2 per channel, N padding"),
    ("fp8-block", "example", ["--weight-dtype", "float8e4m3", "--group-size", "128",
                              "--group-size-n", "128", "--scale-dtype", "float32"], "block scales"),
    ("zp-int", "padded", ["--format", "w4a16", "--zero-point", "int"], "integer zero points, N padding"),
    ("zp-float", "padded", ["--format", "w4a16", "--zero-point", "float"], "float zero points"),
    ("fp8-tensor", "padded", ["--weight-dtype", "float8e4m3", "--group-size", "tensor"],
     "per-tensor scales"),
    ("sharded", "padded", ["--format", "w4a8", "--max-shard-size", "200K"], "sharded output"),
    ("mxfp4-odd", "odd", ["--format", "mxfp4"], "e8m0 scales, bias, N and K padding"),
    ("fp8-odd", "odd", ["--format", "fp8"], "channel scales, bias, K padding"),
    ("mxfp4-a8", "odd", ["--format", "mxfp4-a8"], "fused e8m0 x fp8, bias, padding"),
    ("mxfp4-int8", "example", ["--format", "mxfp4", "--activation", "int8"],
     "fused e8m0 x int8, channel weight_scale_2"),
    ("mxfp4a8-sm100", "example", ["--format", "mxfp4-a8", "--arch", "sm100"],
     "sm100 raw weights, UMMA scales"),
    ("mxfp4a8-sm120", "example", ["--format", "mxfp4-a8", "--arch", "sm120"], "sm120 MXMMA scales"),
    ("w8a8-sm100", "example", ["--format", "w8a8", "--arch", "sm100"], "sm100 raw fp8 weights"),
]


def arch_of(flags):
    """The --arch of a case's flags (sm90 when none) and the flags without it."""
    if "--arch" not in flags:
        return 90, flags
    i = flags.index("--arch")
    return int(flags[i + 1][2:]), flags[:i] + flags[i + 2:]


def write_odd(d):
    """One float16 o_proj of N = 296, K = 320 with a bias: vLLM pads it to 512 x 384."""
    rnd = random.Random(5)
    n, k = 296, 320
    tensors = {ODD + ".weight": ([n, k], [rnd.gauss(0, 0.02) for _ in range(n * k)]),
               ODD + ".bias": ([n], [rnd.gauss(0, 0.1) for _ in range(n)])}
    header, blob = {}, b""
    for name, (shape, vals) in tensors.items():
        raw = struct.pack("<%de" % len(vals), *vals)
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [len(blob), len(blob) + len(raw)]}
        blob += raw
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    os.makedirs(d)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + blob)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"torch_dtype": "float16", "model_type": "llama",
                   "architectures": ["LlamaForCausalLM"]}, f)


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: rc {r.returncode}: {r.stderr.strip()}")


def layers_of(out):
    q = json.load(open(os.path.join(out, "config.json")))["quantization_config"]
    return [p for p, r in q["layers"].items() if isinstance(r, dict) and "layer_config" in r]


def edited(src, dst, fn, name="config.json"):
    """A copy of output src with file `name`'s JSON changed by fn."""
    shutil.copytree(src, dst)
    path = os.path.join(dst, name)
    obj = json.load(open(path))
    fn(obj)
    with open(path, "w") as f:
        json.dump(obj, f)
    return dst


def main():
    failed = []
    with tempfile.TemporaryDirectory() as d:
        models = {"example": os.path.join(d, "example"), "padded": os.path.join(d, "padded"),
                  "odd": os.path.join(d, "odd")}
        run([GEN, models["example"], "--format", "float16"])
        run([GEN, models["padded"], "--format", "float16", "--hidden", "384", "--intermediate", "640"])
        write_odd(models["odd"])
        outs = {}
        for name, model, flags, what in CASES:
            out = os.path.join(d, name)
            sm, flags = arch_of(flags)
            run([CLI, models[model], out, "--layout", "tiles", "--humming-version", "0.1.19",
                 "--arch", f"sm{sm}", "-q", "--verify", "off"] + flags)
            outs[name] = out
            n, bad = 0, []
            for p in layers_of(out):
                try:
                    info = check_layer(out, p, **dict(ENV, sm_version=sm))
                    assert info["layer_config"]["sm_version"] == sm and info["dtype"] == "float16"
                    n += 1
                except (ValueError, AssertionError) as e:
                    bad.append(f"{p}: {e}")
            ok = n > 0 and not bad
            print(f"{name:11s} {what:40s} {n:2d} layers pass check_layer" + ("" if ok else f"; FAILED {bad}"))
            if not ok:
                failed.append(name)

        # what the tensors look like, independently of the loader's own table (spot checks)
        spot = [("w4a16", DENSE, "weight", [256 // 16, 256 * 16 * 4 // 32]),
                ("w4a8", DENSE, "weight", [256 // 64, 256 * 64 * 4 // 32]),
                ("w8a8-int8", DENSE, "weight", [256, 256 * 8 // 32]),
                ("zp-int", STACK, "zero_point", [4, 384 // 128, 768 * 4 // 32]),
                ("nvfp4", STACK, "weight_scale_2", [4]),
                ("nvfp4-ch", STACK, "weight_scale_2", [4, 768]),
                ("nvfp4-ch", DENSE, "weight_scale_2", [512]),
                ("mxfp4-odd", ODD, "weight_scale", [384 // 32, 512]),
                ("mxfp4-odd", ODD, "bias", [512]),
                ("mxfp4-a8", ODD, "weight_scale_2", [1]),
                ("mxfp4-int8", DENSE, "weight_scale_2", [256]),
                ("mxfp4a8-sm100", DENSE, "weight", [256, 256 * 4 // 32]),
                ("mxfp4a8-sm100", DENSE, "weight_scale", [256 // 32 // 4, 256]),
                ("mxfp4a8-sm120", DENSE, "weight_scale", [256 // 32 // 2, 256 // 2])]
        for name, p, t, shape in spot:
            sm = arch_of([f for c in CASES if c[0] == name for f in c[2]])[0]
            got = check_layer(outs[name], p, **dict(ENV, sm_version=sm))["tensors"][t][3]
            if got != shape:
                print(f"  {name} {p}.{t}: shape {got}, expected {shape}")
                failed.append(f"{name}:{t}")

        # refusals: (label, out_dir, prefix, kwargs, words the message must hold)
        base = outs["w4a16"]
        canon = os.path.join(d, "canonical")
        run([CLI, models["example"], canon, "--format", "w4a16", "--arch", "sm90", "-q",
             "--verify", "off"])

        def set_lc(key, value, prefix=DENSE):
            return lambda c: c["quantization_config"]["layers"][prefix]["layer_config"].__setitem__(key, value)

        def repad(c):  # consistent record and LayerConfig, but padded to 512 instead of 256
            r = c["quantization_config"]["layers"][DENSE]
            r["padded_n"] = 512
            r["layer_config"].update(shape_n=512, pad_shape_n=256)

        def drop_scale(ix):
            del ix["weight_map"][STACK + ".weight_scale"]

        def add_input_scale(ix):
            ix["weight_map"][STACK + ".input_scale"] = ix["weight_map"][STACK + ".weight"]

        sharded = outs["sharded"]
        if not os.path.exists(os.path.join(sharded, "model.safetensors.index.json")):
            print("  sharded: the output is not sharded (no model.safetensors.index.json)")
            failed.append("sharded")
        refusals = [
            ("humming 0.1.20", base, DENSE, dict(ENV, humming_version="0.1.20"), ["0.1.20", "0.1.19"]),
            ("sm89 GPU", base, DENSE, dict(ENV, sm_version=89), ["sm90", "sm89"]),
            ("sm100 GPU", base, STACK, dict(ENV, sm_version=100), ["sm90", "sm100"]),
            ("bfloat16", base, DENSE, dict(ENV, dtype="bfloat16"), ["float16", "bfloat16"]),
            ("torch.bfloat16", base, DENSE, dict(ENV, dtype="torch.bfloat16"), ["bfloat16"]),
            ("unknown layer", base, "model.layers.9.mlp.down_proj", ENV, ["not a converted layer"]),
            ("per-expert name", base, "model.layers.1.mlp.experts.0.gate_proj", ENV, ["expert stacks"]),
            ("canonical output", canon, DENSE, ENV, ["canonical layout"]),
            ("no layout_version", edited(base, os.path.join(d, "e1"),
             lambda c: c["quantization_config"].pop("layout_version")), DENSE, ENV, ["layout_version"]),
            ("quant_method", edited(base, os.path.join(d, "e2"),
             lambda c: c["quantization_config"].__setitem__("quant_method", "gptq")), DENSE, ENV,
             ["not a humming-convert tiles output"]),
            ("no humming_version", edited(base, os.path.join(d, "e3"),
             lambda c: c["quantization_config"].pop("humming_version")), DENSE, ENV, ["humming_version"]),
            ("padding not vLLM's", edited(base, os.path.join(d, "e4"), repad), DENSE, ENV,
             ["pads it to 256"]),
            ("pad_shape_n", edited(base, os.path.join(d, "e5"), set_lc("pad_shape_n", 8)), DENSE, ENV,
             ["disagree"]),
            ("b_dtype", edited(base, os.path.join(d, "e6"), set_lc("b_dtype", "uint8")), DENSE, ENV,
             [DENSE + ".weight", "needs"]),
            ("bias claimed", edited(base, os.path.join(d, "e7"), set_lc("has_bias", True)), DENSE, ENV,
             [DENSE + ".bias is missing"]),
            ("c_dtype", edited(base, os.path.join(d, "e8"), set_lc("c_dtype", "bfloat16")), DENSE, ENV,
             ["param_dtype"]),
            ("torch_dtype", edited(base, os.path.join(d, "e9"),
             lambda c: c.__setitem__("torch_dtype", "bfloat16")), DENSE, ENV, ["torch_dtype"]),
            ("num_experts", edited(base, os.path.join(d, "e10"), set_lc("num_experts", 2, STACK)), STACK,
             ENV, ["num_experts"]),
            ("sharded, scale gone", edited(sharded, os.path.join(d, "e11"), drop_scale,
             "model.safetensors.index.json"), STACK, ENV, [STACK + ".weight_scale is missing"]),
            ("sharded, extra tensor", edited(sharded, os.path.join(d, "e12"), add_input_scale,
             "model.safetensors.index.json"), STACK, ENV, [STACK + ".input_scale"]),
        ]
        for label, out, p, kw, words in refusals:
            try:
                check_layer(out, p, **kw)
                msg = None
            except ValueError as e:
                msg = str(e)
            ok = msg is not None and p in msg and all(w in msg for w in words)
            print(f"refused {label:22s} " + (msg if ok else f"FAILED: {msg!r} lacks {words} / {p}"))
            if not ok:
                failed.append(label)
        # a local build tag is the same release
        check_layer(base, DENSE, **dict(ENV, humming_version="0.1.19+cu128"))

    if "torch" in sys.modules or "humming" in sys.modules:
        print("FAILED: the loader's checks imported torch or humming")
        failed.append("imports")
    print(f"tiles loader (CPU): {len(CASES)} outputs, {len(refusals)} refusals"
          + (f"; FAILED: {failed}" if failed else "; all as expected"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
