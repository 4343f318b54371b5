"""Load one layer of a ``humming-convert --layout tiles`` output and run it with
humming-kernels' own ``humming_forward``, without Humming's transform.

The tiles output (docs/output-format.md, "Tiles layout") holds, per converted layer
``P``, the tensors humming-kernels 0.1.19 builds at load inside vLLM 0.33 (N padded
to a multiple of 256, K to 128) and, in ``config.json``
``quantization_config.layers[P].layer_config``, the ``humming.config.LayerConfig``
the kernel needs. Those bytes are only right for one humming-kernels release and
one GPU architecture, so before anything is loaded :func:`check_layer` compares
what the output records with the running environment and raises ``ValueError``
naming the layer and what differs.

:func:`check_layer` is pure Python (``json``, ``os``, ``struct``): it reads
``config.json`` and the safetensors headers only, so it runs (and is tested) on a
machine without torch or humming. :func:`load_layer` imports torch, safetensors
and humming when it is called, never at import time.
"""
import json
import os
import re
import struct

QUANT_METHOD = "humming-convert-tiles"
LAYOUT_VERSION = 2
PAD_N = 256  # vLLM 0.33 pads N to a multiple of 256 before Humming's transform
PAD_K = 128  # and K to a multiple of 128
TENSOR_NAMES = ("weight", "weight_scale", "zero_point", "bias", "weight_scale_2")

# safetensors dtype of a tensor stored in a Humming dtype
_ST_DTYPE = {"float16": "F16", "bfloat16": "BF16", "float32": "F32",
             "float8e4m3": "F8_E4M3", "float8e5m2": "F8_E5M2", "float8e8m0": "F8_E8M0"}
_MAX_HEADER = 256 << 20


def _bits(dtype_name):
    """Bit width of a Humming dtype name: uint4 -> 4, float8e4m3 -> 8, bfloat16 -> 16."""
    m = re.match(r"^(?:u?int|b?float)(\d+)", str(dtype_name))
    if not m:
        raise ValueError(f"unknown Humming dtype {dtype_name!r}")
    return int(m.group(1))


def _round_up(x, m):
    return (x + m - 1) // m * m


