#!/usr/bin/env python3
"""Oracle test: our C format codecs against ml_dtypes (numpy for float16).

Runs `$HC_BUILD/tests/test_formats --dump DIR`, which writes, per format, the
float32 decode of every code and the encode of every float32 in DIR/inputs.f32,
then compares bit for bit with ml_dtypes' casts.

Known, documented differences (docs/formats.md, "Differences from ml_dtypes");
each is checked exactly on its own inputs rather than skipped:
  * float8e8m0: we follow PyTorch's float8_e8m0fnu cast, which is what the
    serving stack (vLLM, Humming) applies to tensors. Our encode is checked on
    every input against a numpy transcription of that rule. Against ml_dtypes
    (pinned in tests/requirements.txt) two documented differences remain:
    x <= 0 (PyTorch: sign ignored, 0 -> code 0; ml_dtypes: NaN 0xFF), and
    float32 subnormals in (2^-127, 1.5 * 2^-127) (PyTorch rounds up to code 1
    because the guard bit is set; ml_dtypes 0.7 rounds to the nearer value,
    code 0). Elsewhere (normal x > 0, NaN, +Inf, the other subnormals) the two
    must agree bit for bit.
  * float4/float6 (no NaN code): NaN input gives code 0 here; ml_dtypes gives a
    zero code too but with the sign bit flipped. Both must be zeros.
  * NaN payloads: float16 encode keeps no payload here (quiet NaN 0x7E00|sign),
    numpy keeps the top payload bits; decode of a NaN code gives a NaN without
    payload. Both must be NaN with the same sign.
"""
import os
import subprocess
import sys
import tempfile

try:
    import numpy as np
    import ml_dtypes
except ImportError:
    print("SKIP[oracle]: numpy/ml_dtypes unavailable: oracle test skipped")
    sys.exit(77)

# our name -> (oracle dtype, bits of one code, numpy storage type)
FORMATS = {
    "float8e4m3": (ml_dtypes.float8_e4m3fn, 8, np.uint8),
    "float8e5m2": (ml_dtypes.float8_e5m2, 8, np.uint8),
    "float8e8m0": (ml_dtypes.float8_e8m0fnu, 8, np.uint8),
    "float4e2m1": (ml_dtypes.float4_e2m1fn, 4, np.uint8),
    "float6e2m3": (ml_dtypes.float6_e2m3fn, 6, np.uint8),
    "float6e3m2": (ml_dtypes.float6_e3m2fn, 6, np.uint8),
    "bfloat16": (ml_dtypes.bfloat16, 16, np.uint16),
    "float16": (np.float16, 16, np.uint16),
}
NO_NAN = {"float4e2m1", "float6e2m3", "float6e3m2"}


def oracle_decode(name):
    dt, bits, st = FORMATS[name]
    with np.errstate(invalid="ignore"):
        return np.arange(1 << bits).astype(st).view(dt).astype(np.float32)


def grid_inputs(name):
    """Every value, every midpoint (ties) and the float32 neighbours of both,
    plus the rounding boundary past the largest value; both signs."""
    v = oracle_decode(name)
    v = np.unique(np.abs(v[np.isfinite(v)]).astype(np.float64))
    top, prev = v[-1], v[-2]
    exact = np.concatenate([v, (v[:-1] + v[1:]) / 2, [top + (top - prev) / 2, 2 * top]])
    exact = exact[exact < 3.4e38]
    pts = exact.astype(np.float32)
    assert np.all(pts.astype(np.float64) == exact), name  # ties must be exact float32
    up, down = np.nextafter(pts, np.float32(np.inf)), np.nextafter(pts, np.float32(0))
    out = np.concatenate([pts, up, down])
    return np.concatenate([out, -out])


def make_inputs():
    rng = np.random.default_rng(20240607)
    parts = [
        rng.integers(0, 1 << 32, 500_000, dtype=np.uint64).astype(np.uint32).view(np.float32),
        (rng.standard_normal(300_000) * np.exp2(rng.uniform(-150, 20, 300_000))).astype(np.float32),
        np.array([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 3.4028235e38, -3.4028235e38,
                  1.1754944e-38, 1e-45, -1e-45, 5.877472e-39, 8.816208e-39], dtype=np.float32),
    ]
    parts += [grid_inputs(n) for n in FORMATS]
    return np.concatenate(parts)


