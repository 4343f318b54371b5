#!/usr/bin/env python3
"""Independent reader of our canonical output, written from vLLM 0.33.0's
Humming path and humming-kernels 0.1.19 (not from our C code):

  * quantization_config as vLLM resolves it per module
    (vllm/model_executor/layers/quantization/humming.py: is_layer_skipped,
    get_quant_config_for_layer; utils/humming/schema.py:
    resolve_humming_layer_config) and as Humming's
    HummingLayer.from_safetensors resolves it per checkpoint prefix
    (humming/layer.py); field names as HummingWeightSchema / HummingInputSchema
    read them (humming/schema/base.py from_config: a field's own name, else
    its aliases; never an alias here, since weight and input schemas read the
    same dict);
  * tensor names, dtypes and shapes as HummingWeightSchema.get_tensors_attrs
    declares them (humming/schema/humming.py), MoE experts under per-expert
    keys as vLLM's FusedMoE loader reads them;
  * the values as humming/utils/weight.py dequantize_weight defines them.

Converts the bundled example model with every preset the canonical layout can
hold, dequantizes every layer with numpy and checks the error against the
source weights and against our own report. Exits 77 (skipped) when numpy /
ml_dtypes are missing."""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

try:
    import ml_dtypes
    import numpy as np
    from safetensors import safe_open
except ImportError as e:
    print(f"SKIP[oracle]: {e}; canonical reader test skipped")
    sys.exit(77)

BUILD = os.environ.get("HC_BUILD", "build")
CLI = os.environ.get("HC_CLI", os.path.join(BUILD, "humming-convert"))
GEN = os.path.join(BUILD, "examples", "gen_example_model")

ALIASES = {"dtype", "group_size", "scale_dtype", "weight_dtype", "weight_scale_dtype",
           "group_size_n", "scale_type", "scale_2_type", "input_dtype", "quant_mode",
           "quantization_mode"}
ST_DTYPES = {"F16": np.float16, "BF16": ml_dtypes.bfloat16, "F32": np.float32, "I32": np.int32,
             "F8_E4M3": ml_dtypes.float8_e4m3fn, "F8_E5M2": ml_dtypes.float8_e5m2,
             "F8_E8M0": ml_dtypes.float8_e8m0fnu, "U8": np.uint8, "I64": np.int64,
             "I8": np.int8, "I16": np.int16, "U16": np.uint16, "U32": np.uint32, "F64": np.float64,
             "BOOL": np.bool_}
SCALE_ST = {"float8e4m3": "F8_E4M3", "float8e5m2": "F8_E5M2", "float8e8m0": "F8_E8M0",
            "float32": "F32", "float16": "F16", "bfloat16": "BF16"}


