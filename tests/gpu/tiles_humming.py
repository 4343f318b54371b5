#!/usr/bin/env python3
"""GPU check of the tiles layout and python/humming_convert with the real humming-kernels
(0.1.19, the version vLLM 0.33.0 pins). For each model and preset the model is converted
twice, with `--layout tiles --humming-version 0.1.19 --arch sm90` and into the default
canonical layout; every converted layer P of the tiles output is then

  ours: humming_convert.load_layer(TILES, P)             (no transform), and
  (a)   Humming's own path: HummingLayer.from_safetensors(CANONICAL, P, 256, 128,
        torch_dtype).cuda(); .transform()                (Humming's standalone transform)
  (v)   vLLM 0.33's call sequence on the same canonical tensors:
        prepare_and_transform_humming_tensors(pad 256 / 128), after vLLM's MoE path's
        convert_symmetric_integer_weight for expert stacks (decided over gate and up
        together, as vLLM decides it for w13) and without it for dense layers;

and compared: the LayerConfig (to_str(), and our recorded object against Humming's
to_str() fields), every transformed tensor (names, dtypes, shapes, bytes) and the
outputs of humming_forward on the same random activations (bit for bit, or within the
run-to-run spread of Humming's own output where Humming is not deterministic).

Our tiles follow vLLM, so (v) must match exactly. (a) must match too, except where
Humming's standalone transform is documented to differ from vLLM's sequence: it recodes
symmetric integer weights with no code 0 as float{b}e0m{b-1} on dense layers too, and it
calls prepare_fp16_e8m0_scale (a second scale for e8m0 exponents outside fp16's range);
a layer whose only differences from (a) are those LayerConfig fields, and which equals
(v), is reported as such and passes.

MoE: the tiles hold one stack per projection (X.experts.Y, E experts); the canonical
output holds experts one by one (X.experts.<e>.Y). (a) is Humming's standalone
HummingLayer with num_experts = E built from the stacked canonical tensors, (v) vLLM's
sequence on the same stack; the tensors are compared whole, and the forward per expert
as a dense layer (TilesLayer.expert(e); Humming's MoE GEMM needs routing, not run here).

nvfp4 is converted with --global-scale channel in both layouts (FORMAT_FLAGS): the
canonical layout makes the second scale of fused modules per channel, the tiles keep a
per-tensor one unless told; the per-tensor form is golden-0119's w4a16_nvfp4 vector.
When the canonical layout refuses a preset for the whole model, both layouts are
converted again with a recipe that quantizes only o_proj and mlp.down_proj (modules
vLLM does not fuse), and those are compared.
A conversion the CLI refuses in the tiles layout is listed as refused, not a failure.

  tiles_humming.py CLI GEN WORK_DIR

Models (HC_TILES_MODELS, default "example odd padded", done in that order):
example = gen_example_model float16 (the brief's model: 2 layers, layer 1 MoE);
odd = one float16 o_proj 296 x 320 with a bias (N and K padded: 512 x 384);
padded = gen_example_model --hidden 384 --intermediate 640 (N padded, MoE included).
HC_TILES_VERSION (default 0.1.19): the --humming-version of the tiles, to be run with
that humming-kernels installed (0.1.20: the layers it refuses are listed as refused).
Presets: HC_PRESETS. HC_TILES_BUDGET_S (default 480): no new conversion starts after
that many seconds; what was not run is listed and the run fails.
Prints one line per model and preset, and exits 1 on any mismatch or error."""
import json
import os
import subprocess
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
sys.path.insert(0, os.path.join(HERE, "..", "py"))

import torch  # noqa: E402

from humming.forward import humming_forward  # noqa: E402,F401  (the loader's forward calls it)
from humming.layer import HummingLayer  # noqa: E402
from humming.transform import prepare_and_transform_humming_tensors  # noqa: E402
import humming_convert  # noqa: E402
from humming_convert import TilesLayer  # noqa: E402
from test_tiles_loader import write_odd  # noqa: E402

