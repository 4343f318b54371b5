#!/usr/bin/env python3
"""Writes the hand-made part of the seed corpus under tests/corpus/ (valid
inputs of every target plus a few known-malformed ones). Deterministic; run
from the repository root. Inputs found by fuzzing are added next to these by
hand (see tests/fuzz/README.md)."""
import json
import os
import shutil
import struct

ROOT = "tests/corpus"


def put(target, name, data):
    d = os.path.join(ROOT, target)
    os.makedirs(d, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def st(tensors, meta=None, pad=True):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, off, blob = {}, 0, b""
    if meta is not None:
        header["__metadata__"] = meta
    for name, dt, shape, data in tensors:
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(data)]}
        off += len(data)
        blob += data
    h = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        h += b" " * (-(len(h) + 8) % 8)
    return struct.pack("<Q", len(h)) + h + blob


def seeds_safetensors():
    put("safetensors", "seed-empty", st([]))
    put("safetensors", "seed-f32", st([("w", "F32", [2, 2], struct.pack("<4f", 1, -2, 3.5, 0))]))
    put("safetensors", "seed-mixed", st([
        ("model.layers.0.mlp.down_proj.weight", "I32", [2, 1], b"\x01\x00\x00\x00" * 2),
        ("model.layers.0.mlp.down_proj.weight_scale", "BF16", [2, 1], b"\x80\x3f\x00\x40"),
        ("model.norm.weight", "F16", [2], b"\x00\x3c\x00\x3c"),
        ("zero", "U8", [0, 4], b""),
        ("scalar", "F64", [], struct.pack("<d", 2.0)),
        ("e8m0", "F8_E8M0", [3], b"\x7f\x80\x81"),
        ("fp4", "F4", [4], b"\x12\x34"),
        ("big", "I64", [1], struct.pack("<q", -1)),
    ], meta={"format": "pt", "humming_layout": "1"}))
    put("safetensors", "seed-unpadded", st([("b", "BOOL", [3], b"\x00\x01\x00")], pad=False))
    # known-malformed: absurd header length, shape whose byte size overflows 64 bits,
    # offsets past the end, overlapping tensors
    put("safetensors", "bad-header-size", struct.pack("<Q", 2**63 + 5) + b"{}")
    put("safetensors", "bad-shape-overflow",
        st([("w", "F32", [2**40, 2**40], b"")]))
    put("safetensors", "bad-offsets",
        struct.pack("<Q", 56) + b'{"w":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}   ' + b"\x00")


def seeds_index():
    idx = {"metadata": {"total_size": 17},
           "weight_map": {"x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors"}}
    put("index", "seed-full", json.dumps(idx, indent=2))
    put("index", "seed-one-shard", json.dumps({"weight_map": {"z": "b.safetensors"}}))
    put("index", "bad-missing-tensor", json.dumps({"weight_map": {"q": "a.safetensors"}}))
    put("index", "bad-traversal", json.dumps({"weight_map": {"x": "../a.safetensors"}}))
    put("index", "bad-no-shard", json.dumps({"weight_map": {"x": "c.safetensors"}}))
    put("index", "bad-not-string", json.dumps({"weight_map": {"x": 7}}))


def cfg(arch, model_type, dtype, q=None, **extra):
    c = {"architectures": [arch], "model_type": model_type, "torch_dtype": dtype,
         "hidden_size": 64, "num_hidden_layers": 2, "vocab_size": 128}
    c.update(extra)
    if q is not None:
        c["quantization_config"] = q
    return json.dumps(c, indent=2)


