"""The side-by-side table of bench/run_bench.sh: ours / Humming and ours /
cuBLAS fp16 per cell, timed two ways on both sides. `flush`: a 256 MB buffer
zeroed before each timed call (triton's do_bench; our HCK_TIME_FLUSH=1), the
method of the issue's reference figures; `no flush`: back-to-back CUDA-graph
replays (our default; bench_ref.py's `noflush`). Arguments: ours.txt (no
flush), ours_flush.txt, ref.txt (bench_ref.py). Markdown on stdout."""
import re
import sys


def ours_times(path):
    t = {}
    for line in open(path):
        m = re.search(r"BENCH ours (.+?)\s+N=(\d+)\s+K=(\d+)\s+M=(\d+)\s+median ([\d.]+)", line)
        if m:
            t[(m[1].strip(), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
    return t


def ref_times(path):
    cub, cubn, hum, humn, first = {}, {}, {}, {}, {}
    for line in open(path):
        m = re.match(r"REF cublas fp16 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+) ms eager [\d.]+ ms"
                     r"(?: noflush ([\d.]+) ms)?", line)
        if m:
            k = (int(m[1]), int(m[2]), int(m[3]))
            cub[k] = float(m[4])
            if m[5]:
                cubn[k] = float(m[5])
        m = re.match(r"REF humming (.+?) N=(\d+) K=(\d+) M=(\d+) median ([\d.na]+) ms eager ([\d.]+) ms"
                     r"(?: noflush ([\d.na]+) ms)? (first|newM) ([\d.]+)", line)
        if m:
            k = (m[1].strip(), int(m[2]), int(m[3]), int(m[4]))
            hum[k] = float(m[5]) if m[5] != "nan" else float(m[6])
            if m[7] and m[7] != "nan":
                humn[k] = float(m[7])
            if m[8] == "first":
                first[k[:3]] = float(m[9])
    return cub, cubn, hum, humn, first


def main():
    ours, oursf = ours_times(sys.argv[1]), ours_times(sys.argv[2])
    cub, cubn, hum, humn, first = ref_times(sys.argv[3])
    f = lambda v: "%.4f" % v if v else "-"
    r = lambda a, b: "%.2f" % (a / b) if a and b else "-"
    print("| format | N x K | M | ours ms (flush / no flush) | Humming ms (flush / no flush) | "
          "ours/Humming flush | ours/Humming no flush | cuBLAS fp16 ms (flush) | ours/cuBLAS flush |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for k in sorted(set(ours) | set(oursf)):
        o, of, h, hn, c = ours.get(k), oursf.get(k), hum.get(k), humn.get(k), cub.get(k[1:])
        print(f"| {k[0]} | {k[1]}x{k[2]} | {k[3]} | {f(of)} / {f(o)} | {f(h)} / {f(hn)} | "
              f"{r(of, h)} | {r(o, hn)} | {f(c)} | {r(of, c)} |")
    print()
    print("Humming first call (compiles its kernel), ms:",
          ", ".join(f"{k[0]} {k[1]}x{k[2]} {v:.0f}" for k, v in sorted(first.items())))


if __name__ == "__main__":
    main()