RELEASE = os.environ.get("HC_TILES_VERSION", "0.1.19")
PRESETS = ("w4a16 w8a16 w2a16 w4a8 w4a8-int8 w8a8 w8a8-int8 mxfp4 mxint4 fp8 nvfp4 mxfp4-a8 "
           "mxfp4-int8 w1a16 w3a16 w5a16 w6a16 w7a16 w4a4")
# formats that are not presets of --list-formats: their CLI flags
FORMAT_FLAGS = {"mxfp4-int8": ["--format", "mxfp4", "--activation", "int8"],
                "nvfp4": ["--format", "nvfp4", "--global-scale", "channel"]}  # the form both layouts hold
NAMES = humming_convert.tiles.TENSOR_NAMES
PAD_N, PAD_K, M = 256, 128, 16
PARTNER = {"gate_proj": "up_proj", "up_proj": "gate_proj", "w1": "w3", "w3": "w1"}
STANDALONE_ONLY = {"b_dtype", "weight_scale_2_type"}  # fields (a) may differ in (see above)
DENSE_ONLY_RECIPE = """defaults:
  format: {preset}
rules:
  - targets: ['.*']
    skip: true
  - targets: ['.*\\.o_proj', '.*\\.mlp\\.down_proj']
    skip: false
"""


def log(*a):
    print(*a, flush=True)


def convert(cli, src, out, args):
    """(ok, message): runs the CLI; exit 1/2 with an error line is a refusal, anything else
    non-zero (3: verification failed, a signal) an error."""
    r = subprocess.run([cli, src, out, "--arch", "sm90", "--verify", "cpu", "-q"] + args,
                       capture_output=True, text=True)
    if r.returncode == 0:
        return True, ""
    last = (r.stderr.strip().splitlines() or ["(no message)"])[-1]
    kind = "refused" if r.returncode in (1, 2) and "error:" in r.stderr else f"ERROR rc {r.returncode}"
    return False, f"{kind}: {last}"


def tiles_layers(out):
    q = json.load(open(os.path.join(out, "config.json")))["quantization_config"]
    return {p: r for p, r in q["layers"].items() if isinstance(r, dict) and "layer_config" in r}


def cfg_fields(cfg):
    return json.loads(cfg.to_str())


def cfg_diff(a, b):
    """Fields of two LayerConfigs (or their JSON objects) that differ: name -> (a, b)."""
    a = a if isinstance(a, dict) else cfg_fields(a)
    b = b if isinstance(b, dict) else cfg_fields(b)
    return {k: (a.get(k), b.get(k)) for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)}


def tensor_diffs(ours, ref):
    out = []
    for n in sorted(set(ours) | set(ref)):
        if n not in ref:
            out.append(f"{n}: only in ours")
            continue
        if n not in ours:
            out.append(f"{n}: only in Humming's")
            continue
        a, b = ours[n], ref[n]
        if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
            out.append(f"{n}: ours {a.dtype} {tuple(a.shape)}, Humming's {b.dtype} {tuple(b.shape)}")
            continue
        ab = a.detach().contiguous().view(torch.uint8).flatten()
        bb = b.detach().contiguous().view(torch.uint8).flatten()
        ne = int((ab != bb).sum().item())
        if ne:
            out.append(f"{n}: {ne} of {ab.numel()} bytes differ")
    return out


def same_output(y, ref, ref2):
    """(equal, note): bit for bit, or within Humming's own run-to-run spread."""
    if y.shape != ref.shape or y.dtype != ref.dtype:
        return False, f"output {tuple(y.shape)} {y.dtype} vs {tuple(ref.shape)} {ref.dtype}"
    if torch.equal(y, ref):
        return True, ""
    d = (y.float() - ref.float()).abs().max().item()
    spread = (ref2.float() - ref.float()).abs().max().item()
    if spread > 0 and d <= spread:
        return True, f"within Humming's run-to-run spread {spread:.3g} (max diff {d:.3g})"
    return False, f"outputs differ: max |diff| {d:.3g} (Humming's run-to-run spread {spread:.3g})"


