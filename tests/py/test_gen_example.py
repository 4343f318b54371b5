#!/usr/bin/env python3
"""examples/gen_example_model never replaces a model: into a folder that already holds one
of the files it writes, it exits non-zero naming that file, and the folder's files keep
their bytes (it used to write model.safetensors first and fail on config.json after)."""
import hashlib
import os
import subprocess
import sys
import tempfile

BUILD = os.environ.get("HC_BUILD", "build")
GEN = os.path.join(BUILD, "examples", "gen_example_model")
FILES = ("model.safetensors", "config.json", "generation_config.json", "tokenizer_config.json")


def digests(d):
    return {n: hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest()
            for n in sorted(os.listdir(d))}


def main():
    failed = []
    with tempfile.TemporaryDirectory() as t:
        for keep in FILES:
            d = os.path.join(t, keep.split(".")[0])
            os.mkdir(d)
            with open(os.path.join(d, keep), "wb") as f:
                f.write(b"user data\n")
            before = digests(d)
            r = subprocess.run([GEN, d, "--format", "humming", "--seed", "7"],
                               capture_output=True, text=True)
            ok = r.returncode != 0 and keep in r.stderr and digests(d) == before
            print(f"{keep:24s} present: " + ("refused, nothing written" if ok else
                                             f"FAILED rc={r.returncode} {r.stderr!r} {sorted(os.listdir(d))}"))
            if not ok:
                failed.append(keep)
        d = os.path.join(t, "fresh")
        r = subprocess.run([GEN, d, "--format", "float16"], capture_output=True, text=True)
        ok = r.returncode == 0 and all(os.path.isfile(os.path.join(d, n)) for n in FILES)
        print("fresh folder: " + ("written" if ok else f"FAILED rc={r.returncode} {r.stderr!r}"))
        if not ok:
            failed.append("fresh")
    print("gen_example_model: " + (f"FAILED {failed}" if failed else "all as expected"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
