#!/usr/bin/env bash
# Layer by layer: how much of each profiled step do the layers account for,
# and how far below their roofs do they run? The default sweep (or CONFIG,
# narrowed by a Google Benchmark FILTER) with --paradnn_profile_out and this
# machine's calibrated roofs; per backend and mode: the cases, the share of
# the profiled step the layers cover (median and least) and the profiled
# step over the timed one (the profiler's overhead) and what the least
# covered case leaves outside its layers, the layers above their roof
# (roof_util > 1, the three largest named), and the layer kinds furthest
# below theirs (time-weighted roof_util, their share of the layers' time).
# With LAYERS_BRICKS=1, each profiled layer's brick too (the layer run on
# its own, by the brick name the profile gives it; a sweep of many models
# has many: narrow it with the filter): per layer kind, each layer's time
# in its model over its brick's step (median, 10th-90th percentile), what
# layer bricks assume to be 1.
#   [LAYERS_BRICKS=1] bench/layer_profile.sh [config] [filter] [flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --test >/dev/null
"$root/scripts/build.sh" >/dev/null
. "$root/bench/openblas_core.sh"
config=${1:-$root/configs/quickstart.yaml}
filter=${2:-.}
shift $(($# < 2 ? $# : 2))
work=$(mktemp -d)
trap '[ -n "${LAYERS_KEEP:-}" ] && cp "$work"/*.json "$LAYERS_KEEP"; rm -rf "$work"' EXIT
"$root/build/paradnn" calibrate -o "$work/platform.json" 2>/dev/null
"$root/build/paradnn" --paradnn_config="$config" \
  --benchmark_filter="$filter" --paradnn_platform="$work/platform.json" \
  --paradnn_profile_out="$work/profile.json" --paradnn_progress=false \
  "$@" >/dev/null
if [ -n "${LAYERS_BRICKS:-}" ]; then
  mapfile -t bricks < <(/usr/bin/python3 - "$work/profile.json" <<'PY'
import json, sys
cases = json.load(open(sys.argv[1]))["cases"]
for name in sorted({l["brick"] for c in cases if "layers" in c
                    for l in c["layers"]["list"] if l.get("brick")}):
    print("--paradnn_case=" + name)
PY
  )
  "$root/build/paradnn" "${bricks[@]}" --paradnn_progress=false \
    --benchmark_out="$work/bricks.json" --benchmark_out_format=json \
    "$@" >/dev/null
fi
PYTHONPATH="$root/bench" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$work/profile.json" "$work/bricks.json" <<'PY'
import collections, json, os, statistics, sys
import gbench
cases = json.load(open(sys.argv[1]))["cases"]
bricks = {}
if os.path.exists(sys.argv[2]):
    for name, b in gbench.per_case(sys.argv[2]):
        if b.get("step_ms", 0) > 0:
            bricks[name] = b["step_ms"]
groups = collections.defaultdict(list)
for c in cases:
    if "layers" in c:
        parts = c["name"].split("/")
        groups[(parts[-3], parts[-1])].append(c)
for (backend, mode), cs in sorted(groups.items()):
    cover = [c["layers"]["layers_ms"] / c["profiled_step_ms"] for c in cs]
    overhead = [c["profiled_step_ms"] / c["timed_step_ms"] for c in cs]
    layers = [(c["name"], l) for c in cs for l in c["layers"]["list"]]
    over = sorted(((l["roof_util"], name, l) for name, l in layers
                   if l.get("roof_util", 0) > 1), key=lambda t: -t[0])
    least = min(cs, key=lambda c: c["layers"]["layers_ms"] / c["profiled_step_ms"])
    print(f"== {backend} {mode}: {len(cs)} cases, {len(layers)} layers")
    print(f"  layers cover the profiled step: median {statistics.median(cover):.3f}, "
          f"least {min(cover):.3f}; profiled over timed step: median "
          f"{statistics.median(overhead):.3f}")
    rest = ", ".join(f"{u['name']} {u['ms']:.3f} ms"
                     for u in least["layers"]["unattributed"][:3])
    print(f"  least covered: {least['name']}: outside its layers {rest}")
    print(f"  layers above their roof: {len(over)}")
    for util, name, l in over[:3]:
        print(f"    {util:.2f} {l['op']} {l['shape']} ({l['bound']}, "
              f"{l['read_bytes'] / l['bytes']:.2f} reads) in {name}")
    kinds = collections.defaultdict(lambda: [0.0, 0.0])
    total = 0.0
    for _, l in layers:
        ms = l["forward_ms"] + l["backward_ms"] + l["update_ms"]
        total += ms
        kinds[l["op"]][0] += ms
        kinds[l["op"]][1] += ms * l.get("roof_util", 0)
    rows = sorted(kinds.items(), key=lambda kv: kv[1][1] / max(kv[1][0], 1e-12))
    for op, (ms, weighted) in rows[:6]:
        print(f"  {op:12s} roof_util {weighted / max(ms, 1e-12):.3f}, "
              f"{ms / total:.3f} of the layers' time")
    if bricks:
        beside = collections.defaultdict(list)
        for _, l in layers:
            if l.get("brick") in bricks:
                ms = l["forward_ms"] + l["backward_ms"] + l["update_ms"]
                beside[l["op"]].append(ms / bricks[l["brick"]])
        for op, v in sorted(beside.items()):
            v.sort()
            q = lambda f: v[min(len(v) - 1, int(f * len(v)))]
            print(f"  {op:12s} in its model over its brick: median "
                  f"{statistics.median(v):.3f} ({q(0.1):.3f}-{q(0.9):.3f}), "
                  f"{len(v)} layers")
PY
