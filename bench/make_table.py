"""The side-by-side table of bench/run_bench.sh: ours / Humming and ours /
cuBLAS fp16 per cell, timed two ways on both sides. `clean`: a read of a 256 MB
buffer before each timed call, L2 full of clean lines as after another layer
(our --flush 2, bench_ref.py's `clean`); `flush`: a 256 MB buffer zeroed
before each call (triton's do_bench, the method of the issue's reference
figures; our --flush 1), which leaves L2 dirty. Back-to-back replays
are not compared: 8192^2's 4-bit weights (33.5 MB) stay in the 50 MB L2 there.
Arguments: ours_clean.txt, ours_flush.txt, ref.txt (bench_ref.py). Markdown
on stdout."""
import re
import sys


def ours_times(path, first=None):
    """Medians per (format, N, K, M); first-call times into `first` if given."""
    t = {}
    for line in open(path):
        m = re.search(r"BENCH ours (.+?)\s+N=(\d+)\s+K=(\d+)\s+M=(\d+)\s+median ([\d.]+)", line)
        if m:
            t[(m[1].strip(), int(m[2]), int(m[3]), int(m[4]))] = float(m[5])
            f = re.search(r"first ([\d.]+) ms", line)
            if f and first is not None:
                first[m[1].strip()] = max(first.get(m[1].strip(), 0.0), float(f[1]))
    return t


def clean_time(line):
    m = re.search(r" clean ([\d.]+) ms", line)
    return float(m[1]) if m else None


def ref_times(path):
    cub, cubc, hum, humc, first = {}, {}, {}, {}, {}
    for line in open(path):
        m = re.match(r"REF cublas fp16 N=(\d+) K=(\d+) M=(\d+) median ([\d.]+) ms", line)
        if m:
            k = (int(m[1]), int(m[2]), int(m[3]))
            cub[k] = float(m[4])
            cubc[k] = clean_time(line)
        m = re.match(r"REF humming (.+?) N=(\d+) K=(\d+) M=(\d+) median ([\d.na]+) ms eager ([\d.]+) ms"
                     r"(?: noflush ([\d.na]+) ms)? (first|newM) ([\d.]+)", line)
        if m:
            k = (m[1].strip(), int(m[2]), int(m[3]), int(m[4]))
            hum[k] = float(m[5]) if m[5] != "nan" else float(m[6])
            humc[k] = clean_time(line)
            if m[8] == "first":
                first[k[:3]] = float(m[9])
    return cub, cubc, hum, humc, first


def main():
    ofirst = {}
    ours, oursf = ours_times(sys.argv[1], ofirst), ours_times(sys.argv[2])
    cub, cubc, hum, humc, first = ref_times(sys.argv[3])
    f = lambda v: "%.4f" % v if v else "-"
    r = lambda a, b: "%.2f" % (a / b) if a and b else "-"
    print("| format | N x K | M | ours ms (clean / flush) | Humming ms (clean / flush) | "
          "ours/Humming clean | ours/Humming flush | cuBLAS fp16 ms (clean / flush) | ours/cuBLAS clean | "
          "ours/cuBLAS flush |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for k in sorted(set(ours) | set(oursf)):
        o, of, h, hc = ours.get(k), oursf.get(k), hum.get(k), humc.get(k)
        c, cc = cub.get(k[1:]), cubc.get(k[1:])
        print(f"| {k[0]} | {k[1]}x{k[2]} | {k[3]} | {f(o)} / {f(of)} | {f(hc)} / {f(h)} | "
              f"{r(o, hc)} | {r(of, h)} | {f(cc)} / {f(c)} | {r(o, cc)} | {r(of, c)} |")
    print()
    print("Humming first call (compiles its kernel), ms:",
          ", ".join(f"{k[0]} {k[1]}x{k[2]} {v:.0f}" for k, v in sorted(first.items())))
    print()
    print("Ours first call (built ahead of time; the slowest cell per format, clean run), ms:",
          ", ".join(f"{k} {v:.2f}" for k, v in sorted(ofirst.items())))


if __name__ == "__main__":
    main()
