#!/usr/bin/env python3
"""Reference vectors of humming-kernels 0.1.19 for the paths shared/golden-0119 lacks:
MXFP4 weights x fp8 e4m3 / int8 activations (the fused-e8m0 path) on sm90, and layers
transformed for sm100 and sm120. Run on a GPU machine with the real 0.1.19 installed
(tests/gpu/run_gen_vectors0119.sh); written in the format of shared/golden-0119
(README there), one safetensors file per vector:

  pre.*       the canonical tensors: Humming's own quantizer
              (HummingWeightSchema.quant_tensor) on a seeded random weight
  post.*      what vLLM 0.33's load gives: prepare_and_transform_humming_tensors(
              pad_n_to_multiple=256, pad_k_to_multiple=128) (the activation as asked:
              quantization_config has "allow_fallback": false)
  x, y.humming  sm90 dense vectors only: humming_forward on 16 random tokens
  metadata    humming_version, layer_config (LayerConfig.to_str()), meta (JSON)

sm100 / sm120 on an sm90 GPU: prepare_layer_config reads the GPU's sm_version from
humming.transform.DeviceInfo; the generator gives it the target's instead. Everything
else of the transform is torch code or Humming's repack / MXFP4 preprocessing kernels,
which do not depend on the GPU they run on (process.cuh, process_mxfp4.cuh): the bytes
are those the target GPU's load would give. They cannot be run (no forward).

  gen_vectors0119.py OUT_DIR [NAME ...]

HC_GEN_FORWARD_BUDGET_S (default 100): no forward (x, y.humming) after that many seconds.
"""
import json
import os
import sys
import time
import zlib

import torch
from safetensors.torch import save_file

import humming
import humming.transform as ht
from humming.config.config import _cuda_compiler_version
from humming.forward import humming_forward
from humming.jit.runtime import KernelRuntime
from humming.schema import HummingInputSchema, HummingWeightSchema
from humming.utils.cubin import is_cubin_patch_enabled

BF16, F16 = torch.bfloat16, torch.float16
MXFP4 = {"b_dtype": "float4e2m1", "bs_dtype": "float8e8m0", "weight_scale_group_size": 32}
U4G128 = {"b_dtype": "uint4", "weight_scale_group_size": 128}
U4CH = {"b_dtype": "uint4"}
FP8CH = {"b_dtype": "float8e4m3"}
U8CH = {"b_dtype": "uint8"}
NVFP4 = {"b_dtype": "float4e2m1", "bs_dtype": "float8e4m3", "weight_scale_group_size": 16,
         "weight_scale_2_type": "tensor"}


def V(name, sm, dtype, wcfg, a=None, n=256, k=512, experts=0, bias=False, spread=0, fwd=True):
    return dict(name=name, sm=sm, dtype=dtype, wcfg=wcfg, a=a, n=n, k=k, experts=experts,
                bias=bias, spread=spread, fwd=fwd and sm == 90 and not experts)


