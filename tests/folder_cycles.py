#!/usr/bin/env python3
"""Fails when a folder of paradnn's sources includes, directly or through
other folders, a folder that includes it back: the layers of
docs/architecture.md form no cycle. A folder counts with its subfolders
(a backend's module is part of backends/). Usage: folder_cycles.py
SOURCE_DIR"""
import os
import re
import sys

root = sys.argv[1]
folders = ["adapters/mlperf", "analysis", "backends", "backends/onednn",
           "backends/torch", "bricks", "core", "distributed",
           "distributed/c10d", "generators", "glue", "importers",
           "include/paradnn", "machine",
           "modules", "records", "runner"]
include = re.compile(r'#include "([^"]+)"')
def layer(folder):
    return folder if folder.startswith("include/") else folder.split("/")[0]


layers = sorted({layer(f) for f in folders})
edges = {f: set() for f in layers}
for folder in folders:
    path = os.path.join(root, folder)
    for name in os.listdir(path):
        if not name.endswith((".h", ".cpp")):
            continue
        with open(os.path.join(path, name)) as f:
            for target in include.findall(f.read()):
                if target.startswith("paradnn/"):
                    target = "include/" + target
                used = os.path.dirname(target)
                if used in folders and layer(used) != layer(folder):
                    edges[layer(folder)].add(layer(used))


def cycle_from(start):
    """A path start -> ... -> start, or None."""
    stack = [(start, [start])]
    seen = set()
    while stack:
        node, path = stack.pop()
        for nxt in sorted(edges[node]):
            if nxt == start:
                return path + [start]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, path + [nxt]))
    return None


cycles = {tuple(c) for c in map(cycle_from, layers) if c}
for c in sorted(cycles):
    print("folder cycle: " + " -> ".join(c))
missing = [f for f in folders if not os.path.isdir(os.path.join(root, f))]
for f in missing:
    print("no folder " + f)
sys.exit(1 if cycles or missing else 0)
