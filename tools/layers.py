#!/usr/bin/env python3
"""Checks that dependencies point one way (docs/architecture.md, "Layers").

Folders are layers. A file may include a header of, and call a function defined in, its own
folder or a folder listed before its own in LAYERS; inside one folder the files' calls form
a tree (no two files call each other, directly or around a circle). Roles never reach into
each other, common/ reaches into no role, tools/ use common/ only.

Two sources, both read from the tree as built:
  - #include "..." lines of every .c and .h;
  - nm of every object: which unit defines a global symbol, which units use it.

usage: tools/layers.py [BUILD_DIR]      (default: build; objects in BUILD_DIR/obj)
Exit status 1 and one line per violation when the rule is broken.
"""
import os
import re
import subprocess
import sys

# Layer order per role: a folder may use the folders before it (and common/).
LAYERS = {
    "target": ["store", "jobs", "object", "cluster", "cache", "api"],
    "proxy": ["core", "data", "cluster", "jobs", "api"],
}
# Who may use whom at the top level.
TOP = {
    "common": {"common"},
    "proxy": {"common", "proxy"},
    "target": {"common", "target"},
    "server": {"common", "proxy", "target", "server"},
    "tools": {"common", "tools"},
}
# A role's facade header (its public entry point for server/), outside the layers.
FACADES = {"target/target.h", "proxy/proxy.h"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def place(path):
    """(top, layer) of a source path like target/cache/coldget.c."""
    parts = path.split("/")
    top = parts[0]
    layer = parts[1] if top in LAYERS and len(parts) > 2 else None
    return top, layer


def allowed(src, dst, errors, what):
    """Records an error when src (a file) may not use dst (a file)."""
    if src == dst:
        return
    stop, slay = place(src)
    dtop, dlay = place(dst)
    if dst in FACADES:
        if stop not in ("server",) and not (stop == dtop and slay == "api"):
            errors.append(f"{src}: {what} {dst}: only server/ and {dtop}/api/ use the facade")
        return
    if dtop not in TOP.get(stop, set()):
        errors.append(f"{src}: {what} {dst}: {stop}/ may not use {dtop}/")
        return
    if stop == dtop and stop in LAYERS:
        order = LAYERS[stop]
        if slay not in order or dlay not in order:
            errors.append(f"{src}: {what} {dst}: not in a layer folder of {stop}/ ({order})")
            return
        if order.index(dlay) > order.index(slay):
            errors.append(
                f"{src}: {what} {dst}: {stop}/{slay}/ may not use {stop}/{dlay}/, a later layer"
            )


def sources():
    out = []
    for top in TOP:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h")):
                    out.append(os.path.relpath(os.path.join(dirpath, f), ROOT))
    return sorted(out)


def check_includes(errors):
    for src in sources():
        with open(os.path.join(ROOT, src), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            if os.path.exists(os.path.join(ROOT, inc)):
                allowed(src, inc, errors, "includes")


def nm_table(objdir):
    """{unit: (defined set, undefined set)} for every object under objdir."""
    units = {}
    for dirpath, _, files in os.walk(objdir):
        for f in files:
            if not f.endswith(".o"):
                continue
            obj = os.path.join(dirpath, f)
            unit = os.path.relpath(obj, objdir)[:-2] + ".c"
            if place(unit)[0] not in TOP or not os.path.exists(os.path.join(ROOT, unit)):
                continue  # not ours, or the object of a source that was moved or deleted
            out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
            defined, undefined = set(), set()
            for line in out.splitlines():
                fields = line.split()
                if len(fields) == 2 and fields[0] == "U":
                    undefined.add(fields[1])
                elif len(fields) == 3 and fields[1] in "TDBRCGSV":
                    defined.add(fields[2])
            units[unit] = (defined, undefined)
    return units


def check_calls(objdir, errors):
    units = nm_table(objdir)
    owner = {}
    for unit, (defined, _) in units.items():
        for sym in defined:
            owner[sym] = unit
    edges = {}
    for unit, (_, undefined) in units.items():
        for sym in sorted(undefined):
            dst = owner.get(sym)
            if not dst or dst == unit:
                continue
            allowed(unit, dst, errors, f"calls {sym} of")
            if os.path.dirname(unit) == os.path.dirname(dst) and place(unit)[1]:
                edges.setdefault(unit, {}).setdefault(dst, sym)
    # inside a layer folder: no circles
    for cycle in find_cycles(edges):
        ring = " -> ".join(f"{a} ({edges[a][b]})" for a, b in zip(cycle, cycle[1:] + cycle[:1]))
        errors.append(f"circle of calls inside {os.path.dirname(cycle[0])}/: {ring}")


def find_cycles(edges):
    """One representative cycle per strongly connected component (Tarjan)."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(comp)

    for v in sorted(edges):
        if v not in index:
            visit(v)
    cycles = []
    for comp in comps:
        members = set(comp)
        start = sorted(comp)[0]
        path, seen, v = [start], {start}, start
        while True:  # walk inside the component until a node repeats
            v = sorted(w for w in edges[v] if w in members)[0]
            if v in seen:
                cycles.append(path[path.index(v):])
                break
            seen.add(v)
            path.append(v)
    return cycles


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    objdir = os.path.join(ROOT, build, "obj")
    errors = []
    check_includes(errors)
    if os.path.isdir(objdir):
        check_calls(objdir, errors)
    else:
        print(f"layers: no objects in {objdir} (run make first): calls not checked")
    for e in errors:
        print("layers:", e)
    if errors:
        print(f"layers: {len(errors)} violation(s) of the layering (docs/architecture.md)")
        return 1
    print("layers: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
