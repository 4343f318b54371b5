#!/usr/bin/env python3
"""GPU check of canonical outputs with the real humming-kernels (0.1.19, the
version vLLM 0.33.0 pins): every quantized layer of OUT_DIR is loaded with
Humming's own HummingLayer.from_safetensors(OUT_DIR, prefix), transformed with
vLLM's padding (N to 256, K to 128) and run by humming_forward on random
activations. Its output is compared with x @ dequant(W)^T in float32 (the
dequantization of tests/py/test_canonical_vllm.py, written from Humming's
dequantize_weight) and with x @ W_src^T (the float source in SRC_DIR).

  canonical_humming.py SRC_DIR OUT_DIR [OUT_DIR ...]

SRC_DIR "-" (outputs of quantized inputs, whose source is not float): only the
comparison with x @ dequant(W)^T.

Prints one line per output and exits 1 on any error over its bound."""
import json
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "py"))
import test_canonical_vllm as canon  # noqa: E402
from humming.layer import HummingLayer  # noqa: E402

# relative error of Humming's output against x @ dequant(W)^T: accumulation
# order alone for 16-bit activations; per-token activation quantization otherwise
BOUND = {None: 2e-2, "float8e4m3": 8e-2, "int8": 3e-2, "int4": 0.25}


def rel(a, b):
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30))


def check(src_dir, out_dir):
    cfg_all = json.load(open(os.path.join(out_dir, "config.json")))
    cfg = cfg_all["quantization_config"]
    param = cfg_all["torch_dtype"]
    tdt = torch.float16 if param == "float16" else torch.bfloat16
    src = canon.load_dir(src_dir) if src_dir != "-" else None  # "-": a quantized input
    out = canon.load_dir(out_dir)
    worst_q, worst_s, n, bad = 0.0, 0.0, 0, []
    gen = torch.Generator(device="cuda").manual_seed(7)
    for p in canon.layer_prefixes(out):
        s = canon.resolve(cfg, p)
        N = out[p + ".weight"][1][0]
        K = out[p + ".weight"][1][1] * 32 // canon.bits_of(s["b_dtype"])
        want, _, _, _ = canon.expected_tensors(s, N, K, param)
        try:
            layer = HummingLayer.from_safetensors(out_dir, p, pad_n_to_multiple=256,
                                                  pad_k_to_multiple=128, torch_dtype=tdt)
            for name, (dt, shape) in want.items():  # what from_safetensors built is what we wrote
                have = tuple(getattr(layer, name).shape)
                assert have == shape, f"{p}.{name}: Humming expects {have}, we wrote {shape}"
            layer = layer.cuda()
            layer.transform()
            x = torch.randn(16, K, generator=gen, device="cuda", dtype=torch.float32).to(tdt)
            y = layer(x).float().cpu().numpy()
        except Exception as e:  # noqa: BLE001 - reported per layer, the run goes on
            bad.append(f"{p}: {type(e).__name__}: {e}")
            continue
        xf = x.float().cpu().numpy().astype(np.float64)
        wq = canon.dequant(s, {k: out[p + "." + k] for k in want}, N, K, param)
        ref_q = xf @ wq.T
        ref_s = xf @ src[p + ".weight"][2].astype(np.float64).T if src else ref_q
        if (p + ".bias") in out:
            b = out[p + ".bias"][2].astype(np.float64)
            ref_q, ref_s = ref_q + b, ref_s + b
        eq, es = rel(y, ref_q), rel(y, ref_s)
        if not np.isfinite(y).all() or eq > BOUND[s.get("a_dtype")]:
            bad.append(f"{p}: rel err vs dequant {eq:.3g} (bound {BOUND[s.get('a_dtype')]})")
        worst_q, worst_s, n = max(worst_q, eq), max(worst_s, es), n + 1
    name = os.path.basename(out_dir.rstrip("/"))
    print(f"HUMMING {name:10s} {n:3d} layers loaded by from_safetensors + transform + forward: "
          f"worst rel err vs x@dequant(W) {worst_q:.3g}, vs x@W_src {worst_s:.3g}"
          + (f"; FAILED: {bad}" if bad else ""))
    return not bad


def main():
    import humming
    print("humming", getattr(humming, "__version__", "?"), "torch", torch.__version__,
          torch.cuda.get_device_name())
    ok = all([check(sys.argv[1], d) for d in sys.argv[2:]])
    print("canonical_humming:", "OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