VECTORS = [
    # the fused-e8m0 path (MXFP4 x fp8 / int8), sm90; spread: per-32 group exponent
    # offsets of up to +-spread, so the exponent folding shifts codes
    V("w4a8_mxfp4_fp8_bf16", 90, BF16, MXFP4, "float8e4m3", spread=6),
    V("w4a8_mxfp4_int8_f16", 90, F16, MXFP4, "int8", spread=6),
    V("w4a8_mxfp4_fp8_f16_pad", 90, F16, MXFP4, "float8e4m3", n=160, k=320, bias=True, spread=8),
    V("w4a8_mxfp4_int8_bf16_pad", 90, BF16, MXFP4, "int8", n=160, k=320, bias=True, spread=8),
    V("w4a8_mxfp4_fp8_bf16_plain", 90, BF16, MXFP4, "float8e4m3", n=128, k=256),
    V("w4a8_mxfp4s2_fp8_bf16", 90, BF16, dict(MXFP4, weight_scale_2_type="tensor"),
      "float8e4m3", n=128, k=256, spread=4),
    V("w4a8_mxfp4_fp8_bf16_wide", 90, BF16, MXFP4, "float8e4m3", n=128, k=256, spread=40),
    V("w4a8_mxfp4_int8_bf16_wide", 90, BF16, MXFP4, "int8", n=128, k=256, spread=40),
    V("moe2_w4a8_mxfp4_fp8_bf16", 90, BF16, MXFP4, "float8e4m3", n=128, k=256, experts=2,
      spread=6),
    V("moe2_w4a8_mxfp4_int8_f16", 90, F16, MXFP4, "int8", n=128, k=256, experts=2, spread=6),
]
for _sm in (100, 120):
    _s = dict(n=64, k=256)
    VECTORS += [
        V(f"sm{_sm}_w4a16_u4_g128_bf16", _sm, BF16, U4G128, **_s),
        V(f"sm{_sm}_w4a16_u4_g128_zp_f16", _sm, F16, dict(U4G128, has_zero_point=True), **_s),
        V(f"sm{_sm}_w8a16_u8_ch_bf16", _sm, BF16, U8CH, **_s),
        V(f"sm{_sm}_w8a16_fp8e4m3_ch_f16", _sm, F16, FP8CH, **_s),
        V(f"sm{_sm}_w8a16_fp8e4m3_ch_bf16", _sm, BF16, FP8CH, **_s),
        V(f"sm{_sm}_w4a16_mxfp4_bf16", _sm, BF16, MXFP4, **_s),
        V(f"sm{_sm}_w4a16_mxfp4_f16", _sm, F16, MXFP4, **_s),
        V(f"sm{_sm}_w4a16_nvfp4_bf16", _sm, BF16, NVFP4, **_s),
        V(f"sm{_sm}_w8a8_fp8e4m3_ch_bf16", _sm, BF16, FP8CH, "float8e4m3", **_s),
        V(f"sm{_sm}_w8a8_int8_ch_f16", _sm, F16, U8CH, "int8", **_s),
        V(f"sm{_sm}_w4a8_fp8_u4_ch_bf16", _sm, BF16, U4CH, "float8e4m3", **_s),
        V(f"sm{_sm}_w4a8_fp8_u4_g128_bf16", _sm, BF16, U4G128, "float8e4m3", **_s),
        V(f"sm{_sm}_w4a8_int8_u4_ch_f16", _sm, F16, U4CH, "int8", **_s),
        V(f"sm{_sm}_w4a8_mxfp4_fp8_bf16", _sm, BF16, MXFP4, "float8e4m3", spread=6, **_s),
        V(f"sm{_sm}_w4a8_mxfp4_int8_f16", _sm, F16, MXFP4, "int8", spread=6, **_s),
        V(f"sm{_sm}_w4a8_mxfp4_fp8_f16_pad", _sm, F16, MXFP4, "float8e4m3", n=160, k=320,
          bias=True, spread=6),
        V(f"moe2_sm{_sm}_w4a8_mxfp4_fp8_bf16", _sm, BF16, MXFP4, "float8e4m3", n=64, k=256,
          experts=2, spread=6),
    ]


class FakeInfo:
    """What prepare_layer_config reads of the device: the target's SM."""

    def __init__(self, sm):
        self.sm_version, self.sm_major = sm, sm // 10


FLAGS = ["use_packed_k_layout", "use_flat_weight", "use_raw_weight", "use_ldmatrix_dequant",
         "use_native_dequant", "use_fused_e8m0_scale", "use_int_weight_scale",
         "should_apply_bs_on_c", "use_block_scaled_mma", "is_umma_supported", "mxmma_supported"]