def params(layer):
    return {n: t for n, t in layer.named_parameters()}


def transformed(layer):
    return {n: getattr(layer, n) for n in NAMES if getattr(layer, n, None) is not None}


def vllm_sequence(layer, tdt, partner=None):
    """vLLM 0.33's load of the same canonical tensors (module docstring): LayerConfig and
    transformed tensors."""
    tensors = {n: t.detach().clone().cuda() for n, t in params(layer).items()}
    schema = layer.weight_schema
    if layer.num_experts:
        probe = tensors
        if partner is not None:  # vLLM decides for w13 = gate and up concatenated along N
            other = {n: t.detach().cuda() for n, t in params(partner).items()}
            probe = {n: torch.cat([tensors[n], other[n]], dim=1)
                     for n in ("weight", "zero_point") if n in tensors}
        recoded, _ = schema.convert_symmetric_integer_weight(dict(probe))
        if recoded.b_dtype != schema.b_dtype:
            schema, tensors = schema.convert_symmetric_integer_weight(tensors)
            assert schema.b_dtype == recoded.b_dtype
    return prepare_and_transform_humming_tensors(
        tensors=tensors, shape_n=layer.shape_n, shape_k=layer.shape_k, weight_schema=schema,
        input_schema=layer.input_schema, num_experts=layer.num_experts or None,
        pad_n_to_multiple=PAD_N, pad_k_to_multiple=PAD_K, has_bias=layer.has_bias,
        torch_dtype=tdt, device=torch.device("cuda"))


def stacked_layer(canon, stack_prefix, experts, tdt):
    """Humming's standalone MoE layer (num_experts = E) holding the canonical experts
    X.experts.<e>.Y of the tiles stack X.experts.Y, not transformed (on the CPU)."""
    x, y = stack_prefix.rsplit(".", 1)
    per = [HummingLayer.from_safetensors(canon, f"{x}.{e}.{y}", pad_n_to_multiple=PAD_N,
                                         pad_k_to_multiple=PAD_K, torch_dtype=tdt)
           for e in range(experts)]
    l0 = per[0]
    layer = HummingLayer(shape_n=l0.shape_n, shape_k=l0.shape_k, weight_config=l0.weight_schema,
                         input_config=l0.input_schema, pad_n_to_multiple=PAD_N,
                         pad_k_to_multiple=PAD_K, num_experts=experts, has_bias=l0.has_bias,
                         torch_dtype=tdt)
    stacked = {}
    for n, p in params(layer).items():
        stacked[n] = torch.stack([params(lay)[n].detach() for lay in per]).reshape(p.shape)
    layer.load_from_tensors(stacked)
    return layer


def references(canon, p, rec, tdt, stacks):
    """[(name, LayerConfig, tensors, run(expert or None, x))] for (a) and (v); `stacks`:
    the tiles output's layer names (to find an expert stack's gate/up partner)."""
    experts = int(rec["num_experts"] or 0)
    if experts:
        layer = stacked_layer(canon, p, experts, tdt)
        x, y = p.rsplit(".", 1)
        partner = None
        if y in PARTNER and f"{x}.{PARTNER[y]}" in stacks:
            partner = stacked_layer(canon, f"{x}.{PARTNER[y]}", experts, tdt)
    else:
        layer = HummingLayer.from_safetensors(canon, p, pad_n_to_multiple=PAD_N,
                                              pad_k_to_multiple=PAD_K, torch_dtype=tdt)
        partner = None
    v_cfg, v_t = vllm_sequence(layer, tdt, partner)
    layer = layer.cuda()
    layer.transform()
    a_cfg, a_t = layer.humming_config, transformed(layer)

    def runner(cfg, tensors, standalone=None):
        tl = TilesLayer(p, cfg, cfg_fields(cfg), tensors,
                        torch.zeros((2048,), dtype=torch.int32, device="cuda"), tdt)

        def run(e, x):
            if e is None:
                return standalone(x) if standalone is not None else tl(x)
            return tl.expert(e)(x)
        return run
    return [("a", a_cfg, a_t, runner(a_cfg, a_t, None if experts else layer)),
            ("v", v_cfg, v_t, runner(v_cfg, v_t))]


