#!/usr/bin/env python3
"""Interop of our safetensors reader/writer with the reference `safetensors`.

(a) files written by the reference writer (numpy API for numpy dtypes,
    TensorSpec/serialize_file for BF16/F8/F4 where this safetensors has it,
    otherwise a header written here and checked by safetensors.deserialize)
    are read by our C reader (`test_safetensors --dump`): same names, dtypes,
    shapes, bytes (crc32 + length) and metadata;
(b) our writer (`test_safetensors --copy IN OUT`) writes files that the
    reference loads with identical bytes and metadata.
Runs $HC_BUILD/tests/test_safetensors (HC_BUILD defaults to `build`).
Exits 77 (skipped) with a SKIP[oracle] notice when safetensors/numpy/ml_dtypes cannot be imported."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import zlib

try:
    import ml_dtypes
    import numpy as np
    import safetensors
    import safetensors.numpy as stnp
    from safetensors import safe_open
except ImportError as e:  # oracle missing: skip, do not fail
    print(f"SKIP[oracle]: {e}; safetensors interop test skipped")
    sys.exit(77)

BIN = os.path.join(os.environ.get("HC_BUILD", "build"), "tests", "test_safetensors")
FAILURES = []
META = {"format": "pt", "note": "tab\there, quote \" and é"}


def check(cond, what):
    if not cond:
        FAILURES.append(what)
        print("MISMATCH:", what)


def run(*args):
    p = subprocess.run([BIN, *args], capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"FAIL: {BIN} {' '.join(args)}: {p.stderr.strip()}")
    return p.stdout


def dump(path):
    """Our reader's view: (metadata dict, {name: (dtype, shape, crc, nbytes)}, order)."""
    meta, tensors, order = {}, {}, []
    for line in run("--dump", path).splitlines():
        f = line.split("\t")
        if f[0] == "M":
            meta[f[1]] = "\t".join(f[2:])
        else:
            shape = [int(x) for x in f[3].split(",")] if f[3] else []
            tensors[f[1]] = (f[2], shape, int(f[4]), int(f[5]))
            order.append(f[1])
    return meta, tensors, order


NP_NAMES = {np.dtype(t): n for t, n in [
    (np.float64, "F64"), (np.float32, "F32"), (np.float16, "F16"), (np.int64, "I64"),
    (np.uint64, "U64"), (np.int32, "I32"), (np.uint32, "U32"), (np.int16, "I16"),
    (np.uint16, "U16"), (np.int8, "I8"), (np.uint8, "U8"), (np.bool_, "BOOL"),
    (np.complex64, "C64")]}


def numpy_tensors():
    rng = np.random.default_rng(7)
    out = {}
    for dt in [np.float64, np.float32, np.float16, np.int64, np.uint64, np.int32, np.uint32,
               np.int16, np.uint16, np.int8, np.uint8]:
        raw = rng.integers(0, 256, size=3 * 5 * np.dtype(dt).itemsize, dtype=np.uint8)
        out["w." + np.dtype(dt).name] = raw.view(dt).reshape(3, 5)
    out["mask"] = rng.integers(0, 2, size=(7,)).astype(bool)
    out["c64"] = (rng.standard_normal(4) + 1j * rng.standard_normal(4)).astype(np.complex64)
    out["scalar"] = np.array(3.25, dtype=np.float32)
    out["empty"] = np.zeros((0, 4), dtype=np.float32)
    out["odd"] = np.arange(3, dtype=np.uint8)
    return out


# dtype -> (ml_dtypes type or None, bits, TensorSpec dtype name or None)
EXOTIC = {
    "BF16": (ml_dtypes.bfloat16, 16, "bfloat16"),
    "F8_E4M3": (ml_dtypes.float8_e4m3fn, 8, "float8_e4m3fn"),
    "F8_E5M2": (ml_dtypes.float8_e5m2, 8, "float8_e5m2"),
    "F8_E8M0": (getattr(ml_dtypes, "float8_e8m0fnu", None), 8, "float8_e8m0fnu"),
    "F8_E4M3FNUZ": (ml_dtypes.float8_e4m3fnuz, 8, "float8_e4m3fnuz"),
    "F8_E5M2FNUZ": (ml_dtypes.float8_e5m2fnuz, 8, "float8_e5m2fnuz"),
    "F4": (None, 4, "float4_e2m1fn_x2"),
    "F6_E2M3": (None, 6, None),
    "F6_E3M2": (None, 6, None),
}


def exotic_tensors():
    """{name: (dtype, logical shape, bytes)}; values from ml_dtypes where it has the type."""
    rng = np.random.default_rng(11)
    out = {}
    for dt, (mlt, bits, _) in EXOTIC.items():
        shape = [4, 8]
        nbytes = 4 * 8 * bits // 8
        if mlt is not None:
            vals = rng.standard_normal(32).astype(np.float32)
            if dt == "F8_E8M0":
                vals = np.abs(vals) + 0.01
            data = vals.astype(mlt).tobytes()
        else:
            data = rng.integers(0, 256, size=nbytes, dtype=np.uint8).tobytes()
        assert len(data) == nbytes
        out["x." + dt] = (dt, shape, data)
    out["x.bf16_scalar"] = ("BF16", [], np.array(1.5, dtype=ml_dtypes.bfloat16).tobytes())
    return out


