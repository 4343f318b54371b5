"""Reference timings on the same GPU run as our kernels (bench/run_bench.sh):
cuBLAS fp16 through PyTorch, and the real Humming library (humming-kernels
wheel, carried to the device; never committed). One line per cell:
  REF cublas fp16 N= K= M= median X ms eager Y ms noflush Z ms clean C ms
  REF humming FORMAT N= K= M= median X ms eager Y ms noflush Z ms first W ms clean C ms
`median` is the replay of the call captured as a CUDA graph (no Python or
launch gaps), `eager` the plain `layer(x)` call, both triton.testing.do_bench
medians, which zero a 256 MB buffer before each call (L2 flushed, as our
--flush 1); `noflush` the median of back-to-back graph replays (as our
default timing); `clean` the median of graph replays each after a read of a
256 MB buffer (L2 full but clean, as our --flush 2). `first` is the first call of a (format, shape), which
compiles Humming's kernel (`newM` for a later token count). argv[1]: time
budget in seconds for the Humming part (cells past it are listed as skipped);
argv[2] (optional): "all" for every format on every shape. Environment:
HC_REF_MS=a,b,... (these token counts), HC_REF_ONLY=text (formats whose name
contains text), HC_REF_SHAPES=n (the first n shapes), as the --bench switches of our side."""
import os, sys, time
import torch
import triton

budget = float(sys.argv[1]) if len(sys.argv) > 1 else 240.0
every = len(sys.argv) > 2 and sys.argv[2] == "all"
t_start = time.time()
dev = "cuda"
shapes = [(8192, 8192), (28672, 8192), (8192, 28672)]
if os.environ.get("HC_REF_SHAPES"):  # the first n shapes only
    shapes = shapes[: int(os.environ["HC_REF_SHAPES"])]
Ms = [int(m) for m in os.environ.get("HC_REF_MS", "1,16,128,1024,4096").split(",")]
only = os.environ.get("HC_REF_ONLY", "")


def med(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


def graph_of(fn):
    """fn captured as a CUDA graph (after three warm-up calls on a side stream)."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g


def graph_med(fn):
    """do_bench median of the replay of fn captured as a CUDA graph (do_bench
    zeroes a 256 MB buffer before each replay: L2 flushed, dirty)."""
    return med(graph_of(fn).replay)


def graph_noflush(fn, iters=100):
    """median of back-to-back replays of fn's graph, an event pair around each
    and no flush between: how hc_gpu_sweep --bench times ours by default."""
    g = graph_of(fn)
    for _ in range(5):
        g.replay()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        a.record()
        g.replay()
        b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in ev)
    return t[len(t) // 2]


def graph_clean(fn, iters=100):
    """median of replays of fn's graph, each after a read (a sum) of a 256 MB
    buffer outside its event pair: L2 full of clean lines, as after another
    layer's weight reads (our --flush 2)."""
    g = graph_of(fn)
    buf = torch.ones(64 << 20, dtype=torch.int32, device=dev)
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for a, b in ev:
        buf.sum()
        a.record()
        g.replay()
        b.record()
    torch.cuda.synchronize()
    t = sorted(a.elapsed_time(b) for a, b in ev)
    del buf
    return t[len(t) // 2]


torch.manual_seed(0)
for N, K in shapes:
    w = torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02
    for M in Ms:
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        print(f"REF cublas fp16 N={N} K={K} M={M} median {graph_med(lambda: x @ w.t()):.4f} ms "
              f"eager {med(lambda: x @ w.t()):.4f} ms noflush {graph_noflush(lambda: x @ w.t()):.4f} ms "
              f"clean {graph_clean(lambda: x @ w.t()):.4f} ms", flush=True)
    del w

try:
    from humming.layer import HummingLayer
except Exception as e:  # noqa: BLE001
    print("REF humming unavailable:", repr(e))
    sys.exit(0)

cells = [  # (name, weight_config, input dtype)
    ("W4A16 uint4 g128", {"dtype": "uint4", "group_size": 128}, None),
    ("W4A8 uint4 g128 fp8", {"dtype": "uint4", "group_size": 128}, "float8e4m3"),
    ("MXFP4 x fp8", {"dtype": "float4e2m1", "group_size": 32, "scale_dtype": "float8e8m0"}, "float8e4m3"),
    ("W8A8 fp8 channel", {"dtype": "float8e4m3", "group_size": 0}, "float8e4m3"),
]
skipped = []
for name, wc, adt in cells:
    if only not in name:
        continue
    for N, K in (shapes if every or name.startswith("W4A16") else shapes[:1]):
        if time.time() - t_start > budget:
            skipped.append(f"{name} N={N} K={K}")
            continue
        try:
            layer = HummingLayer(shape_n=N, shape_k=K, weight_config=dict(wc),
                                 input_config={"dtype": adt} if adt else None,
                                 torch_dtype=torch.float16).to(dev)
            layer.load_from_unquantized(torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02)
            layer.transform()
        except Exception as e:  # noqa: BLE001
            print(f"REF humming {name} N={N} K={K} FAILED setup: {e!r}"[:400], flush=True)
            continue
        first_done = False
        for M in Ms:
            try:
                x = torch.randn(M, K, device=dev, dtype=torch.float16)
                torch.cuda.synchronize()
                t0 = time.time()
                layer(x)
                torch.cuda.synchronize()
                first = (time.time() - t0) * 1e3
                tag = "first" if not first_done else "newM"
                first_done = True
                eager = med(lambda: layer(x))
                try:
                    gm = f"{graph_med(lambda: layer(x)):.4f}"
                    gn = f"{graph_noflush(lambda: layer(x)):.4f}"
                    gc = f"{graph_clean(lambda: layer(x)):.4f}"
                except Exception as e:  # noqa: BLE001
                    gm = gn = gc = "nan"
                    print(f"REF humming {name} N={N} K={K} M={M} graph capture failed: {e!r}"[:300])
                print(f"REF humming {name} N={N} K={K} M={M} median {gm} ms eager {eager:.4f} ms "
                      f"noflush {gn} ms {tag} {first:.1f} ms clean {gc} ms", flush=True)
            except Exception as e:  # noqa: BLE001
                print(f"REF humming {name} N={N} K={K} M={M} FAILED: {e!r}"[:400], flush=True)
        del layer
        torch.cuda.empty_cache()
if skipped:
    print("REF humming skipped (time budget):", "; ".join(skipped))
