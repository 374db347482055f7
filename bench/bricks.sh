#!/usr/bin/env bash
# Layer bricks against the plain run, as a user would compare them:
#   1. the estimate: --paradnn_bricks_check=N (bricks, then N models chosen
#      at random run plainly, which calibrate the others' estimates);
#   2. the reference: every model of the sweep run plainly, nothing else in
#      the process, at the same --paradnn_steps;
# then per family and per family/backend/mode the estimates' mean and worst
# error against the plain times (calibrated, each estimate on models other
# than itself, and uncalibrated), how many plain times lie within twice
# their estimate's interval, the worst model, and the wall time of run 1
# against run 2.
#   bench/bricks.sh [config] [extra flags for both runs]
# config: bench/bricks_heldout.yaml by default (the grid the method was not
# tuned on); bench/bricks_grid.yaml is the development grid.
# BRICKS_STEPS (20) steps per case, BRICKS_CHECK (16) models checked,
# BRICKS_KEEP=DIR keeps both runs' JSON there. (Not PARADNN_*: paradnn reads
# every PARADNN_<FLAG> of the environment as its flag, in both runs.)
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
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
common=(--paradnn_config="$config" --paradnn_progress=false
        --paradnn_steps="$steps" "$@")
t0=$(date +%s.%N)
"$root/build/paradnn" "${common[@]}" --paradnn_bricks_check="$check" \
  --paradnn_bricks_out="$out/bricks.json" --benchmark_format=json \
  >"$out/estimate.json" 2>"$out/estimate.err"
t1=$(date +%s.%N)
"$root/build/paradnn" "${common[@]}" --benchmark_format=json \
  >"$out/plain.json" 2>"$out/plain.err"
t2=$(date +%s.%N)
grep -E "^paradnn: (bricks|OpenBLAS|the torch)" "$out/estimate.err" || true
python3 - "$out/bricks.json" "$out/plain.json" "$t0" "$t1" "$t2" <<'PY'
import json, math, sys
bricks = json.load(open(sys.argv[1]))
plain = {}
for b in json.load(open(sys.argv[2]))["benchmarks"]:
    if b.get("error_occurred") or b.get("skipped"):
        continue
    plain[b["name"].split("/iterations:")[0].removesuffix("/real_time")] = (
        b["real_time"])  # ms per step (Unit: ms)
t0, t1, t2 = map(float, sys.argv[3:6])
print(f"layers {bricks['total_layers']}, unique {bricks['unique_layers']}; "
      f"{bricks['unique_bricks']} unique bricks; L2 "
      f"{bricks['l2_bytes'] / 2**20:g} MB, L3 {bricks['l3_bytes'] / 2**20:g} "
      f"MB ({bricks['l3_source']}); {bricks['checked_models']} models checked")
print(f"wall time: estimate {t1 - t0:.1f} s (bricks "
      f"{bricks['bricks_benchmark_s']:.1f} s, checked models "
      f"{bricks['checked_benchmark_s']:.1f} s), plain {t2 - t1:.1f} s: "
      f"{(t2 - t1) / (t1 - t0):.2f}x less")
groups = {}
for m in bricks["models"]:
    p = plain.get(m["name"])
    if p is None or m.get("estimated_ms") is None:
        continue
    fam = m["name"].split("/")[0]
    ctx = "/".join(m["name"].split("/")[-3:])
    entry = (m["estimated_ms"] / p, m["uncalibrated_ms"] / p, m["name"],
             m["estimated_spread"])
    for g in (fam, f"{fam}/{ctx}", "all"):
        groups.setdefault(g, []).append(entry)
for g, rows in sorted(groups.items()):
    err = [abs(r[0] - 1) for r in rows]
    raw = [abs(r[1] - 1) for r in rows]
    inside = sum(abs(math.log(r[0])) <= 2 * r[3] for r in rows)
    worst = max(rows, key=lambda r: abs(r[0] - 1))
    print(f"{g}: {len(rows)} models; error mean {sum(err) / len(err):.1%}, "
          f"worst {max(err):.1%}; uncalibrated mean {sum(raw) / len(raw):.1%},"
          f" worst {max(raw):.1%}; within 2x their interval "
          f"{inside}/{len(rows)}; worst {worst[2]} {worst[0]:.3f}")
PY
if [[ -n ${BRICKS_KEEP:-} ]]; then
  mkdir -p "$BRICKS_KEEP"
  cp "$out/bricks.json" "$out/plain.json" "$out/estimate.json" "$BRICKS_KEEP/"
fi
