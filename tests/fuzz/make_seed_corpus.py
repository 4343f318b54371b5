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


if __name__ == "__main__":
    for t in ["safetensors", "index", "config", "recipe", "format_field"]:
        os.makedirs(os.path.join(ROOT, t), exist_ok=True)
    seeds_safetensors()
    seeds_index()
    seeds_config()
    seeds_recipe()
    seeds_format_field()
