#!/usr/bin/env bash
# Layer bricks against the plain run, as a user would compare them, the two
# taking turns in rounds (paradnn compare: estimate then plain, then plain
# then estimate, ...), each round in fresh processes:
#   A. the estimate: --paradnn_bricks_check=N (bricks, then N models chosen
#      at random run plainly, which calibrate the others' estimates and
#      measure the method's error in each estimate's interval);
#   B. the reference: every model of the sweep run plainly, nothing else in
#      the process, at the same --paradnn_steps.
# Per model the estimate and the plain time are medians of their rounds.
# Prints per family and per family/backend/mode the estimates' mean error
# against the plain times with its 90% interval (1,000 resamplings of the
# models), the worst, how many plain times lie inside their estimate's
# interval, and the wall time of A against B.
#   bench/bricks.sh [config] [extra flags for both sides]
# config: bench/bricks_heldout.yaml by default (the grid the method was not
# tuned on); bench/bricks_grid.yaml is the development grid.
# BRICKS_STEPS (20) steps per case, BRICKS_CHECK (16) models checked,
# BRICKS_ROUNDS (3) rounds of each side, BRICKS_KEEP=DIR keeps the rounds
# there. (Not PARADNN_*: paradnn reads every PARADNN_<FLAG> of the
# environment as its flag, on both sides.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
if env | grep -q '^PARADNN_'; then
  echo "bench/bricks.sh: unset $(env | grep -o '^PARADNN_[A-Z_]*' | tr '\n' ' ')first:" \
       "paradnn would take them as flags of the plain run too" >&2
  exit 2
fi
config=${1:-$root/bench/bricks_heldout.yaml}
shift || true
steps=${BRICKS_STEPS:-20}
check=${BRICKS_CHECK:-16}
rounds=${BRICKS_ROUNDS:-3}
out=${BRICKS_KEEP:-$(mktemp -d)}
[[ -n ${BRICKS_KEEP:-} ]] || trap 'rm -rf "$out"' EXIT
mkdir -p "$out"
common="$root/build/paradnn --paradnn_config=$config --paradnn_progress=false --paradnn_steps=$steps $*"
# COMPARE_ROUND: the round, which paradnn compare sets for each command.
"$root/build/paradnn" compare --rounds "$rounds" -o "$out" \
  --run-a "$common --paradnn_bricks_check=$check --paradnn_bricks_out=$out/bricks.\$COMPARE_ROUND.json" \
  --run-b "$common" >/dev/null 2>"$out/compare.err"
grep "^compare: A took" "$out/compare.err"
grep -hE "^paradnn: (bricks|OpenBLAS|the torch)" "$out/a.round1.log" || true
PYTHONPATH="$root/bench" PYTHONDONTWRITEBYTECODE=1 python3 - "$out" "$rounds" <<'PY'
import json, math, os, random, statistics, sys
import gbench
out, rounds = sys.argv[1], int(sys.argv[2])
estimates, lows, highs = {}, {}, {}
for r in range(1, rounds + 1):
    path = os.path.join(out, f"bricks.{r}.json")
    if not os.path.exists(path):
        continue
    bricks = json.load(open(path))
    for m in bricks["models"]:
        if m.get("estimated_ms") is not None:
            estimates.setdefault(m["name"], []).append(m["estimated_ms"])
            lows.setdefault(m["name"], []).append(m["estimated_low_ms"])
            highs.setdefault(m["name"], []).append(m["estimated_high_ms"])
plain = {}
for b in json.load(open(os.path.join(out, "b.json")))["benchmarks"]:
    if b.get("error_occurred") or b.get("run_type") == "aggregate":
        continue
    plain.setdefault(gbench.case_name(b["run_name"]), []).append(b["step_ms"])
method = bricks.get("method_error")
print(f"layers {bricks['total_layers']}, unique {bricks['unique_layers']}; "
      f"{bricks['unique_bricks']} unique bricks; L3 "
      f"{bricks['l3_bytes'] / 2**20:g} MB ({bricks['l3_source']}); "
      f"{bricks['checked_models']} models checked; the method's error on "
      f"them (90th percentile, in each interval): "
      + (f"{method:.1%}" if method is not None else "unknown"))
groups = {}
for name, est in estimates.items():
    if name not in plain:
        continue
    e, p = statistics.median(est), statistics.median(plain[name])
    inside = statistics.median(lows[name]) <= p <= statistics.median(highs[name])
    fam = name.split("/")[0]
    ctx = "/".join(name.split("/")[-3:])
    for g in (fam, f"{fam}/{ctx}", "all"):
        groups.setdefault(g, []).append((e / p, inside, name))
rng = random.Random(1)
for g, rows in sorted(groups.items()):
    err = [abs(r[0] - 1) for r in rows]
    means = sorted(statistics.mean(rng.choices(err, k=len(err)))
                   for _ in range(1000))
    worst = max(rows, key=lambda r: abs(r[0] - 1))
    print(f"{g}: {len(rows)} models; mean error {statistics.mean(err):.1%} "
          f"(90% interval {means[50]:.1%}-{means[949]:.1%}), worst "
          f"{max(err):.1%} ({worst[2]}, {worst[0]:.3f}); plain inside the "
          f"estimate's interval {sum(r[1] for r in rows)}/{len(rows)}")
PY
