#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""tools/archcheck.py BUILD — memlife's architecture, checked from what the compiler produced.

The tree is a stack of layers (LAYERS below, lowest first); a file may use files of its own layer
and of layers below it, never of a layer above, and no two files may use each other in a circle.

"Uses" is read two ways:
  - symbols: every object BUILD/<dir>/<file>.o of a source <dir>/<file>.c is read with `nm -P`;
    file A uses file B when A has an undefined symbol that B defines (the symbol is printed as the
    reason of the edge);
  - includes: every `#include "..."` of every .c and .h, resolved the way the Makefile's -I flags
    resolve it (the including file's folder, then runtime/, analyzer/, the root).

Output: the layers with their files, then one TAP line per check (`ok - ...` / `not ok - ...: why`)
with the offending edges indented below it. Exit status 0 when every check passes, 1 otherwise,
2 when it could not run (no objects, nm missing). A folder that is not in LAYERS is an error, so a
new folder gets a row here before it builds into memlife.
"""
import collections
import os
import re
import subprocess
import sys

# Lowest first. Folders on one row are one layer: they may use each other's files (a file cycle
# between them is still an error).
LAYERS = [
    ["runtime/base"],
    ["runtime/ir"],
    ["runtime/load"],
    ["runtime/exec"],
    ["runtime/backends", "runtime/backends/cuda"],
    ["runtime/bench"],
    ["analyzer/torch", "analyzer/lint", "analyzer/predict"],
    ["analyzer/snapshot"],
    # The one load -> expand -> lint -> predict pipeline: the report's series (plot, trace, diff
    # inputs) and optimize run it, so it sits below them.
    ["analyzer/pipeline"],
    ["analyzer/report"],
    ["analyzer/visual", "analyzer/optimize", "analyzer/equiv"],
    ["cli"],
]
SOURCE_ROOTS = ["runtime", "analyzer", "cli"]
INCLUDE_DIRS = ["runtime", "analyzer", "."]      # the Makefile's -I order
DEFINED = set("TDBRCWV")                          # nm types of a global definition


def layer_of():
    table = {}
    for k, row in enumerate(LAYERS):
        for folder in row:
            table[folder] = k
    return table


def sources(root):
    out = []
    for top in SOURCE_ROOTS:
        for d, _, files in os.walk(os.path.join(root, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(d, f), root))
    return sorted(out)


def symbol_edges(root, build, files):
    """{src: {dst: symbol}} from the objects of the .c files."""
    defs, uses = {}, collections.defaultdict(set)
    for src in files:
        if not src.endswith(".c"):
            continue
        obj = os.path.join(build, src[:-2] + ".o")
        if not os.path.exists(obj):
            raise SystemExit(f"archcheck: {obj} is missing (build first: make)")
        out = subprocess.run(["nm", "-P", obj], check=True, capture_output=True, text=True).stdout
        for line in out.splitlines():
            p = line.split()
            if len(p) < 2:
                continue
            name, kind = p[0], p[1]
            if kind == "U":
                uses[src].add(name)
            elif kind in DEFINED:
                defs[name] = src
    edges = collections.defaultdict(dict)
    for src, names in uses.items():
        for name in sorted(names):
            dst = defs.get(name)
            if dst and dst != src and dst not in edges[src]:
                edges[src][dst] = name
    return edges


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def include_edges(root, files):
    """{src: {header: "line N"}} for every quoted include that resolves inside the tree."""
    known = set(files)
    edges = collections.defaultdict(dict)
    for src in files:
        with open(os.path.join(root, src), encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                for base in [os.path.dirname(src)] + INCLUDE_DIRS:
                    cand = os.path.normpath(os.path.join(base, m.group(1)))
                    if cand in known:
                        if cand != src:
                            edges[src].setdefault(cand, f"#include at line {n}")
                        break
    return edges


def cycles(edges, nodes):
    """Strongly connected components of more than one file (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, {}))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, {})))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def main():
    if len(sys.argv) != 2:
        print("usage: tools/archcheck.py BUILD_DIR", file=sys.stderr)
        return 2
    root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    build = os.path.join(root, sys.argv[1]) if not os.path.isabs(sys.argv[1]) else sys.argv[1]
    layers = layer_of()
    files = sources(root)
    failed = False

    unknown = sorted({os.path.dirname(f) for f in files} - layers.keys())
    by_layer = collections.defaultdict(list)
    for f in files:
        if os.path.dirname(f) in layers:
            by_layer[layers[os.path.dirname(f)]].append(f)
    print("layers, lowest first:")
    for k, row in enumerate(LAYERS):
        present = [d for d in row if any(os.path.dirname(f) == d for f in files)]
        print(f"  {k:2d} {' '.join(row)}")
        for d in present:
            print(f"       {d}: " + " ".join(os.path.basename(f) for f in by_layer[k]
                                             if os.path.dirname(f) == d and f.endswith(".c")))
    if unknown:
        failed = True
        print("not ok - every folder has a layer: " + ", ".join(unknown) +
              " not in tools/archcheck.py's LAYERS (add a row)")
    else:
        print("ok - every folder has a layer")

    try:
        sym = symbol_edges(root, build, files)
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"archcheck: cannot read the objects: {e}", file=sys.stderr)
        return 2
    inc = include_edges(root, files)

    for what, edges in (("symbols", sym), ("includes", inc)):
        comps = cycles(edges, files)
        if comps:
            failed = True
            print(f"not ok - no file cycle ({what}): {len(comps)} cycle(s)")
            for comp in comps:
                print("  cycle: " + " ".join(comp))
                for a in comp:
                    for b, why in sorted(edges[a].items()):
                        if b in comp:
                            print(f"    {a} -> {b} ({why})")
        else:
            print(f"ok - no file cycle ({what})")
        up = []
        for a in sorted(edges):
            fa = layers.get(os.path.dirname(a))
            for b, why in sorted(edges[a].items()):
                fb = layers.get(os.path.dirname(b))
                if fa is not None and fb is not None and fb > fa:
                    up.append(f"    {a} (layer {fa}) -> {b} (layer {fb}) ({why})")
        if up:
            failed = True
            print(f"not ok - no use of a higher layer ({what}): {len(up)} edge(s)")
            print("\n".join(up))
        else:
            print(f"ok - no use of a higher layer ({what})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