def read_safetensors(path):
    """name -> (dtype, shape, numpy array): the file format read by hand."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, h in header.items():
        if name == "__metadata__":
            continue
        a, b = h["data_offsets"]
        arr = np.frombuffer(data[a:b], dtype=ST_DTYPES[h["dtype"]]).reshape(h["shape"])
        out[name] = (h["dtype"], tuple(h["shape"]), arr)
    return out


def load_dir(d):
    tensors = {}
    for fn in sorted(os.listdir(d)):
        if fn.endswith(".safetensors"):
            tensors.update(read_safetensors(os.path.join(d, fn)))
            with safe_open(os.path.join(d, fn), "np") as f:  # the real reader opens it
                assert set(f.keys()) <= set(tensors), fn
    return tensors


# ---- config resolution (vLLM / Humming) ---------------------------------------------
def vllm_module(prefix):
    """The module vLLM loads a checkpoint prefix into (its packed_modules_mapping)."""
    m = re.match(r"^(.*\.experts)\.\d+\.[^.]+$", prefix)
    if m:
        return m.group(1)
    head, _, last = prefix.rpartition(".")
    if last in ("q_proj", "k_proj", "v_proj", "query", "key", "value"):
        return head + ".qkv_proj"
    if last in ("gate_proj", "up_proj"):
        return head + ".gate_up_proj"
    return prefix


def vllm_skipped(cfg, prefix):
    """humming.py is_layer_skipped."""
    ignore = next((cfg[k] for k in ("ignored_layers", "ignore", "modules_to_not_convert")
                   if k in cfg), []) or []
    for e in ignore:
        if (e.startswith("re:") and re.match(e[3:], prefix)) or (not e.startswith("re:") and e in prefix):
            return True
    if "lm_head" in prefix:
        return True
    return any(k.startswith("-") and re.match(k[2:], prefix) for k in cfg.get("dynamic", {}))


def resolve(cfg, prefix):
    """utils/humming/schema.py resolve_humming_layer_config (and from_safetensors' loop)."""
    layer = dict(cfg)
    for k, v in cfg.get("dynamic", {}).items():
        if k.startswith("+") and re.match(k[2:], prefix):
            layer.update(v)
            break
    return layer


def check_keys(cfg):
    bad = ALIASES & set(cfg)
    for v in cfg.get("dynamic", {}).values():
        bad |= ALIASES & set(v)
    assert not bad, f"aliases in quantization_config: {bad}"
    assert cfg["quant_method"] == "humming"
    assert "b_dtype" in cfg, "b_dtype is required by HummingWeightSchema"


# ---- HummingWeightSchema -------------------------------------------------------------
def bits_of(dt):
    m = re.match(r"^u?int(\d+)$", dt) or re.match(r"^float(\d+)_*e(\d+)m(\d+)$", dt)
    assert m, f"b_dtype {dt} is no Humming dtype string"
    return int(m.group(1))


def expected_tensors(s, N, K, param):
    """get_tensors_attrs: name -> (safetensors dtype, shape)."""
    b = bits_of(s["b_dtype"])
    g = s.get("weight_scale_group_size") or K
    gn = s.get("weight_scale_group_size_n") or 0
    st = s.get("weight_scale_type") or ("block" if gn > 1 else "channel" if g == K else "group")
    sd = "F32" if st == "block" else SCALE_ST.get(s.get("bs_dtype") or param)
    out = {"weight": ("I32", (N, K * b // 32))}
    if st == "group":
        out["weight_scale"] = (sd, (N, K // g))
    elif st == "channel":
        out["weight_scale"] = (sd, (N, 1))
    elif st == "block":
        out["weight_scale"] = ("F32", (N // gn, K // g))
    else:
        out["weight_scale"] = ("F32", (1,))
    if s.get("has_zero_point"):
        out["zero_point"] = ((SCALE_ST[param], (N, K // g)) if s.get("is_fp_zero_point")
                             else ("I32", (N * b // 32, K // g)))
    t2 = s.get("weight_scale_2_type") or "none"
    if t2 == "tensor":
        out["weight_scale_2"] = ("F32", (1,))
    elif t2 == "channel":
        out["weight_scale_2"] = (SCALE_ST[param], (N,))
    return out, st, g, gn


def unpack(words, b, n):
    """Humming's pack_weight stream: code i at bit i*b of the little-endian words."""
    bits = np.unpackbits(words.astype("<u4").view(np.uint8), axis=-1, bitorder="little")
    bits = bits[..., : n * b].reshape(*words.shape[:-1], n, b).astype(np.int64)
    return (bits << np.arange(b)).sum(-1)


def decode_float(codes, dt):
    _, e, m = map(int, re.match(r"^float(\d+)_*e(\d+)m(\d+)$", dt).groups())
    b = 1 + e + m
    sign = np.where((codes >> (b - 1)) & 1, -1.0, 1.0)
    ex = (codes >> m) & ((1 << e) - 1)
    man = codes & ((1 << m) - 1)
    if e == 0:  # e0mM: sign-magnitude integers
        return sign * man
    bias = (1 << (e - 1)) - 1
    val = np.where(ex == 0, man / (1 << m) * 2.0 ** (1 - bias), (1 + man / (1 << m)) * 2.0 ** (ex - bias))
    return sign * val  # fp8 e4m3's NaN code never occurs in a quantized weight


def dequant(s, t, N, K, param):
    """humming/utils/weight.py dequantize_weight, in float64."""
    b = bits_of(s["b_dtype"])
    _, st, g, gn = expected_tensors(s, N, K, param)
    codes = unpack(t["weight"][2], b, K)
    if s["b_dtype"].startswith(("uint", "int")):
        if s.get("has_zero_point") and not s.get("is_fp_zero_point"):
            zp = unpack(np.ascontiguousarray(t["zero_point"][2].T), b, N).T
            w = codes - np.repeat(zp, g, axis=1)
        elif s.get("has_zero_point"):
            w = codes - np.repeat(t["zero_point"][2].astype(np.float64), g, axis=1)
        else:
            w = codes - (1 << (b - 1))
    else:
        w = decode_float(codes, s["b_dtype"])
    sc = t["weight_scale"][2].astype(np.float64)
    if st == "block":
        sc = np.repeat(np.repeat(sc, gn, axis=0), g, axis=1)
    elif st != "tensor":
        sc = np.repeat(sc, g if st == "group" else K, axis=1)
    w = w * sc
    if "weight_scale_2" in t:
        s2 = t["weight_scale_2"][2].astype(np.float64)
        w = w * (s2.reshape(-1, 1) if s2.size == N and N > 1 else s2.reshape(1, 1))
    return w


# ---- one output --------------------------------------------------------------------
def layer_prefixes(out):
    return sorted(n[:-7] for n, (dt, _, _) in out.items() if n.endswith(".weight") and dt == "I32")


def check_output(src_dir, out_dir, name):
    cfg_all = json.load(open(os.path.join(out_dir, "config.json")))
    cfg = cfg_all["quantization_config"]
    param = {"float16": "float16", "bfloat16": "bfloat16"}[cfg_all["torch_dtype"]]
    check_keys(cfg)
    src, out = load_dir(src_dir), load_dir(out_dir)
    report = {l["name"]: l for l in json.load(open(os.path.join(out_dir, "humming_report.json")))["layers"]}
    stacks = {}
    worst = 0.0
    for p in layer_prefixes(out):
        mod = vllm_module(p)
        assert not vllm_skipped(cfg, mod), f"{name}: {p}: vLLM would skip {mod} but it is quantized"
        s_vllm, s_hf = resolve(cfg, mod), resolve(cfg, p)
        keys = set(s_vllm) - {"dynamic"}
        assert {k: s_vllm.get(k) for k in keys} == {k: s_hf.get(k) for k in keys}, \
            f"{name}: {p}: vLLM ({mod}) and from_safetensors resolve different formats"
        N = out[p + ".weight"][1][0]
        K = out[p + ".weight"][1][1] * 32 // bits_of(s_vllm["b_dtype"])
        want, _, _, _ = expected_tensors(s_vllm, N, K, param)
        if (p + ".bias") in src:
            want["bias"] = (SCALE_ST[param], (N,))
        got = {n[len(p) + 1:]: (dt, sh) for n, (dt, sh, _) in out.items()
               if n.startswith(p + ".") and "." not in n[len(p) + 1:]}
        assert got == want, f"{name}: {p}: tensors {got} != get_tensors_attrs {want}"
        w = dequant(s_vllm, {k: out[p + "." + k] for k in want}, N, K, param)
        ref = src[p + ".weight"][2].astype(np.float64)
        key = re.sub(r"\.experts\.\d+\.", ".experts.", p)  # our report names a stack once
        acc = stacks.setdefault(key, [0.0, 0.0])
        acc[0] += float(((w - ref) ** 2).sum())
        acc[1] += float((ref ** 2).sum())
    for key, (e2, r2) in stacks.items():
        rel = (e2 / r2) ** 0.5
        ours = report[key]["weight_rel_err"]
        assert abs(rel - ours) <= 1e-6 + 1e-3 * ours, f"{name}: {key}: numpy rel err {rel} vs ours {ours}"
        assert report[key]["status"] == "pass", f"{name}: {key}: report says {report[key]['status']}"
        worst = max(worst, rel)
    for n, (dt, sh, _) in src.items():  # every float linear weight left alone is skipped by vLLM
        if n.endswith(".weight") and len(sh) == 2 and not n.startswith(tuple(s + "." for s in stacks)):
            p = n[:-7]
            if p + ".weight" in out and out[p + ".weight"][0] != "I32":
                assert vllm_skipped(cfg, vllm_module(p)), f"{name}: {p} is float but vLLM would quantize it"
    print(f"{name:10s} {len(layer_prefixes(out)):3d} canonical layers ({len(stacks)} report layers), "
          f"worst weight rel err {worst:.4f}, equal to our report")


CASES = [("w4a16", "sm90"), ("w8a16", "sm90"), ("w2a16", "sm90"), ("w4a8", "sm90"),
         ("w4a8-int8", "sm90"), ("w8a8", "sm90"), ("w8a8-int8", "sm90"), ("w4a4", "sm80"),
         ("mxfp4", "sm90"), ("mxfp4-a8", "sm90"), ("mxint4", "sm90"), ("fp8", "sm90"),
         ("nvfp4", "sm90")]  # q/k/v, gate/up and experts: weight_scale_2 per channel
REFUSED = {"w4a4": "int4 activations on sm75-sm89 only"}


def main():
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "in")
        subprocess.run([GEN, src, "--format", "float16"], check=True, capture_output=True)
        for fmt, arch in CASES:
            out = os.path.join(d, fmt)
            r = subprocess.run([CLI, src, out, "--format", fmt, "--arch", arch, "-q"],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(f"{fmt}: conversion failed ({r.returncode}): {r.stderr}")
                return 1
            check_output(src, out, fmt)
        for fmt, why in REFUSED.items():
            r = subprocess.run([CLI, src, os.path.join(d, fmt), "--format", fmt, "--arch", "sm90",
                                "-q"],
                               capture_output=True, text=True)
            if r.returncode == 0 or why not in r.stderr:
                print(f"{fmt}: expected a refusal naming '{why}', got {r.returncode}: {r.stderr}")
                return 1
            print(f"{fmt:10s} refused as expected: {r.stderr.strip()[:140]}...")
    print("test_canonical_vllm: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
