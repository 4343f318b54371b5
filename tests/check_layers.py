#!/usr/bin/env python3
"""check_layers.py - fails when the library's dependency graph breaks the
layer rule written in lib/README.md.

Nodes are source files. Edges come from quoted #include lines and, when the
objects are built, from the symbols one object uses and another defines (nm).
The check fails on:
  - an include cycle;
  - an edge (include or call) from a layer to a layer listed after it in
    lib/README.md's layers block: lower layers never reach up. Files of one
    layer may call each other.
Usage: check_layers.py [REPO_ROOT] [BUILD_DIR]
       check_layers.py --self-test   (a tree with one up-edge and one include
                                      cycle must give exactly those two)
"""
import os, re, subprocess, sys, collections

def layers_from_readme(root):
    text = open(os.path.join(root, "lib", "README.md")).read()
    m = re.search(r"<!-- layers -->\s*```\s*\n(.*?)```", text, re.S)
    if not m:
        sys.exit("lib/README.md: no ```layers``` block after <!-- layers -->")
    order = []
    for line in m.group(1).splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            order.append(line)  # a folder relative to the root, lowest first
    return order

def module_of(path):
    return path

def sources(root, folders):
    out = {}
    for i, folder in enumerate(folders):
        base = os.path.join(root, folder)
        for dirpath, _, files in os.walk(base):
            for f in files:
                if f.endswith((".c", ".h", ".cu", ".cuh")):
                    rel = os.path.relpath(os.path.join(dirpath, f), root)
                    out[rel] = i
    return out

def include_edges(root, files):
    by_name = collections.defaultdict(list)
    for rel in files:
        by_name[os.path.basename(rel)].append(rel)
    edges = set()
    for rel in files:
        for line in open(os.path.join(root, rel), errors="replace"):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(rel), m.group(1)))
            if target not in files:
                cands = by_name.get(os.path.basename(m.group(1)), [])
                if len(cands) != 1:
                    continue  # a header outside the checked tree
                target = cands[0]
            if module_of(target) != module_of(rel):
                edges.add((module_of(rel), module_of(target), "include"))
    return edges

def symbol_edges(root, build, files):
    defs, uses = {}, {}
    for rel in files:
        if not rel.endswith(".c"):
            continue
        obj = os.path.join(build, "obj", os.path.splitext(rel)[0] + ".o")
        if not os.path.exists(obj):
            sys.exit(f"check_layers: {obj} missing: build first (make)")
        out = subprocess.run(["nm", obj], capture_output=True, text=True).stdout
        u = uses.setdefault(module_of(rel), set())
        for line in out.splitlines():
            p = line.split()
            if len(p) == 3 and p[1] in "TDBR":
                defs[p[2]] = module_of(rel)
            elif len(p) == 2 and p[0] == "U":
                u.add(p[1])
    return {(m, defs[s], "call") for m, syms in uses.items() for s in syms
            if s in defs and defs[s] != m}

def cycles(nodes, edges):
    g = collections.defaultdict(set)
    for a, b, _ in edges:
        g[a].add(b)
    index, low, stack, on, comps, n = {}, {}, [], set(), [], [0]
    def visit(v):  # Tarjan, iterative enough for a few hundred modules
        index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        for w in g[v]:
            if w not in index:
                visit(w); low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop(); on.discard(w); comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(sorted(comp))
    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return comps

def self_test():
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        for sub in ("lib/low", "lib/high"):
            os.makedirs(os.path.join(d, sub))
        open(os.path.join(d, "lib/README.md"), "w").write(
            "<!-- layers -->\n```\nlib/low\nlib/high\n```\n")
        files = {"lib/low/a.h": '#include "b.h"\n', "lib/low/b.h": '#include "a.h"\n',
                 "lib/low/c.c": '#include "d.h"\n', "lib/high/d.h": "", "lib/high/e.c": '#include "a.h"\n'}
        for name, text in files.items():
            open(os.path.join(d, name), "w").write(text)
        order = layers_from_readme(d)
        found = sources(d, order)
        layer = {module_of(f): i for f, i in found.items()}
        edges = include_edges(d, found)
        cyc = cycles(set(layer), edges)
        up = [(a, b) for a, b, _ in edges if layer[b] > layer[a]]
        ok = cyc == [["lib/low/a.h", "lib/low/b.h"]] and up == [("lib/low/c.c", "lib/high/d.h")]
        print(f"check_layers self-test: cycles {cyc}, up-edges {up}: {'ok' if ok else 'FAILED'}")
        return 0 if ok else 1

def main():
    if sys.argv[1:2] == ["--self-test"]:
        return self_test()
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    build = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "build"))
    order = layers_from_readme(root)
    files = sources(root, order)
    layer = {module_of(f): i for f, i in files.items()}
    edges = include_edges(root, files) | symbol_edges(root, build, files)
    bad = 0
    for comp in cycles(set(layer), {e for e in edges if e[2] == "include"}):
        print("include cycle: " + " <-> ".join(comp)); bad += 1
    for a, b, kind in sorted(edges):
        if layer[b] > layer[a]:
            print(f"up-edge ({kind}): {a} [{order[layer[a]]}] -> {b} [{order[layer[b]]}]")
            bad += 1
    print(f"check_layers: {len(layer)} files, {len(edges)} edges, {len(order)} layers, "
          f"{bad} violation(s)")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())