def torch_e8m0(xs):
    """PyTorch float8_e8m0fnu cast (c10/util/Float8_e8m0fnu.h), spec §1.4."""
    u = xs.view(np.uint32)
    e = (u >> 23) & 0xFF
    g = (u >> 22) & 1
    rs = (u & 0x3FFFFF) != 0
    up = (g == 1) & (rs | (e > 0)) & (e != 0xFF)
    return (e + up).astype(np.uint32)


def e8m0_subnormal_band(xs):
    """Positive float32 subnormals strictly between 2^-127 and 1.5 * 2^-127."""
    u = xs.view(np.uint32)
    m = u & 0x7FFFFF
    return (((u >> 23) & 0x1FF) == 0) & (m > 0x400000) & (m < 0x600000)


def nan_code_sign(codes, name):
    """(is NaN, sign bit) of codes in format `name`, via the oracle decode."""
    vals = oracle_decode(name)[codes]
    return np.isnan(vals), np.signbit(vals)


def check_decode(name, ours_bits):
    ref = oracle_decode(name)
    ours = ours_bits.view(np.float32)
    isnan = np.isnan(ref)
    bad = (ours_bits != ref.view(np.uint32)) & ~isnan
    bad |= isnan & ~(np.isnan(ours) & (np.signbit(ours) == np.signbit(ref)))
    return int(bad.sum()), len(ref)


def check_encode(name, xs, ours):
    dt, bits, st = FORMATS[name]
    with np.errstate(all="ignore"):
        ref = xs.astype(dt).view(st).astype(np.uint32)
    xnan = np.isnan(xs)
    special = np.zeros(len(xs), dtype=bool)  # inputs with a documented difference
    bad = np.zeros(len(xs), dtype=bool)
    if name == "float8e8m0":
        nonpos = ~(xnan | (xs > 0))
        band = e8m0_subnormal_band(xs)
        special = nonpos | band
        bad |= ours != torch_e8m0(xs)  # our rule, on every input
        bad |= nonpos & (ref != 0xFF)  # ml_dtypes: no value for x <= 0
        bad |= band & ~((ours == 1) & (ref == 0))  # PyTorch up, ml_dtypes nearest
    elif name in NO_NAN:
        special = xnan
        ref_zero = oracle_decode(name)[ref] == 0
        bad |= special & ~((ours == 0) & ref_zero)
    elif name == "float16":
        special = xnan
        ours_nan, ours_neg = nan_code_sign(ours, name)
        ref_nan, ref_neg = nan_code_sign(ref, name)
        bad |= special & ~(ours_nan & ref_nan & (ours_neg == ref_neg))
    bad |= ~special & (ours != ref)
    for i in np.nonzero(bad)[0][:5]:
        print(f"  MISMATCH {name}: x={xs[i]!r} ({xs[i:i+1].view(np.uint32)[0]:#010x}) "
              f"ours={ours[i]:#x} ml_dtypes={ref[i]:#x}")
    return int(bad.sum()), int((~special).sum()), int(special.sum())


def main():
    build = os.environ.get("HC_BUILD", "build")
    exe = os.path.join(build, "tests", "test_formats")
    xs = make_inputs()
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        xs.astype("<f4").tofile(os.path.join(d, "inputs.f32"))
        subprocess.run([exe, "--dump", d], check=True)
        for name in FORMATS:
            dec = np.fromfile(os.path.join(d, f"{name}.decode.f32"), dtype="<u4")
            enc = np.fromfile(os.path.join(d, f"{name}.encode.u32"), dtype="<u4")
            assert len(enc) == len(xs), name
            dbad, dn = check_decode(name, dec)
            ebad, en, es = check_encode(name, xs, enc)
            print(f"{name:11s} decode: {dn:6d} codes, {dbad} mismatches; "
                  f"encode: {en} inputs bitwise + {es} documented-difference inputs, {ebad} mismatches")
            failures += dbad + ebad
    print(f"oracle: {len(xs)} float32 inputs per format, {failures} mismatches")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
