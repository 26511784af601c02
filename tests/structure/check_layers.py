#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
The layers of userspace/ hold (docs/architecture.md): fails when

  1. a file includes a header of a higher layer (source, #include "x.h");
  2. a file calls a function or uses a variable defined in a higher layer
     (objects of the build: nm's defined and undefined symbols);
  3. files form a cycle, of includes between headers or of calls between
     .c files (a strongly connected component of more than one file);
  4. a cmd_*.c is used by anything but main.c (its symbols, commands.h);
  5. an object of libsptrace_core (what unit tests link alone, and what
     the build without BPF has) needs a symbol defined outside it.

  check_layers.py SOURCE_ROOT BUILD_ROOT

Layers, top to bottom: cli > live > out > store > model > discovery >
common. A file's folder is its layer. A layer may use its own and every
lower layer; the same layer is allowed, cycles are not.
"""
import os
import re
import subprocess
import sys

LAYERS = ["common", "discovery", "model", "store", "out", "live", "cli"]
RANK = {name: i for i, name in enumerate(LAYERS)}

# Upward uses that work in flight is removing (none now), listed so that
# anything else fails; an entry that no longer happens is reported, to be
# deleted.
#   (file, the higher layer it may still use)
KNOWN_UPWARD = set()
#   call cycles, each the set of its files
KNOWN_CYCLES = []

INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources(root):
    us = os.path.join(root, "userspace")
    files = {}
    for layer in LAYERS:
        d = os.path.join(us, layer)
        if not os.path.isdir(d):
            continue
        for name in sorted(os.listdir(d)):
            if name.endswith((".c", ".h")):
                files[layer + "/" + name] = os.path.join(d, name)
    return files


def layer_of(rel):
    return rel.split("/", 1)[0]


def sccs(graph):
    """Tarjan: the strongly connected components of graph {node: set}."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            out.append(comp)

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def upward(rel, target, what, errors, used):
    """Reports rel using target of a higher layer, unless known."""
    if RANK[layer_of(target)] <= RANK[layer_of(rel)]:
        return
    key = (rel, layer_of(target))
    if key in KNOWN_UPWARD:
        used.add(key)
        return
    errors.append("%s %s: %s is above %s" % (rel, what, layer_of(target),
                                             layer_of(rel)))


def check_includes(files, errors, used):
    by_name = {}
    for rel in files:
        by_name.setdefault(os.path.basename(rel), []).append(rel)
    for name, rels in by_name.items():
        if len(rels) > 1 and name.endswith(".h"):
            errors.append("header name in two layers: %s" % ", ".join(rels))
    graph = {}
    for rel, path in files.items():
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for inc in INCLUDE_RE.findall(text):
            base = os.path.basename(inc)
            if base.endswith(".skel.h"):
                # BPF skeletons: the live layer's own.
                if layer_of(rel) != "live":
                    errors.append("%s includes the BPF skeleton %s: only "
                                  "live/ may" % (rel, inc))
                continue
            target = by_name.get(base)
            if not target:
                continue        # not a userspace header (probes, tests)
            target = target[0]
            upward(rel, target, "includes " + target, errors, used)
            if base == "commands.h" and not (
                    rel == "cli/main.c" or
                    os.path.basename(rel).startswith("cmd_")):
                errors.append("%s includes commands.h: only main.c calls "
                              "commands" % rel)
            if rel.endswith(".h"):
                graph.setdefault(rel, set()).add(target)
    for comp in sccs(graph):
        if len(comp) > 1:
            errors.append("include cycle: %s" % " -> ".join(sorted(comp)))


def nm(path, *args):
    out = subprocess.run(["nm", "-P", *args, path], check=True,
                         capture_output=True, text=True).stdout
    return [line.split()[:2] for line in out.splitlines() if line.strip()]


CORE_DIR = "libsptrace_core.a.p"


def objects(build):
    """{userspace rel path: object file} of every userspace object built."""
    objs = {}
    us = os.path.join(build, "userspace")
    for d in sorted(os.listdir(us)):
        if not d.endswith(".p"):
            continue
        for name in sorted(os.listdir(os.path.join(us, d))):
            m = re.match(r"(%s)_(.+\.c)\.o$" % "|".join(LAYERS), name)
            if m:
                objs[m.group(1) + "/" + m.group(2)] = os.path.join(us, d, name)
    return objs


def check_calls(objs, errors, notes, used):
    defined, undefined = {}, {}
    for rel, path in objs.items():
        for sym, kind in nm(path, "--defined-only", "-g"):
            defined.setdefault(sym, rel)
        undefined[rel] = [s for s, _ in nm(path, "-u")]
    graph = {}
    for rel, syms in undefined.items():
        for sym in syms:
            target = defined.get(sym)
            if not target or target == rel:
                continue
            graph.setdefault(rel, set()).add(target)
            upward(rel, target, "uses %s of %s" % (sym, target), errors,
                   used)
            if (os.path.basename(os.path.dirname(objs[rel])) == CORE_DIR and
                    os.path.basename(os.path.dirname(objs[target])) !=
                    CORE_DIR):
                errors.append("%s (in sptrace_core) uses %s of %s, which "
                              "is not in sptrace_core" % (rel, sym, target))
            if (os.path.basename(target).startswith("cmd_") and
                    rel != "cli/main.c"):
                errors.append("%s uses %s of %s: nothing but main.c calls "
                              "a command" % (rel, sym, target))
    seen = []
    for comp in sccs(graph):
        if len(comp) < 2:
            continue
        if comp in KNOWN_CYCLES:
            seen.append(comp)
            continue
        errors.append("call cycle: %s" % ", ".join(sorted(comp)))
    for comp in KNOWN_CYCLES:
        if comp not in seen:
            notes.append("the known cycle %s is gone: delete it from "
                         "KNOWN_CYCLES" % ", ".join(sorted(comp)))


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    files = sources(src)
    objs = objects(build)
    errors, notes = [], []
    if len(files) < 50 or len(objs) < 30:
        errors.append("found %d sources and %d objects: not the tree this "
                      "test knows" % (len(files), len(objs)))
    used = set()
    check_includes(files, errors, used)
    check_calls(objs, errors, notes, used)
    for key in sorted(KNOWN_UPWARD - used):
        notes.append("%s no longer uses %s: delete it from KNOWN_UPWARD" %
                     key)
    for n in notes:
        print("note: " + n)
    for e in errors:
        print("FAIL: " + e)
    if errors:
        return 1
    print("ok: %d files, %d objects: no upward include or call, no cycle, "
          "no command used as a library, sptrace_core self-contained" %
          (len(files), len(objs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