def seeds_config():
    put("config", "seed-llama", cfg("LlamaForCausalLM", "llama", "bfloat16", rope_theta=500000.0))
    put("config", "seed-qwen3-moe", cfg("Qwen3MoeForCausalLM", "qwen3_moe", "bfloat16",
                                        num_experts=8, num_experts_per_tok=2))
    put("config", "seed-deepseek-v3", cfg("DeepseekV3ForCausalLM", "deepseek_v3", "bfloat16", {
        "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
        "weight_block_size": [128, 128]}))
    put("config", "seed-gpt-oss", cfg("GptOssForCausalLM", "gpt_oss", "bfloat16", {
        "quant_method": "mxfp4", "modules_to_not_convert": ["model.layers.*.self_attn", "lm_head"]}))
    put("config", "seed-gptq", cfg("LlamaForCausalLM", "llama", "float16", {
        "quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True}))
    put("config", "seed-awq", cfg("Qwen2ForCausalLM", "qwen2", "float16", {
        "quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"}))
    put("config", "seed-compressed-tensors", cfg("LlamaForCausalLM", "llama", "bfloat16", {
        "quant_method": "compressed-tensors", "format": "pack-quantized",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
            "group_size": 128}}}, "ignore": ["lm_head"]}))
    put("config", "seed-humming-w4", cfg("LlamaForCausalLM", "llama", "float16", {
        "quant_method": "humming", "b_dtype": "uint4", "bs_dtype": "float16",
        "weight_scale_group_size": 128, "has_zero_point": True, "is_fp_zero_point": False}))
    put("config", "seed-humming-fp8-block", cfg("DeepseekV3ForCausalLM", "deepseek_v3", "bfloat16", {
        "quant_method": "humming", "dtype": "float8e4m3", "weight_scale_group_size": "128",
        "weight_scale_group_size_n": 128, "weight_scale_type": "block"}))
    put("config", "seed-humming-nvfp4", cfg("Qwen3MoeForCausalLM", "qwen3_moe", "torch.bfloat16", {
        "quant_method": "humming", "weight_dtype": "float4_e2m1", "scale_dtype": "float8_e4m3fn",
        "group_size": 16, "weight_scale_type": "group_tensor"}))
    put("config", "bad-group-size-huge", cfg("LlamaForCausalLM", "llama", "float16", {
        "quant_method": "humming", "b_dtype": "uint4", "group_size": 1e300}))
    put("config", "bad-group-size-n-negative", cfg("LlamaForCausalLM", "llama", "float16", {
        "quant_method": "humming", "b_dtype": "int8", "weight_scale_group_size_n": -128}))


def seeds_recipe():
    for f in sorted(os.listdir("recipes")):
        if f.endswith(".yaml"):
            shutil.copy(os.path.join("recipes", f), os.path.join(ROOT, "recipe", "seed-" + f[:-5]))
    put("recipe", "bad-group-size", "rules:\n  - targets: ['.*']\n    group_size: -128\n")
    put("recipe", "bad-regex", "ignore: ['(a']\n")


def seeds_format_field():
    for i, s in enumerate(["format=w4a16", "format=nvfp4", "weight_dtype=float4e2m1",
                           "group_size=128", "group_size=channel", "group_size=tensor",
                           "group_size_n=128", "scale_dtype=float8_e8m0fnu", "zero_point=int",
                           "global_scale=true", "activation=torch.float8_e4m3fn",
                           "quantizer=mse", "sm_90a=", "group-size=-1",
                           "group_size=99999999999999999999", "group_size_n=-2"]):
        put("format_field", "seed-%02d" % i, s)


def fill(n, seed, mask=0xFF):
    """n deterministic bytes (an LCG), each & mask."""
    out, x = bytearray(), seed
    for _ in range(n):
        x = (x * 1103515245 + 12345) & 0x7FFFFFFF
        out.append((x >> 16) & mask)
    return bytes(out)


def rep(value, count):
    return value * count


SIDES = {None: 0, "hf_quant_config.json": 1, "quantize_config.json": 2, "quant_config.json": 3}
L0 = "model.layers.0.mlp.up_proj"


def ckpt(config, tensors, side=None, side_text="", f16=False):
    """fuzz_ckpt input: selector byte, config.json, NUL, side file, NUL, safetensors."""
    sel = SIDES[side] | (4 if f16 else 0)
    cfg_text = config if isinstance(config, str) else json.dumps(config)
    return bytes([sel]) + cfg_text.encode() + b"\0" + side_text.encode() + b"\0" + st(tensors)


def qc(**q):
    return {"torch_dtype": "bfloat16", "quantization_config": q}


