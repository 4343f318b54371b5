#!/usr/bin/env python3
"""make bench inputs: a float16 checkpoint of L tensors of N x K
(model.layers.<i>.mlp.down_proj.weight, normal(0, 0.02) values); the same
shapes as a 4-bit group-128 symmetric GPTQ checkpoint (random codes, fp16
scales, trivial g_idx), of 4-bit g128 AWQ GEMM (random codes and zero points,
fp16 scales), or of compressed-tensors pack-quantized int4 g128 symmetric (random
codes, fp16 scales); or (llama7b) L layers of Llama-2-7B's real shapes
(N and K ignored: q/k/v/o 4096 x 4096, gate/up 11008 x 4096, down 4096 x
11008, norms, and the 32000 x 4096 embedding and lm_head). Written with the
safetensors byte layout directly, one tensor at a time, so memory stays at
one tensor.

usage: gen_bench_ckpt.py OUT_DIR float16|gptq|awq|ct|llama7b LAYERS N K [SEED]
"""
import json
import os
import struct
import sys

import numpy as np


def write_safetensors(path, specs, make):
    """specs: [(name, dtype, shape)]; make(i) returns tensor i's bytes."""
    header, off = {}, 0
    for name, dt, shape in specs:
        n = int(np.prod(shape)) * {"F16": 2, "I32": 4, "I64": 8}[dt]
        header[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + n]}
        off += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h)
        for i in range(len(specs)):
            f.write(make(i))


def main():
    out, kind, layers, n, k = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
    seed = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    rng = np.random.default_rng(seed)
    os.makedirs(out, exist_ok=True)
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
           "torch_dtype": "float16", "hidden_size": n, "intermediate_size": k,
           "num_hidden_layers": layers}
    pre = "model.layers.%d.mlp.down_proj."
    if kind == "llama7b":
        h, inter, vocab = 4096, 11008, 32000
        cfg.update(hidden_size=h, intermediate_size=inter, vocab_size=vocab,
                   num_attention_heads=32, num_key_value_heads=32, rms_norm_eps=1e-5)
        specs = [("model.embed_tokens.weight", "F16", (vocab, h))]
        for i in range(layers):
            p = "model.layers.%d." % i
            specs += [(p + "self_attn.%s_proj.weight" % x, "F16", (h, h)) for x in "qkvo"]
            specs += [(p + "mlp.gate_proj.weight", "F16", (inter, h)),
                      (p + "mlp.up_proj.weight", "F16", (inter, h)),
                      (p + "mlp.down_proj.weight", "F16", (h, inter)),
                      (p + "input_layernorm.weight", "F16", (h,)),
                      (p + "post_attention_layernorm.weight", "F16", (h,))]
        specs += [("model.norm.weight", "F16", (h,)), ("lm_head.weight", "F16", (vocab, h))]

        def make(i):
            shape = specs[i][2]
            if len(shape) == 1:
                return np.ones(shape, np.float16).tobytes()
            w = rng.standard_normal(shape, dtype=np.float32) * np.float32(0.02)
            return w.astype(np.float16).tobytes()
    elif kind == "float16":
        specs = [(pre % i + "weight", "F16", (n, k)) for i in range(layers)]

        def make(i):
            w = rng.standard_normal((n, k), dtype=np.float32) * np.float32(0.02)
            return w.astype(np.float16).tobytes()
    elif kind in ("awq", "ct"):
        g = k // 128
        roles = ([("qweight", (k, n // 8)), ("qzeros", (g, n // 8)), ("scales", (g, n))]
                 if kind == "awq" else
                 [("weight_packed", (n, k // 8)), ("weight_scale", (n, g)), ("weight_shape", (2,))])
        specs = [(pre % i + r, "F16" if "scale" in r and r != "weight_shape" else
                  "I64" if r == "weight_shape" else "I32", s)
                 for i in range(layers) for r, s in roles]

        def make(i):
            role, shape = roles[i % 3][0], specs[i][2]
            if role == "weight_shape":
                return np.array([n, k], np.int64).tobytes()
            if "scale" in role:
                return (rng.random(shape, dtype=np.float32) * 0.01 + 0.001).astype(np.float16).tobytes()
            return rng.integers(0, 2**32, shape, dtype=np.uint32).tobytes()
        if kind == "awq":
            cfg["quantization_config"] = {"quant_method": "awq", "bits": 4, "group_size": 128,
                                          "zero_point": True, "version": "gemm"}
        else:
            w = {"num_bits": 4, "type": "int", "symmetric": True, "strategy": "group",
                 "group_size": 128, "dynamic": False}
            cfg["quantization_config"] = {
                "quant_method": "compressed-tensors", "format": "pack-quantized",
                "quantization_status": "compressed", "version": "0.20.1",
                "config_groups": {"group_0": {"targets": ["Linear"], "weights": w,
                                              "format": "pack-quantized"}}}
    else:
        g = k // 128
        roles = [("qweight", (k // 8, n)), ("qzeros", (g, n // 8)), ("scales", (g, n)),
                 ("g_idx", (k,))]
        specs = [(pre % i + r, "F16" if r == "scales" else "I32", s)
                 for i in range(layers) for r, s in roles]

        def make(i):
            role, shape = roles[i % 4][0], specs[i][2]
            if role == "qweight":
                return rng.integers(0, 2**32, shape, dtype=np.uint32).tobytes()
            if role == "qzeros":  # v1 stores zero - 1: 7 is the symmetric zero 8
                return np.full(shape, 0x77777777, np.uint32).tobytes()
            if role == "scales":
                return (rng.random(shape, dtype=np.float32) * 0.01 + 0.001).astype(np.float16).tobytes()
            return (np.arange(k, dtype=np.int32) // 128).tobytes()
        cfg["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 128,
                                      "sym": True, "desc_act": False,
                                      "checkpoint_format": "gptq"}
    write_safetensors(os.path.join(out, "model.safetensors"), specs, make)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


if __name__ == "__main__":
    main()