def weight_of(v, gen):
    shape = (v["experts"],) if v["experts"] else ()
    w = torch.randn(*shape, v["n"], v["k"], generator=gen, device="cuda")
    if v["spread"]:
        s = v["spread"]
        e = torch.randint(-s, s + 1, (*shape, v["n"], v["k"] // 32), generator=gen, device="cuda")
        w = w * torch.exp2(e.float()).repeat_interleave(32, dim=-1)
    return w.to(v["dtype"])


FORWARD_BUDGET_S = float(os.environ.get("HC_GEN_FORWARD_BUDGET_S", "100"))
T0 = time.time()


def make(v, out):
    gen = torch.Generator(device="cuda").manual_seed(zlib.crc32(v["name"].encode()))
    torch.manual_seed(1234)
    qc = {"quant_method": "humming", **v["wcfg"]}
    if v["a"]:
        qc.update(a_dtype=v["a"], input_quant_mode="dynamic_token", allow_fallback=False)
    wcfg = {k: x for k, x in qc.items() if k not in ("a_dtype", "input_quant_mode",
                                                    "allow_fallback")}
    schema = HummingWeightSchema.from_config(wcfg)
    ischema = HummingInputSchema.from_config(
        {k: x for k, x in qc.items() if k in ("quant_method", "a_dtype", "input_quant_mode")})
    W = weight_of(v, gen)
    pre = HummingWeightSchema.quant_tensor(W, schema, v["dtype"])
    if v["bias"]:
        pre["bias"] = torch.randn(v["n"], generator=gen, device="cuda").to(v["dtype"])
    keep = {n: t.detach().clone() for n, t in pre.items()}
    saved = ht.DeviceInfo
    ht.DeviceInfo = lambda device=None: FakeInfo(v["sm"])
    try:
        cfg, post = ht.prepare_and_transform_humming_tensors(
            tensors={n: t.clone() for n, t in pre.items()}, shape_n=v["n"], shape_k=v["k"],
            weight_schema=schema, input_schema=ischema, num_experts=v["experts"] or None,
            pad_n_to_multiple=256, pad_k_to_multiple=128, has_bias=v["bias"],
            torch_dtype=v["dtype"], device=torch.device("cuda"))
    finally:
        ht.DeviceInfo = saved
    for n in keep:  # the transform must not have written into its inputs
        assert torch.equal(keep[n].view(torch.uint8), pre[n].view(torch.uint8)), n
    tensors = {f"pre.{n}": t for n, t in keep.items()}
    tensors.update({f"post.{n}": t for n, t in post.items()})
    flags = {}
    for f in FLAGS:
        try:
            flags[f] = getattr(cfg, f)
        except Exception as e:  # noqa: BLE001 - recorded, not fatal
            flags[f] = f"error: {e}"
    meta = {
        "name": v["name"], "path": "vllm_moe" if v["experts"] else "vllm_dense",
        "arch": f"sm{v['sm']}", "sm_version": v["sm"], "quantization_config": qc,
        "torch_dtype": str(v["dtype"]).replace("torch.", ""),
        "a_dtype": v["a"], "layer_a_dtype": repr(cfg.a_dtype), "layer_b_dtype": repr(cfg.b_dtype),
        "n": v["n"], "k": v["k"], "n_padded": cfg.shape_n, "k_padded": cfg.shape_k,
        "pad_n_to_multiple": 256, "pad_k_to_multiple": 128, "bias": v["bias"],
        "num_experts": v["experts"], "layer_flags": flags, "exponent_spread": v["spread"],
        "quantizer": "HummingWeightSchema.quant_tensor", "generator": "tests/gpu/gen_vectors0119.py",
        "sm_version_from": "the GPU" if v["sm"] == 90 else "given to prepare_layer_config",
    }
    if v["fwd"] and time.time() - T0 > FORWARD_BUDGET_S:
        meta["forward_skipped"] = f"HC_GEN_FORWARD_BUDGET_S={FORWARD_BUDGET_S:g} s spent"
    elif v["fwd"]:
        x = torch.randn(16, v["k"], generator=gen, device="cuda").to(v["dtype"])
        y = humming_forward(cfg, inputs=x, weight=post["weight"],
                            weight_scale=post.get("weight_scale"),
                            zero_point=post.get("zero_point"), bias=post.get("bias"),
                            weight_scale_2=post.get("weight_scale_2"))
        torch.cuda.synchronize()
        tensors["x"], tensors["y.humming"] = x, y
    md = {"humming_version": "0.1.19", "layer_config": cfg.to_str(), "meta": json.dumps(meta)}
    save_file({n: t.detach().contiguous().cpu() for n, t in tensors.items()},
              os.path.join(out, v["name"] + ".safetensors"), metadata=md)
    return cfg


def main():
    out = sys.argv[1]
    want = set(sys.argv[2:])
    os.makedirs(out, exist_ok=True)
    env = {"humming": getattr(humming, "__version__", "?"), "torch": torch.__version__,
           "gpu": torch.cuda.get_device_name(),
           "compiler": KernelRuntime._get_compiler().__name__,
           "compiler_version": list(_cuda_compiler_version(KernelRuntime._get_compiler())),
           "cubin_patch": is_cubin_patch_enabled()}
    print("env", json.dumps(env), flush=True)
    with open(os.path.join(out, "env.json"), "w") as f:
        json.dump(env, f)
    t0, bad = time.time(), 0
    for v in VECTORS:
        if want and v["name"] not in want:
            continue
        try:
            cfg = make(v, out)
            print(f"{v['name']}: {cfg.to_str()} ({time.time() - t0:.0f} s)", flush=True)
        except Exception as e:  # noqa: BLE001 - reported, the others still run
            bad += 1
            print(f"{v['name']}: FAILED {type(e).__name__}: {e}", flush=True)
    print(f"gen_vectors0119: {bad} failed; {time.time() - t0:.0f} s", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