def ct_cfg(fmt, weights):
    return qc(quant_method="compressed-tensors", format=fmt, quantization_status="compressed",
              config_groups={"group_0": {"targets": ["Linear"], "weights": weights}},
              ignore=["lm_head", "re:.*gate$"])


F16_SMALL = struct.pack("<e", 0.0078125)
BF16_SMALL = b"\x00\x3c"  # 0.0078125
F32 = lambda v: struct.pack("<f", v)


def seeds_ckpt_int():
    gi = b"".join(struct.pack("<i", k // 32) for k in range(64))
    put("ckpt", "seed-gptq-4bit-g32", ckpt(qc(quant_method="gptq", bits=4, group_size=32, sym=True,
        desc_act=False, checkpoint_format="gptq"), [
        (L0 + ".qweight", "I32", [8, 32], fill(8 * 32 * 4, 1)),
        (L0 + ".qzeros", "I32", [2, 4], rep(b"\x77\x77\x77\x77", 8)),
        (L0 + ".scales", "F16", [2, 32], rep(F16_SMALL, 64)),
        (L0 + ".g_idx", "I32", [64], gi)]))
    perm = [(k * 37) % 64 for k in range(64)]  # each group keeps 32 members
    put("ckpt", "seed-gptq-3bit-act-order", ckpt(qc(quant_method="gptq", bits=3, group_size=32,
        sym=False, desc_act=True, checkpoint_format="gptq_v2"), [
        (L0 + ".qweight", "I32", [6, 32], fill(6 * 32 * 4, 2)),
        (L0 + ".qzeros", "I32", [2, 3], fill(24, 3)),
        (L0 + ".scales", "F16", [2, 32], rep(F16_SMALL, 64)),
        (L0 + ".g_idx", "I32", [64], b"".join(struct.pack("<i", perm[k] // 32) for k in range(64)))],
        f16=True))
    put("ckpt", "seed-gptq-8bit-channel", ckpt({}, [
        (L0 + ".qweight", "I32", [8, 32], fill(8 * 32 * 4, 4)),
        (L0 + ".qzeros", "I32", [1, 8], rep(b"\x7f", 32)),
        (L0 + ".scales", "F32", [1, 32], rep(F32(0.5), 32))],
        "quantize_config.json", json.dumps({"bits": 8, "group_size": -1, "desc_act": False,
                                            "sym": True})))
    put("ckpt", "seed-awq-gemm", ckpt(qc(quant_method="awq", bits=4, group_size=32, zero_point=True,
        version="gemm", modules_to_not_convert=["gate"]), [
        (L0 + ".qweight", "I32", [64, 4], fill(64 * 16, 5)),
        (L0 + ".qzeros", "I32", [2, 4], fill(32, 6)),
        (L0 + ".scales", "F16", [2, 32], rep(F16_SMALL, 64))]))
    put("ckpt", "seed-awq-gemv-side", ckpt({}, [
        (L0 + ".qweight", "I32", [32, 8], fill(32 * 32, 7)),
        (L0 + ".qzeros", "I32", [32, 4], fill(32 * 16, 8)),
        (L0 + ".scales", "F16", [32, 32], rep(F16_SMALL, 32 * 32))],
        "quant_config.json", json.dumps({"w_bit": 4, "q_group_size": 32, "zero_point": True,
                                         "version": "GEMV"})))
    put("ckpt", "seed-ct-pack-int4-asym-gidx", ckpt(ct_cfg("pack-quantized", {
        "num_bits": 4, "type": "int", "symmetric": False, "strategy": "group", "group_size": 32,
        "actorder": "group"}), [
        (L0 + ".weight_packed", "I32", [32, 8], fill(32 * 32, 9)),
        (L0 + ".weight_scale", "BF16", [32, 2], rep(BF16_SMALL, 64)),
        (L0 + ".weight_zero_point", "I32", [4, 2], fill(32, 10)),
        (L0 + ".weight_shape", "I64", [2], struct.pack("<qq", 32, 64)),
        (L0 + ".weight_g_idx", "I32", [64], gi)]))
    put("ckpt", "seed-ct-int8-channel", ckpt(ct_cfg("int-quantized", {
        "num_bits": 8, "type": "int", "symmetric": True, "strategy": "channel"}), [
        (L0 + ".weight", "I8", [32, 64], fill(32 * 64, 11)),
        (L0 + ".weight_scale", "BF16", [32, 1], rep(BF16_SMALL, 32))]))


def seeds_ckpt_float():
    e4m3 = fill(64 * 64, 12, 0x77)  # no NaN codes
    put("ckpt", "seed-ct-fp8-block", ckpt(ct_cfg("float-quantized", {
        "num_bits": 8, "type": "float", "strategy": "block", "block_structure": [32, 32]}), [
        (L0 + ".weight", "F8_E4M3", [64, 64], e4m3),
        (L0 + ".weight_scale", "F32", [2, 2], rep(F32(0.25), 4))]))
    nv = {"num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}
    put("ckpt", "seed-ct-nvfp4", ckpt(ct_cfg("nvfp4-pack-quantized", nv), [
        (L0 + ".weight_packed", "U8", [32, 32], fill(32 * 32, 13)),
        (L0 + ".weight_scale", "F8_E4M3", [32, 4], rep(b"\x38", 128)),
        (L0 + ".weight_global_scale", "F32", [1], F32(3.0))]))
    put("ckpt", "seed-ct-mxfp4", ckpt(ct_cfg("mxfp4-pack-quantized", {
        "num_bits": 4, "type": "float", "strategy": "group", "group_size": 32}), [
        (L0 + ".weight_packed", "U8", [32, 32], fill(32 * 32, 14)),
        (L0 + ".weight_scale", "U8", [32, 2], rep(b"\x7e", 64))]))
    mo = {"producer": {"name": "modelopt", "version": "0.2"},
          "quantization": {"quant_algo": "NVFP4", "group_size": 16, "exclude_modules": ["lm_head"]}}
    put("ckpt", "seed-modelopt-nvfp4-side", ckpt({"torch_dtype": "bfloat16"}, [
        (L0 + ".weight", "U8", [32, 32], fill(32 * 32, 15)),
        (L0 + ".weight_scale", "F8_E4M3", [32, 4], rep(b"\x38", 128)),
        (L0 + ".weight_scale_2", "F32", [], F32(0.5))], "hf_quant_config.json", json.dumps(mo)))
    put("ckpt", "seed-modelopt-fp8-tensor", ckpt(qc(quant_method="modelopt", quant_algo="FP8"), [
        (L0 + ".weight", "F8_E4M3", [32, 64], e4m3[:2048]),
        (L0 + ".weight_scale", "F32", [], F32(0.125))]))
    put("ckpt", "seed-modelopt-mxfp8", ckpt(qc(quant_method="modelopt", quant_algo="MXFP8"), [
        (L0 + ".weight", "F8_E4M3", [32, 64], e4m3[:2048]),
        (L0 + ".weight_scale", "U8", [32, 2], rep(b"\x7f", 64))]))
    put("ckpt", "seed-modelopt-fp8-pb-wo", ckpt(qc(quant_method="modelopt", quant_algo="FP8_PB_WO"), [
        (L0 + ".weight", "F8_E4M3", [128, 128], fill(128 * 128, 16, 0x77)),
        (L0 + ".weight_scale", "F32", [1, 1, 1, 1], F32(0.5))]))
    ex = "model.layers.0.mlp.experts.gate_up_proj"
    put("ckpt", "seed-gpt-oss-mxfp4", ckpt(qc(quant_method="mxfp4",
        modules_to_not_convert=["model.layers.*.self_attn"]), [
        (ex + "_blocks", "U8", [2, 8, 2, 16], fill(512, 17)),
        (ex + "_scales", "U8", [2, 8, 2], rep(b"\x7f", 32)),
        (ex + "_bias", "BF16", [2, 8], rep(BF16_SMALL, 16))]))
    put("ckpt", "seed-fp8-deepseek-blocks", ckpt(qc(quant_method="fp8", fmt="e4m3",
        activation_scheme="dynamic", weight_block_size=[128, 128]), [
        (L0 + ".weight", "F8_E4M3", [192, 64], fill(192 * 64, 18, 0x77)),
        (L0 + ".weight_scale_inv", "F32", [2, 1], F32(0.5) + F32(0.75))]))
    put("ckpt", "seed-fp8-tensor", ckpt(qc(quant_method="fp8"), [
        (L0 + ".weight", "F8_E5M2", [32, 64], fill(2048, 19, 0x7B)),
        (L0 + ".weight_scale", "F32", [1], F32(2.0))]))


def seeds_ckpt_bad():
    put("ckpt", "bad-gptq-k0", ckpt(qc(quant_method="gptq", bits=4, group_size=-1, sym=True), [
        (L0 + ".qweight", "I32", [0, 32], b""), (L0 + ".qzeros", "I32", [1, 4], rep(b"\x88", 16)),
        (L0 + ".scales", "F16", [1, 32], rep(F16_SMALL, 32))]))
    put("ckpt", "bad-gptq-nan-scale", ckpt(qc(quant_method="gptq", bits=4, group_size=32, sym=True), [
        (L0 + ".qweight", "I32", [8, 32], fill(1024, 20)),
        (L0 + ".qzeros", "I32", [2, 4], rep(b"\x77", 32)),
        (L0 + ".scales", "F16", [2, 32], rep(F16_SMALL, 10) + b"\x00\x7e" + rep(F16_SMALL, 53))]))
    put("ckpt", "bad-nvfp4-empty-global-scale", ckpt(ct_cfg("nvfp4-pack-quantized", {
        "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}), [
        (L0 + ".weight_packed", "U8", [32, 32], fill(1024, 21)),
        (L0 + ".weight_scale", "F8_E4M3", [32, 4], rep(b"\x38", 128)),
        (L0 + ".weight_global_scale", "F32", [0], b""),
        ("model.norm.weight", "F32", [2], F32(1.0) * 2)]))
    put("ckpt", "bad-ct-num-bits-64", ckpt(ct_cfg("int-quantized", {
        "num_bits": 64, "type": "int", "strategy": "channel"}), [
        (L0 + ".weight", "I8", [32, 64], fill(2048, 22)),
        (L0 + ".weight_scale", "BF16", [32, 1], rep(BF16_SMALL, 32))]))
    put("ckpt", "bad-fp8-block-1e300", ckpt(
        '{"quantization_config": {"quant_method": "fp8", "weight_block_size": [1e300, 128]}}', [
        (L0 + ".weight", "F8_E4M3", [32, 64], fill(2048, 23, 0x77)),
        (L0 + ".weight_scale_inv", "F32", [1, 1], F32(1.0))]))
    put("ckpt", "bad-gpt-oss-zero-groups", ckpt(qc(quant_method="mxfp4"), [
        ("m.experts.down_proj_blocks", "U8", [2, 8, 0, 16], b""),
        ("m.experts.down_proj_scales", "U8", [2, 8, 0], b"")]))


# fuzz_ckpt's compact tensor list ("HCT1"): indices into fuzz_ckpt_entry.c's tables.
TNAMES = ["qweight", "qzeros", "scales", "g_idx", "weight", "weight_packed", "weight_scale",
          "weight_zero_point", "weight_g_idx", "weight_shape", "weight_global_scale",
          "weight_scale_2", "weight_scale_inv", "bias", "x_blocks", "x_scales", "x_bias"]
TDTYPES = ["U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F16", "BF16", "F32", "I32", "U32", "I64"]


def compact(config, tensors, data=b"", side=None, side_text=""):
    """tensors: (name, dtype, dims) with dims < 256; data: the tensors' leading bytes."""
    body = bytes([len(tensors)])
    for name, dt, dims in tensors:
        body += bytes([TNAMES.index(name), TDTYPES.index(dt), len(dims)] + list(dims))
    sel = SIDES[side]
    cfg_text = config if isinstance(config, str) else json.dumps(config)
    return (bytes([sel]) + cfg_text.encode() + b"\0" + side_text.encode() + b"\0" + b"HCT1" +
            body + data)


def seeds_ckpt_compact():
    put("ckpt", "seed-compact-gptq", compact(qc(quant_method="gptq", bits=4, group_size=32,
        sym=False), [("qweight", "I32", [8, 32]), ("qzeros", "I32", [2, 4]),
                     ("scales", "F16", [2, 32])], fill(1024, 30)))
    put("ckpt", "seed-compact-awq", compact(qc(quant_method="awq", bits=4, group_size=32), [
        ("qweight", "I32", [64, 4]), ("qzeros", "I32", [2, 4]), ("scales", "F16", [2, 32])],
        fill(1024, 31)))
    put("ckpt", "seed-compact-ct-int4", compact(ct_cfg("pack-quantized", {
        "num_bits": 4, "type": "int", "strategy": "group", "group_size": 32}), [
        ("weight_packed", "I32", [32, 8]), ("weight_scale", "BF16", [32, 2])], fill(1024, 32)))
    put("ckpt", "seed-compact-ct-nvfp4", compact(ct_cfg("nvfp4-pack-quantized", {
        "num_bits": 4, "type": "float", "strategy": "tensor_group", "group_size": 16}), [
        ("weight_packed", "U8", [32, 32]), ("weight_scale", "F8_E4M3", [32, 4]),
        ("weight_global_scale", "F32", [1])], fill(1024, 33)))
    put("ckpt", "seed-compact-modelopt-nvfp4", compact(qc(quant_method="modelopt",
        quant_algo="NVFP4", group_size=16), [("weight", "U8", [32, 32]),
        ("weight_scale", "F8_E4M3", [32, 4]), ("weight_scale_2", "F32", [])], fill(1024, 34)))
    put("ckpt", "seed-compact-gpt-oss", compact(qc(quant_method="mxfp4"), [
        ("x_blocks", "U8", [2, 8, 2, 16]), ("x_scales", "U8", [2, 8, 2])], fill(512, 35)))
    put("ckpt", "seed-compact-fp8-blocks", compact(qc(quant_method="fp8",
        weight_block_size=[128, 128]), [("weight", "F8_E4M3", [128, 64]),
        ("weight_scale_inv", "F32", [1, 1])], fill(8192, 36, 0x77)))
    put("ckpt", "seed-compact-modelopt-mxfp8", compact(qc(quant_method="modelopt",
        quant_algo="MXFP8"), [("weight", "F8_E4M3", [32, 64]), ("weight_scale", "U8", [32, 2])],
        fill(2048, 37, 0x77)))


def seeds_cli():
    for i, args in enumerate([
            ["in", "out", "--max-shard-size", "5GB", "-q"],
            ["in", "out", "--format", "w4a16", "--group-size", "64", "--arch", "sm80"],
            ["in", "out", "--weight-dtype", "uint4", "--scale-dtype", "bfloat16", "--zero-point",
             "int", "--activation", "float16", "--quantizer", "mse"],
            ["report", "out", "--verify", "cpu", "--verify-tokens", "8", "--input", "in"],
            ["check", "out"],
            ["--list-formats", "--arch", "sm120"],
            ["in", "out", "--act-order", "permute", "--resume", "--no-input-crc", "--dry-run"],
            ["in", "out", "--format", "nvfp4", "--max-shard-size", "1.5G", "--force"]]):
        put("cli", "seed-%02d" % i, "\n".join(args))
    for name, args in [("bad-shard-nan", ["in", "out", "--max-shard-size", "nan"]),
                       ("bad-shard-1e300", ["in", "out", "--max-shard-size", "1e300"]),
                       ("bad-unknown-option", ["in", "out", "--bogus"]),
                       ("bad-group-size", ["in", "out", "--group-size", "-7"]),
                       ("bad-missing-value", ["in", "out", "--arch"])]:
        put("cli", name, "\n".join(args))


if __name__ == "__main__":
    for t in ["safetensors", "index", "config", "recipe", "format_field", "ckpt", "cli"]:
        os.makedirs(os.path.join(ROOT, t), exist_ok=True)
    seeds_safetensors()
    seeds_index()
    seeds_config()
    seeds_recipe()
    seeds_format_field()
    seeds_ckpt_int()
    seeds_ckpt_float()
    seeds_ckpt_bad()
    seeds_ckpt_compact()
    seeds_cli()