def check_layer(tiles, canon, p, rec, gen, stacks):
    """(status, notes): status 'a' (equal to Humming's standalone transform and to vLLM's
    sequence), 'v' (equal to vLLM's sequence; differs from the standalone transform only as
    documented) or 'FAIL'."""
    ours = humming_convert.load_layer(tiles, p)
    tdt = ours.dtype
    notes = []
    literal = cfg_diff(dict(rec["layer_config"]), cfg_fields(ours.layer_config))
    if literal:
        notes.append(f"our recorded object differs from LayerConfig(**obj).to_str() in {literal}")
    experts = int(rec["num_experts"] or 0)
    k = int(rec["shape_k"])
    x = torch.randn(M, k, generator=gen, device="cuda", dtype=torch.float32).to(tdt)
    ours_y = [ours(x)] if not experts else [ours.expert(e)(x) for e in range(experts)]
    verdict = {}
    for name, cfg, tensors, run in references(canon, p, rec, tdt, stacks):
        cd = cfg_diff(ours.layer_config, cfg)
        td = tensor_diffs(ours.tensors(), tensors)
        yd = []
        for i, e in enumerate([None] if not experts else range(experts)):
            r1, r2 = run(e, x), run(e, x)
            ok, note = same_output(ours_y[i], r1, r2)
            if not ok:
                yd.append(f"expert {e}: {note}" if e is not None else note)
            elif note:
                notes.append(f"({name}) {note}")
        verdict[name] = (cd, td, yd)
    a, v = verdict["a"], verdict["v"]
    equal_a, equal_v = not any(a), not any(v)
    if equal_a and equal_v:
        return "a", notes
    if equal_v and a[0] and set(a[0]) <= STANDALONE_ONLY:
        notes.append(f"Humming's standalone transform differs only as documented: LayerConfig "
                     f"{a[0]}; tensors {a[1]}; outputs {a[2] or 'equal'}")
        return "v", notes
    for name, (cd, td, yd) in verdict.items():
        label = {"a": "HummingLayer.transform", "v": "vLLM's sequence"}[name]
        if cd or td or yd:
            notes.append(f"vs {label}: LayerConfig {cd or 'equal'}; tensors {td or 'equal'}; "
                         f"outputs {yd or 'equal'}")
    return "FAIL", notes


def compare(tiles, canon, label, gen):
    layers = tiles_layers(tiles)
    n_a = n_v = 0
    bad, stacks = [], 0
    for p, rec in layers.items():
        try:
            status, notes = check_layer(tiles, canon, p, rec, gen, layers)
        except Exception as e:  # noqa: BLE001 - reported per layer, the run goes on
            status, notes = "FAIL", [f"{type(e).__name__}: {e}"]
            if not bad:  # the first one of this output in full
                traceback.print_exc()
        stacks += 1 if int(rec["num_experts"] or 0) else 0
        if status == "a":
            n_a += 1
        elif status == "v":
            n_v += 1
        else:
            bad.append(p)
        for n in notes:
            log(f"    {p}: {status}: {n}")
    log(f"TILES {label}: {len(layers)} layers ({stacks} MoE stacks): {n_a} equal to "
        f"HummingLayer.transform and vLLM's sequence, {n_v} equal to vLLM's sequence only"
        + (f"; FAILED: {bad}" if bad else "; tensors, LayerConfig and outputs equal"))
    return not bad and len(layers) > 0


