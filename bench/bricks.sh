#!/usr/bin/env bash
# Layer bricks against end-to-end runs on an FC, CNN and RNN sub-grid of the
# paper's (bench/bricks_grid.yaml), at 30 steps a case (PARADNN_BRICKS_STEPS),
# which a bricks run splits into calls in random interleaved order (each
# model's 30 of 1 step, each brick's 15 of a warm and a cold step) so that
# bricks and models see the same quiet and busy moments of the machine:
# benchmark time of the unique layers against the models (every case runs
# about the same number of timed steps, so benchmark time follows work), and
# constructed over measured step time per family, backend and mode, and the
# model furthest off in each family; next to each, how far the models'
# measured steps move between the halves of their calls (the even calls'
# quiet time against the odd ones'), and the estimates between the halves
# of their bricks' calls: each side's own noise, closer than which no
# estimate can be seen to agree.
#   bench/bricks.sh [backends] [extra flags, e.g. --paradnn_bricks_granularity=2]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
backend=${1:-torch,onednn}
shift || true
out=$(mktemp -d)
"$root/build/paradnn" --paradnn_config="$root/bench/bricks_grid.yaml" \
  --paradnn_backends="$backend" --paradnn_bricks_out="$out/bricks.json" \
  --paradnn_progress=false --paradnn_steps="${PARADNN_BRICKS_STEPS:-30}" \
  --benchmark_format=json "$@" >"$out/results.json"
python3 - "$out/bricks.json" <<'PY'
import json, math, sys
d = json.load(open(sys.argv[1]))
print(f"layers {d['total_layers']}, unique {d['unique_layers']} "
      f"({d['unique_layers'] / d['total_layers']:.0%}); granularity "
      f"{d['granularity']}: {d['unique_bricks']} unique bricks of "
      f"{d['total_bricks']}")
print(f"benchmark time: bricks {d['bricks_benchmark_s']:.1f} s, end to end "
      f"{d['end_to_end_benchmark_s']:.1f} s, ratio "
      f"{d['end_to_end_benchmark_s'] / d['bricks_benchmark_s']:.2f}x")
print(f"caches: L2 {d['l2_bytes'] / 2**20:g} MB, L3 "
      f"{d['l3_bytes'] / 2**20:g} MB ({d['l3_source']})")
f = [m["factor"] for m in d["moments"]]
if f:
    c = [m["contrast"] for m in d["moments"]]
    print(f"machine moments: {len(f)} of {d['moment_s']:g} s, steps took "
          f"{min(f):.2f}-{max(f):.2f}x the usual moment's time, and "
          f"{math.exp(min(c)):.2f}-{math.exp(max(c)):.2f}x more per unit "
          f"of sensitivity")
h = d.get("case_time_halves", {})
if d.get("case_time") and None not in h.values():
    print(f"each case's time: {d['case_time']} (the halves of cases' calls "
          "differ " + ", ".join(f"{v:.1%} with {k}" for k, v in h.items()) +
          ")")
groups = dict(d["estimate_over_measured"]["per_family"])
groups.update(d["estimate_over_measured"]["per_family_backend_dtype_mode"])
for fam, s in groups.items():
    print(f"{fam}: estimate/measured geomean {s['geomean']:.3f} "
          f"(min {s['min']:.3f}, max {s['max']:.3f}); error mean "
          f"{s['mean_abs_error']:.1%}, worst {s['max_abs_error']:.1%} "
          f"({s['models']} models); measured halves of calls differ "
          f"{s.get('measured_halves_mean_difference', float('nan')):.1%}, "
          f"worst {s.get('measured_halves_max_difference', float('nan')):.1%}"
          "; estimates from halves of the bricks' calls "
          f"{s.get('estimated_halves_mean_difference', float('nan')):.1%}, "
          f"worst {s.get('estimated_halves_max_difference', float('nan')):.1%}")
# The model furthest off in each family: where to look next.
worst = {}
for m in d["models"]:
    r = m.get("estimate_over_measured")
    fam = m["name"].split("/")[0]
    if r is not None and abs(r - 1) > abs(worst.get(fam, (None, 1))[1] - 1):
        worst[fam] = (m["name"], r)
for fam, (name, r) in worst.items():
    print(f"worst {fam}: {name} {r:.3f}")
PY
# PARADNN_BRICKS_OUT=FILE keeps the run's bricks JSON (every model's and
# brick's steps) for a closer look.
if [[ -n ${PARADNN_BRICKS_OUT:-} ]]; then cp "$out/bricks.json" "$PARADNN_BRICKS_OUT"; fi
rm -rf "$out"