def write_by_hand(path, tensors, meta):
    header, data = {"__metadata__": meta}, b""
    for name, (dt, shape, raw) in tensors.items():
        header[name] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * ((8 - (8 + len(h)) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


def write_exotic(path, tensors):
    """Reference writer via TensorSpec when this safetensors has it (F6 by hand)."""
    spec = getattr(safetensors, "TensorSpec", None)
    usable = {n: t for n, t in tensors.items() if spec is not None and EXOTIC[t[0]][2]}
    if not usable:
        write_by_hand(path, tensors, META)
        return "hand-written header"
    bufs, specs = [], {}
    for name, (dt, shape, raw) in usable.items():
        buf = np.frombuffer(raw, dtype=np.uint8).copy()
        bufs.append(buf)
        sshape = shape[:-1] + [shape[-1] // 2] if dt == "F4" else shape
        specs[name] = spec(dtype=EXOTIC[dt][2], shape=sshape, data_ptr=buf.ctypes.data,
                           data_len=len(raw))
    safetensors.serialize_file(specs, path, metadata=META)
    rest = {n: t for n, t in tensors.items() if n not in usable}
    if rest:  # append the rest with a hand-written header: rewrite the whole file
        merged = {n: (d["dtype"], d["shape"], bytes(d["data"]))
                  for n, d in safetensors.deserialize(open(path, "rb").read())}
        merged.update(rest)
        write_by_hand(path, merged, META)
    return "reference writer (TensorSpec)" + (" + hand-written header for F6" if rest else "")


def compare_dump(label, path, expect, meta):
    got_meta, got, _ = dump(path)
    check(got_meta == meta, f"{label}: metadata {got_meta!r} != {meta!r}")
    check(set(got) == set(expect), f"{label}: names {sorted(got)} != {sorted(expect)}")
    for name, (dt, shape, raw) in expect.items():
        if name in got:
            want = (dt, list(shape), zlib.crc32(raw), len(raw))
            check(got[name] == want, f"{label}: tensor {name}: ours {got[name]} != reference {want}")


def reference_view(path):
    """{name: (dtype, shape, bytes)} and metadata as the reference reads them."""
    with open(path, "rb") as f:
        items = safetensors.deserialize(f.read())
    with safe_open(path, framework="np") as f:
        meta = f.metadata() or {}
    return {n: (d["dtype"], list(d["shape"]), bytes(d["data"])) for n, d in items}, meta


def test_numpy(tmp):
    src, copy = os.path.join(tmp, "np.safetensors"), os.path.join(tmp, "np_copy.safetensors")
    arrays = numpy_tensors()
    stnp.save_file(arrays, src, metadata=META)
    expect = {n: (NP_NAMES[a.dtype], list(a.shape), a.tobytes()) for n, a in arrays.items()}
    compare_dump("(a) numpy save_file -> C reader", src, expect, META)
    run("--copy", src, copy)
    loaded = stnp.load_file(copy)
    check(set(loaded) == set(arrays), "(b) C writer -> numpy load_file: names differ")
    for n, a in arrays.items():
        b = loaded.get(n)
        ok = b is not None and b.dtype == a.dtype and b.shape == a.shape and b.tobytes() == a.tobytes()
        check(ok, f"(b) C writer -> numpy load_file: tensor {n} differs")
    with safe_open(copy, framework="np") as f:
        check(f.metadata() == META, f"(b) metadata {f.metadata()!r} != {META!r}")
        check(sorted(f.keys()) == sorted(arrays), "(b) safe_open keys differ")
        check(f.get_tensor("scalar").shape == (), "(b) scalar lost its 0-d shape")
    hlen = struct.unpack("<Q", open(copy, "rb").read(8))[0]
    check((8 + hlen) % 8 == 0, f"(b) header length {hlen}: data section not 8-byte aligned")
    print(f"numpy dtypes: {len(arrays)} tensors both ways")


def test_exotic(tmp):
    src, copy = os.path.join(tmp, "ex.safetensors"), os.path.join(tmp, "ex_copy.safetensors")
    tensors = exotic_tensors()
    how = write_exotic(src, tensors)
    ref, _ = reference_view(src)  # the reference accepts what we are about to read
    check(ref == {n: (d, s, r) for n, (d, s, r) in tensors.items()}, "(a) reference view of source")
    compare_dump(f"(a) {how} -> C reader", src, tensors, META)
    run("--copy", src, copy)
    got, meta = reference_view(copy)
    check(meta == META, f"(b) exotic metadata {meta!r} != {META!r}")
    check(set(got) == set(tensors), "(b) exotic names differ")
    for n, t in tensors.items():
        check(got.get(n) == t, f"(b) C writer -> reference deserialize: tensor {n} differs")
    bf = got["x.BF16"][2]
    vals = np.frombuffer(bf, dtype=ml_dtypes.bfloat16)
    check(vals.size == 32, "(b) BF16 element count")
    print(f"exotic dtypes ({how}): {len(tensors)} tensors both ways")


def main():
    if not os.access(BIN, os.X_OK):
        raise SystemExit(f"FAIL: {BIN} not built (run make)")
    with tempfile.TemporaryDirectory(prefix="hc-st-py-") as tmp:
        test_numpy(tmp)
        test_exotic(tmp)
    if FAILURES:
        print(f"test_safetensors_roundtrip: {len(FAILURES)} mismatches")
        sys.exit(1)
    print("test_safetensors_roundtrip: OK")


if __name__ == "__main__":
    main()
