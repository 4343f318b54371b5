"""Reference timings on the same GPU run as our kernels (bench/run_bench.sh):
cuBLAS fp16 through PyTorch, and the real Humming library (humming-kernels
wheel, carried to the device; never committed). Prints one line per cell:
  REF cublas|humming FORMAT N K M median_ms [first_ms]
Humming's first call compiles its kernel; the budget (seconds, argv[1]) stops
the Humming part early and says what was skipped."""
import sys, time
import torch
import triton

budget = float(sys.argv[1]) if len(sys.argv) > 1 else 240.0
t_start = time.time()
dev = "cuda"
shapes = [(8192, 8192), (28672, 8192), (8192, 28672)]
Ms = [1, 16, 128, 1024, 4096]


def med(fn):
    return triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")


torch.manual_seed(0)
for N, K in shapes:
    w = torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02
    for M in Ms:
        x = torch.randn(M, K, device=dev, dtype=torch.float16)
        print(f"REF cublas fp16 N={N} K={K} M={M} median {med(lambda: x @ w.t()):.4f} ms", flush=True)
    del w

try:
    from humming.layer import HummingLayer
except Exception as e:  # noqa: BLE001
    print("REF humming unavailable:", repr(e))
    sys.exit(0)

cells = [  # (name, weight_config, input dtype, shapes, Ms)
    ("W4A16 uint4 g128", {"dtype": "uint4", "group_size": 128}, None, [(8192, 8192)], Ms),
    ("W4A8 uint4 g128 fp8", {"dtype": "uint4", "group_size": 128}, "float8e4m3", [(8192, 8192)], [16, 1024]),
    ("MXFP4 x fp8", {"dtype": "float4e2m1", "group_size": 32, "scale_dtype": "float8e8m0"},
     "float8e4m3", [(8192, 8192)], [16, 1024]),
    ("W8A8 fp8 channel", {"dtype": "float8e4m3", "group_size": 0}, "float8e4m3", [(8192, 8192)], [16, 1024]),
    ("W4A16 uint4 g128", {"dtype": "uint4", "group_size": 128}, None, [(28672, 8192), (8192, 28672)], [16]),
]
skipped = []
for name, wc, adt, shp, ms in cells:
    for N, K in shp:
        for M in ms:
            if time.time() - t_start > budget:
                skipped.append(f"{name} N={N} K={K} M={M}")
                continue
            try:
                layer = HummingLayer(shape_n=N, shape_k=K, weight_config=dict(wc),
                                     input_config={"dtype": adt} if adt else None,
                                     torch_dtype=torch.float16).to(dev)
                layer.load_from_unquantized(torch.randn(N, K, device=dev, dtype=torch.float16) * 0.02)
                layer.transform()
                x = torch.randn(M, K, device=dev, dtype=torch.float16)
                torch.cuda.synchronize()
                t0 = time.time()
                layer(x)
                torch.cuda.synchronize()
                first = (time.time() - t0) * 1e3
                print(f"REF humming {name} N={N} K={K} M={M} median {med(lambda: layer(x)):.4f} ms "
                      f"first {first:.1f} ms", flush=True)
                del layer
            except Exception as e:  # noqa: BLE001
                print(f"REF humming {name} N={N} K={K} M={M} FAILED: {e!r}"[:400], flush=True)
if skipped:
    print("REF humming skipped (time budget):", "; ".join(skipped))