def _read_json(path, what):
    try:
        with open(path, "r", encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise ValueError(f"{what}: cannot read {path}: {e}") from None


def _st_header(path):
    """The JSON header of a safetensors file: name -> {dtype, shape, data_offsets}."""
    try:
        with open(path, "rb") as f:
            raw = f.read(8)
            if len(raw) != 8:
                raise ValueError("shorter than 8 bytes")
            n = struct.unpack("<Q", raw)[0]
            if n > _MAX_HEADER:
                raise ValueError(f"header of {n} bytes")
            header = json.loads(f.read(n))
    except (OSError, ValueError) as e:
        raise ValueError(f"cannot read the safetensors header of {path}: {e}") from None
    header.pop("__metadata__", None)
    return header


def _tensor_files(out_dir, prefix):
    """name -> shard file for every tensor whose name starts with ``prefix + '.'``
    (single ``model.safetensors`` or sharded with ``model.safetensors.index.json``)."""
    single = os.path.join(out_dir, "model.safetensors")
    index = os.path.join(out_dir, "model.safetensors.index.json")
    if os.path.exists(index):
        weight_map = _read_json(index, "tensor index").get("weight_map", {})
        return {k: os.path.join(out_dir, v) for k, v in weight_map.items()
                if k.startswith(prefix + ".")}
    if os.path.exists(single):
        return {k: single for k in _st_header(single) if k.startswith(prefix + ".")}
    raise ValueError(f"{out_dir}: neither model.safetensors nor model.safetensors.index.json")


def expected_tensors(record, layer_config):
    """Short name -> (safetensors dtype, shape) of the tensors a tiles layer holds, from
    its config.json record and LayerConfig object (docs/output-format.md, tiles table)."""
    c = layer_config
    e = int(c.get("num_experts") or 0)
    lead = [e] if e else []
    np_, kp = int(c["shape_n"]), int(c["shape_k"])
    b, a = _bits(c["b_dtype"]), _bits(c["a_dtype"])
    param = _ST_DTYPE.get(c["c_dtype"])
    if param not in ("F16", "BF16"):
        raise ValueError(f"c_dtype {c['c_dtype']!r} is not float16 or bfloat16")
    if c.get("use_int_weight_scale"):
        raise ValueError("int weight scales are not in the 0.1.19 tiles that humming-convert "
                         "writes (layout_version 2)")
    variant = record.get("layout_variant")
    if variant == "packed_k":
        w = [kp // 64, np_ * 64 * b // 32]
    elif variant == "tiled":
        p = 256 // a
        w = [kp // p, np_ * p * b // 32]
    elif variant in ("flat", "raw"):
        w = [np_, kp * b // 32]
    else:
        raise ValueError(f"unknown layout_variant {variant!r}")
    if (variant == "packed_k") != bool(c.get("use_packed_k_layout")):
        raise ValueError(f"layout_variant {variant!r} contradicts use_packed_k_layout "
                         f"{c.get('use_packed_k_layout')!r}")
    want = {"weight": ("I32", lead + w)}
    st, gs = c.get("weight_scale_type"), int(c.get("weight_scale_group_size") or 0)
    groups = kp // gs if gs else 1
    scale_layout = record.get("weight_scale_layout")
    if scale_layout == "umma":  # sm100 block-scaled MMA: 4 e8m0 groups per int32
        want["weight_scale"] = ("I32", lead + [groups // 4, np_])
    elif scale_layout == "mxmma":  # sm120: 2 groups x 2 rows per int32
        want["weight_scale"] = ("I32", lead + [groups // 2, np_ // 2])
    elif scale_layout is not None:
        raise ValueError(f"unknown weight_scale_layout {scale_layout!r}")
    elif st in ("group", "channel"):
        if c.get("bs_dtype") not in _ST_DTYPE:
            raise ValueError(f"unknown bs_dtype {c.get('bs_dtype')!r}")
        want["weight_scale"] = (_ST_DTYPE[c["bs_dtype"]], lead + [groups, np_])
    elif st == "block":
        gn = int(c.get("weight_scale_group_size_n") or 0)
        if not gs or not gn:
            raise ValueError("block scales without a group size along K and N")
        want["weight_scale"] = ("F32", lead + [kp // gs, np_ // gn])
    elif st == "tensor":
        want["weight_scale"] = ("F32", [e or 1])
    else:
        raise ValueError(f"unknown weight_scale_type {st!r}")
    if c.get("has_zero_point"):
        if c.get("is_fp_zero_point"):
            want["zero_point"] = (param, lead + [groups, np_])
        else:
            zb = 4 if b <= 4 else 8
            want["zero_point"] = ("I32", lead + [groups, np_ * zb // 32])
    s2 = c.get("weight_scale_2_type") or "none"
    if s2 == "tensor":
        want["weight_scale_2"] = ("F32", [e or 1])
    elif s2 == "channel":  # one per output row, permuted as a bias (also fused e8m0 x int8)
        want["weight_scale_2"] = (param, lead + [np_])
    elif s2 != "none":
        raise ValueError(f"weight_scale_2_type {s2!r} is not written by humming-convert")
    if c.get("has_bias"):
        want["bias"] = (param, lead + [np_])
    return want


def _release(version):
    """'0.1.19+cu12' -> '0.1.19' (the local part is a build tag, not another release)."""
    return str(version).split("+", 1)[0].strip()


def check_layer(out_dir, prefix, humming_version=None, sm_version=None, dtype=None):
    """Check one layer of a tiles output against what the caller will run it with.

    Pure Python: reads ``config.json`` and safetensors headers, imports nothing else.
    ``humming_version`` (the running humming-kernels, e.g. ``"0.1.19"``),
    ``sm_version`` (the running GPU, e.g. ``90`` for compute capability 9.0) and
    ``dtype`` (the activation / output dtype the caller uses, ``"float16"`` or
    ``"bfloat16"``) are each compared only when given. Always checked: the output is a
    layout_version 2 tiles output; ``prefix`` is one of its converted layers with a
    LayerConfig; the layer's record, LayerConfig and padding agree (N and K padded
    exactly as vLLM pads: to multiples of 256 and 128); config.json's 16-bit
    ``torch_dtype`` is the layer's; every tensor the LayerConfig needs is present with
    the dtype and shape it needs, and no other tensor carries the prefix.

    Returns a dict: ``prefix``, ``humming_version`` (recorded), ``record`` (the
    config.json entry), ``layer_config`` (the JSON object for
    ``humming.config.LayerConfig(**obj)``), ``dtype`` (the layer's ``"float16"`` /
    ``"bfloat16"``) and ``tensors`` (short name -> (file, key, safetensors dtype,
    shape)). Raises ``ValueError`` naming the layer and what differs.
    """
    def fail(msg):
        raise ValueError(f"layer {prefix} of {out_dir}: {msg}")

    cfg = _read_json(os.path.join(out_dir, "config.json"), f"layer {prefix}")
    q = cfg.get("quantization_config")
    if not isinstance(q, dict):
        fail("config.json has no quantization_config: not a humming-convert output")
    if q.get("quant_method") != QUANT_METHOD or q.get("layout") != "tiles":
        if q.get("quant_method") == "humming":
            fail("this is the canonical layout (quant_method humming): serve it with vLLM, or "
                 "load it with HummingLayer.from_safetensors(...) and .transform()")
        fail(f"quant_method {q.get('quant_method')!r}, layout {q.get('layout')!r}: not a "
             f"humming-convert tiles output ({QUANT_METHOD!r}, 'tiles')")
    if q.get("layout_version") != LAYOUT_VERSION:
        fail(f"layout_version {q.get('layout_version')!r}: this loader reads version "
             f"{LAYOUT_VERSION} only (outputs without it hold Humming a6455de's layout, "
             "which no released humming-kernels runs)")
    recorded = q.get("humming_version")
    if not recorded:
        fail("config.json records no humming_version")
    if humming_version is not None and _release(humming_version) != _release(recorded):
        fail(f"written for humming-kernels {recorded}, but humming-kernels "
             f"{humming_version} is running: the tiles are only valid for the release "
             "they were written for (convert again with --humming-version, or install "
             f"humming-kernels=={recorded})")

    layers = q.get("layers") or {}
    rec = layers.get(prefix)
    if not isinstance(rec, dict) or not isinstance(rec.get("layer_config"), dict):
        names = sorted(k for k, v in layers.items()
                       if isinstance(v, dict) and "layer_config" in v)
        hint = f" (converted layers: {', '.join(names[:6])}{', ...' if len(names) > 6 else ''})"
        if re.search(r"\.experts\.\d+\.", prefix):
            hint += "; expert stacks are one layer X.experts.Y, expert i at index i"
        fail("not a converted layer of this output" + hint)
    lc = rec["layer_config"]

    sm = lc.get("sm_version")
    if not isinstance(sm, int):
        fail(f"layer_config has no integer sm_version ({sm!r})")
    if sm_version is not None and int(sm_version) != sm:
        fail(f"written for sm{sm} (--arch {q.get('arch')}), but the GPU is sm{int(sm_version)}: "
             f"convert again with --arch sm{int(sm_version)}")

    # padding: the LayerConfig's shapes are the padded ones, as vLLM pads
    for ax, mult in (("n", PAD_N), ("k", PAD_K)):
        try:
            logical, padded = int(rec[f"shape_{ax}"]), int(rec[f"padded_{ax}"])
            in_cfg, pad = int(lc[f"shape_{ax}"]), int(lc[f"pad_shape_{ax}"])
        except (KeyError, TypeError, ValueError):
            fail(f"record or layer_config lacks shape_{ax} / padded_{ax} / pad_shape_{ax}")
        if padded != _round_up(logical, mult):
            fail(f"{ax.upper()} = {logical} padded to {padded}, but vLLM 0.33 pads it to "
                 f"{_round_up(logical, mult)} (a multiple of {mult})")
        if in_cfg != padded or pad != padded - logical:
            fail(f"layer_config shape_{ax} {in_cfg} / pad_shape_{ax} {pad} disagree with the "
                 f"record ({ax.upper()} = {logical} padded to {padded})")
    if int(rec.get("num_experts") or 0) != int(lc.get("num_experts") or 0):
        fail(f"record num_experts {rec.get('num_experts')} != layer_config "
             f"{lc.get('num_experts')}")

    # dtype: the layer's 16-bit dtype (Humming's c_dtype) everywhere it is recorded
    layer_dtype = lc.get("c_dtype")
    if layer_dtype not in ("float16", "bfloat16"):
        fail(f"layer_config c_dtype {layer_dtype!r} is not float16 or bfloat16")
    if rec.get("param_dtype", layer_dtype) != layer_dtype:
        fail(f"record param_dtype {rec.get('param_dtype')!r} != layer_config c_dtype "
             f"{layer_dtype!r}")
    top = cfg.get("torch_dtype")
    if top in ("float16", "bfloat16") and top != layer_dtype:
        fail(f"config.json torch_dtype {top} but the layer is {layer_dtype}")
    if dtype is not None:
        want = str(dtype).replace("torch.", "")
        if want != layer_dtype:
            fail(f"written for {layer_dtype} activations and outputs, asked for {want}")

    # tensors: exactly the ones the LayerConfig needs, with their dtypes and shapes
    try:
        want = expected_tensors(rec, lc)
    except ValueError as e:
        fail(str(e))
    files = _tensor_files(out_dir, prefix)
    extra = sorted(k for k in files if k[len(prefix) + 1:] not in want)
    if extra:
        fail(f"tensors this loader would not feed to the kernel: {', '.join(extra)}")
    headers, tensors = {}, {}
    for name, (st_dtype, shape) in want.items():
        key = f"{prefix}.{name}"
        if key not in files:
            fail(f"{key} is missing (the layer_config needs it)")
        path = files[key]
        if path not in headers:
            headers[path] = _st_header(path)
        h = headers[path].get(key)
        if h is None:
            fail(f"{key} is not in {os.path.basename(path)}")
        if h.get("dtype") != st_dtype or list(h.get("shape", [])) != shape:
            fail(f"{key} is {h.get('dtype')} {h.get('shape')}, the layer_config needs "
                 f"{st_dtype} {shape}")
        tensors[name] = (path, key, st_dtype, shape)
    return {"prefix": prefix, "humming_version": recorded, "record": rec,
            "layer_config": lc, "dtype": layer_dtype, "tensors": tensors}


def _running_humming_version():
    import humming

    v = getattr(humming, "__version__", None)
    if not v or str(v).startswith("0.0.0"):
        from importlib.metadata import version

        v = version("humming-kernels")
    return str(v)


class TilesLayer:
    """One tiles layer on the GPU, run by ``humming.forward.humming_forward`` exactly as
    ``humming.layer.HummingLayer.forward`` runs a transformed layer (same arguments,
    same per-layer locks buffer), with no transform.

    Attributes: ``prefix``; ``layer_config`` (``humming.config.LayerConfig``);
    ``config_json`` (the recorded object it was built from); ``dtype`` (torch
    float16/bfloat16, the input and output dtype); ``weight``, ``weight_scale``,
    ``zero_point``, ``bias``, ``weight_scale_2`` (tensors, ``None`` where the layer has
    none); ``locks`` (int32 zeros, 2048, as HummingLayer makes them).

    Dense inputs are ``(M, K)`` with K the layer's unpadded size; the output is
    ``(M, N)``, unpadded. An expert stack (``num_experts > 0``) needs the MoE routing
    arguments of ``humming_forward``; :meth:`expert` gives one expert as a dense layer.
    """

    def __init__(self, prefix, layer_config, config_json, tensors, locks, dtype):
        self.prefix = prefix
        self.layer_config = layer_config
        self.config_json = dict(config_json)
        self.dtype = dtype
        self.locks = locks
        for name in TENSOR_NAMES:
            setattr(self, name, tensors.get(name))

    def tensors(self):
        """Short name -> tensor, for the tensors the layer has."""
        return {n: getattr(self, n) for n in TENSOR_NAMES if getattr(self, n) is not None}

    def expert(self, index):
        """Expert ``index`` of a stack as a dense TilesLayer (its LayerConfig with
        ``num_experts = 0``; the tensors are copies, since Humming's launcher wants
        every tensor 16-byte aligned and a view of one float32 of an (E,) second
        scale is not; a fresh locks buffer)."""
        from humming.config import LayerConfig
        import torch

        e = int(self.config_json.get("num_experts") or 0)
        if not 0 <= index < e:
            raise ValueError(f"layer {self.prefix}: no expert {index} (num_experts {e})")
        obj = dict(self.config_json, num_experts=0)
        # (E,) tensors (per-tensor scales) keep one element; the others lose the E dim
        part = {n: (t[index:index + 1] if t.dim() == 1 else t[index]).clone()
                for n, t in self.tensors().items()}
        locks = torch.zeros_like(self.locks)
        return TilesLayer(f"{self.prefix}[{index}]", LayerConfig(**obj), obj, part, locks,
                          self.dtype)

    def forward(self, inputs, outputs=None, input_scale=None, input_scale_2=None,
                sorted_ids=None, expert_ids=None, num_tokens_padded=None, expert_layout=None,
                top_k=1, valid_shape_m=0, compute_config=None, tuning_config=None,
                hadamard_block_size=None, use_pdl=None):
        """``humming_forward`` on this layer; the arguments are HummingLayer.forward's."""
        import torch
        from humming.forward import humming_forward

        if inputs.dtype in (torch.float16, torch.bfloat16) and inputs.dtype != self.dtype:
            raise ValueError(f"layer {self.prefix}: inputs are {inputs.dtype}, the layer runs "
                             f"{self.dtype}")
        return humming_forward(
            self.layer_config,
            inputs=inputs,
            weight=self.weight,
            weight_scale=self.weight_scale,
            zero_point=self.zero_point,
            bias=self.bias,
            weight_scale_2=self.weight_scale_2,
            outputs=outputs,
            input_scale=input_scale,
            input_scale_2=input_scale_2,
            sorted_ids=sorted_ids,
            expert_ids=expert_ids,
            num_tokens_padded=num_tokens_padded,
            expert_layout=expert_layout,
            locks=self.locks,
            top_k=top_k,
            valid_shape_m=valid_shape_m,
            compute_config=compute_config,
            tuning_config=tuning_config,
            hadamard_block_size=hadamard_block_size,
            use_pdl=use_pdl,
        )

    __call__ = forward


def load_layer(out_dir, prefix, device="cuda", dtype=None):
    """Load layer ``prefix`` of the tiles output ``out_dir`` onto ``device``.

    Checks (:func:`check_layer`) the recorded humming-kernels version against the
    installed one (``humming.__version__``, else the package metadata), the recorded
    ``sm_version`` against the GPU of ``device`` (``torch.cuda.get_device_capability``),
    the layer's dtype against ``dtype`` when given (a torch dtype or its name), its
    padding and its tensors; raises ``ValueError`` naming the layer and what differs.
    Reads only the layer's tensors (safetensors' torch loader, ``safe_open``).
    Returns a :class:`TilesLayer`.
    """
    import torch
    from safetensors import safe_open
    from humming.config import LayerConfig

    dev = torch.device(device)
    if dev.type != "cuda":
        raise ValueError(f"layer {prefix} of {out_dir}: Humming kernels run on CUDA, not {dev}")
    major, minor = torch.cuda.get_device_capability(dev)
    info = check_layer(out_dir, prefix, humming_version=_running_humming_version(),
                       sm_version=major * 10 + minor, dtype=dtype)
    by_file = {}
    for name, (path, key, _, _) in info["tensors"].items():
        by_file.setdefault(path, []).append((name, key))
    tensors = {}
    for path, items in by_file.items():
        with safe_open(path, framework="pt", device="cpu") as f:
            for name, key in items:
                tensors[name] = f.get_tensor(key).to(dev)
    layer_dtype = torch.float16 if info["dtype"] == "float16" else torch.bfloat16
    # Stream-K synchronisation state, one buffer per layer (HummingLayer.__post_init__)
    locks = torch.zeros((2048,), dtype=torch.int32, device=dev)
    return TilesLayer(prefix, LayerConfig(**info["layer_config"]), info["layer_config"],
                      tensors, locks, layer_dtype)
