#!/usr/bin/env python3
"""compressed-tensors pack-quantized checkpoints packed by numpy ports of the
library's own pack_to_int32 (not from our C code): the dense one of 0.18+
(compressed_tensors/compressors/pack_quantized/helpers.py in 0.20.1: 32
values -> b words by scatter-add, overflow bits into the next word, output
cut to ceil(cols*b/32) words) and the padded one of 0.12.2
(quantized_compressors/pack_quantized.py: 32//b values per word). Weights
and asymmetric zero points (packed_dim=0) of 3/4/5/6/7 bits, with the
config's "version" as the library writes it. Each checkpoint goes through
the CLI into the default canonical layout; the output is decoded by
test_canonical_vllm's independent Humming reader and must equal (q - zp) *
scale element for element. Exits 77 (skipped) without numpy / ml_dtypes."""
import json
import os
import subprocess
import sys
import tempfile

try:
    import ml_dtypes
    import numpy as np
    from safetensors.numpy import save_file
except ImportError as e:
    print(f"SKIP[oracle]: {e}; compressed-tensors packing oracle skipped")
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_canonical_vllm as canon  # noqa: E402

CLI = canon.CLI
P = "model.layers.0.mlp.down_proj"


def pack_dense(value, num_bits, packed_dim=1):
    """compressed-tensors 0.20.1 pack_to_int32, step for step in numpy."""
    value = value.astype(np.int64) + (1 << (num_bits - 1))
    if packed_dim == 0:
        value = value.T
    rows, cols = value.shape
    packed_cols = -(-cols * num_bits // 32)
    padded = -(-cols // 32) * 32
    value = np.pad(value, ((0, 0), (0, padded - cols)))
    groups = padded // 32
    value_g = value.reshape(rows * groups, 32)
    out = np.zeros((rows * groups, num_bits), dtype=np.int64)
    elem = np.arange(32)
    starts = elem * num_bits
    word, off = starts // 32, starts % 32
    for i in range(32):  # scatter_add_ of value << bit_offset into word_idx
        out[:, word[i]] += value_g[:, i] << off[i]
    ov = off + num_bits - 32
    for i in np.nonzero(ov > 0)[0]:  # the overflow bits into the next word
        out[:, word[i] + 1] += value_g[:, i] >> (num_bits - ov[i])
    out = (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    out = out.reshape(rows, groups * num_bits)[:, :packed_cols]
    return np.ascontiguousarray(out.T if packed_dim == 0 else out)


def pack_padded(value, num_bits, packed_dim=1):
    """compressed-tensors 0.12.2 pack_to_int32 (no value straddles a word)."""
    value = (value.astype(np.int64) + (1 << (num_bits - 1))) & 0xFF
    pf = 32 // num_bits
    if packed_dim == 0:
        value = value.T
    rows, cols = value.shape
    padded = -(-cols // pf) * pf
    value = np.pad(value, ((0, 0), (0, padded - cols))).reshape(rows, padded // pf, pf)
    out = (value << (np.arange(pf) * num_bits)).sum(axis=2)
    out = (out & 0xFFFFFFFF).astype(np.uint32).view(np.int32)
    return np.ascontiguousarray(out.T if packed_dim == 0 else out)


def build(d, b, dense, version, rng, N=64, K=256, gs=64):
    G = K // gs
    lo, hi = -(1 << (b - 1)), (1 << (b - 1)) - 1
    q = rng.integers(lo, hi + 1, size=(N, K)).astype(np.int8)
    zp = rng.integers(lo, hi + 1, size=(N, G)).astype(np.int8)
    scale = (rng.integers(1, 64, size=(N, G)) / 1024.0).astype(ml_dtypes.bfloat16)
    pack = pack_dense if dense else pack_padded
    tensors = {P + ".weight_packed": pack(q, b), P + ".weight_scale": scale,
               P + ".weight_shape": np.array([N, K], dtype=np.int64),
               P + ".weight_zero_point": pack(zp, b, packed_dim=0)}
    os.makedirs(d)
    save_file(tensors, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "bfloat16",
           "quantization_config": {
               "quant_method": "compressed-tensors", "format": "pack-quantized",
               "quantization_status": "compressed", "version": version, "transform_config": {},
               "ignore": ["lm_head"], "config_groups": {"group_0": {
                   "targets": ["Linear"], "weights": {
                       "num_bits": b, "type": "int", "strategy": "group", "group_size": gs,
                       "symmetric": False, "actorder": None}}}}}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    want = (q.astype(np.float64) - np.repeat(zp.astype(np.float64), gs, axis=1)) * \
        np.repeat(scale.astype(np.float64), gs, axis=1)
    return want, tensors[P + ".weight_packed"].shape


def check(d, b, dense, version, rng):
    src, out = os.path.join(d, f"in{b}{dense}"), os.path.join(d, f"out{b}{dense}")
    want, packed_shape = build(src, b, dense, version, rng)
    r = subprocess.run([CLI, src, out, "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        raise AssertionError(f"b={b} dense={dense}: conversion failed: {r.stderr}")
    cfg = json.load(open(os.path.join(out, "config.json")))
    qc = cfg["quantization_config"]
    o = canon.load_dir(out)
    s = canon.resolve(qc, P)
    N = o[P + ".weight"][1][0]
    K = o[P + ".weight"][1][1] * 32 // canon.bits_of(s["b_dtype"])
    names, _, _, _ = canon.expected_tensors(s, N, K, "bfloat16")
    got = canon.dequant(s, {k: o[P + "." + k] for k in names}, N, K, "bfloat16")
    bad = int((got != want).sum())
    assert bad == 0, f"b={b} dense={dense}: {bad} elements differ from (q - zp) * scale"
    print(f"int{b} {'dense ' if dense else 'padded'} (version {version}, weight_packed "
          f"{list(packed_shape)}): 0 of {want.size} elements differ")


def main():
    rng = np.random.default_rng(35)
    with tempfile.TemporaryDirectory() as d:
        for b in (3, 4, 5, 6, 7):
            check(d, b, True, "0.20.1", rng)
            check(d, b, False, "0.12.2", rng)
    print("test_ct_pack_oracle: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
