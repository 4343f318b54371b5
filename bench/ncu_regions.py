"""Stall samples of a wgmma-kernel launch by region, from ncu's source page
(`ncu -i REP --page source --csv --print-source sass > F.csv`): before the
first mbarrier wait (setup), the main loop (to the last wgmma / mma), the
epilogue (to the consumers' first named barrier after it), and the rest
(split sum, producer, exits). argv: F.csv [launch index, default the last].
Used for the per-region splits in bench/README.md's decision log."""
import csv
import sys


def launches(path):
    out, cur = [], None
    for row in csv.reader(open(path)):
        if row and row[0] == "Kernel Name":
            cur = [row]
            out.append(cur)
        elif cur is not None:
            cur.append(row)
    return out


def main():
    lau = launches(sys.argv[1])[int(sys.argv[2]) if len(sys.argv) > 2 else -1]
    hdr = lau[1]
    rows = [r for r in lau[2:] if len(r) == len(hdr) and r[0].startswith("0x")]
    si = hdr.index("Warp Stall Sampling (All Samples)")
    src = [r[1] for r in rows]
    samples = [int(r[si] or 0) for r in rows]
    first_wait = next(i for i, s in enumerate(src) if "TRYWAIT" in s)
    last_mma = max(i for i, s in enumerate(src) if "GMMA" in s or "HMMA" in s)
    bar = next((i for i, s in enumerate(src) if i > last_mma and "BAR.SYNC" in s and "0x1," in s), len(src))
    total = sum(samples)
    parts = {"setup": sum(samples[:first_wait]), "loop": sum(samples[first_wait:last_mma + 1]),
             "epilogue": sum(samples[last_mma + 1:bar]), "rest": sum(samples[bar:])}
    print(lau[0][1][:90])
    print(f"samples {total}: " + ", ".join(f"{k} {v / total * 100:.0f}%" for k, v in parts.items()))


if __name__ == "__main__":
    main()