def main():
    cli, gen_bin, work = sys.argv[1:4]
    import humming
    major, minor = torch.cuda.get_device_capability()
    log("humming", getattr(humming, "__version__", "?"), "torch", torch.__version__,
        torch.cuda.get_device_name(), f"sm{major}{minor}")
    if (major, minor) != (9, 0):
        log(f"NOTE: the outputs are converted for sm90; this GPU is sm{major}{minor}: "
            "load_layer will refuse them")
    budget = float(os.environ.get("HC_TILES_BUDGET_S", "480"))
    start = time.time()
    presets = os.environ.get("HC_PRESETS", PRESETS).split()
    models = os.environ.get("HC_TILES_MODELS", "example odd padded").split()
    gen = torch.Generator(device="cuda").manual_seed(7)
    ok, refused, not_run, failed = [], [], [], []
    for model in models:
        src = os.path.join(work, "in-" + model)
        if not os.path.isdir(src):
            if model == "odd":
                write_odd(src)
            else:
                extra = ["--hidden", "384", "--intermediate", "640"] if model == "padded" else []
                subprocess.run([gen_bin, src, "--format", "float16"] + extra, check=True,
                               capture_output=True)
        for preset in presets:
            label = f"{model:7s} {preset:10s}"
            if time.time() - start > budget:
                not_run.append(label.split()[0] + ":" + preset)
                continue
            t0 = time.time()
            tiles, canon = (os.path.join(work, f"{model}-{preset}-{k}") for k in ("tiles", "canonical"))
            fmt = FORMAT_FLAGS.get(preset, ["--format", preset])
            t_ok, t_msg = convert(cli, src, tiles, fmt + ["--layout", "tiles",
                                                          "--humming-version", RELEASE])
            if not t_ok:
                (refused if t_msg.startswith("refused") else failed).append(f"{model}:{preset}")
                log(f"TILES {label}: tiles {t_msg}")
                continue
            c_ok, c_msg = convert(cli, src, canon, fmt)
            if not c_ok and c_msg.startswith("refused"):
                recipe = os.path.join(work, f"dense-only-{preset}.yaml")
                with open(recipe, "w") as f:
                    f.write(DENSE_ONLY_RECIPE.format(preset=preset))
                log(f"TILES {label}: canonical {c_msg}; comparing o_proj and mlp.down_proj only")
                tiles, canon = tiles + "-dense", canon + "-dense"
                t_ok, t_msg = convert(cli, src, tiles, ["--recipe", recipe, "--layout", "tiles",
                                                        "--humming-version", RELEASE])
                c_ok, c_msg = convert(cli, src, canon, ["--recipe", recipe])
                if not (t_ok and c_ok):
                    log(f"TILES {label}: o_proj/down_proj only: tiles {t_msg or 'ok'}, "
                        f"canonical {c_msg or 'ok'}")
                    (failed if "ERROR" in t_msg + c_msg else refused).append(f"{model}:{preset}")
                    continue
            elif not c_ok:
                log(f"TILES {label}: canonical {c_msg}")
                failed.append(f"{model}:{preset}")
                continue
            good = compare(tiles, canon, label, gen)
            (ok if good else failed).append(f"{model}:{preset}")
            log(f"      ({time.time() - t0:.0f} s)")
    log(f"tiles_humming: {len(ok)} model/preset pairs equal, {len(refused)} refused by the CLI "
        f"{refused}, {len(failed)} failed {failed}"
        + (f", NOT RUN (HC_TILES_BUDGET_S={budget:g} s spent): {not_run}" if not_run else "")
        + f"; {time.time() - start:.0f} s")
    good = not failed and not not_run and bool(ok or refused)  # a run of one refused pair (HC_TILES_JOBS) checked something
    log("tiles_humming:", "OK" if good else "FAILED")
    return 0 if good else 1


if __name__ == "__main__":
    sys.exit(main())
