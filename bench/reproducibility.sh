#!/usr/bin/env bash
# Do paradnn's figures survive a re-run? The same sweep run twice, minutes
# apart, each run with the default rounds (or the flags given): per case,
# how far the second run's step_ms (the median of its rounds) lies from the
# first's (median and 90th percentile of |second / first - 1|), how often
# it lies inside the first run's interval, and the interval's median width.
# Beside it the same for one process each (each run's first round alone),
# which is what a run without rounds would have given.
#   bench/reproducibility.sh [config] [seconds between runs] [flags]
# REPRO_KEEP=DIR keeps both runs' JSON there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
config=${1:-$root/bench/repro_slice.yaml}
gap=${2:-120}
shift 2 || shift $#
work=${REPRO_KEEP:-$(mktemp -d)}
[[ -n ${REPRO_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
for run in 1 2; do
  start=$(date +%s)
  "$root/build/paradnn" --paradnn_config="$config" --paradnn_progress=false \
    --benchmark_out="$work/$run.json" --benchmark_out_format=json "$@" \
    >/dev/null 2>"$work/$run.err"
  echo "run $run: $(($(date +%s) - start)) s; $(tail -1 "$work/$run.err")"
  [[ $run == 2 ]] || sleep "$gap"
done
python3 - "$work/1.json" "$work/2.json" <<'PY'
import json, statistics, sys
def read(path):
    cases = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("error_occurred"):
            continue
        name = b["run_name"].split("/iterations:")[0].split("/repeats:")[0]
        name = name.removesuffix("/real_time").removesuffix("/manual_time")
        c = cases.setdefault(name, {"rounds": []})
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                c["median"] = b["step_ms"]
        else:
            c["rounds"].append(b["step_ms"])
            c["low"], c["high"] = b.get("step_ms_low"), b.get("step_ms_high")
            c["unstable"] = b.get("unstable", 0) > 0.5
    for c in cases.values():
        c.setdefault("median", statistics.median(c["rounds"]))
    return cases
one, two = read(sys.argv[1]), read(sys.argv[2])
names = sorted(set(one) & set(two))
def pct(v, p):
    v = sorted(v)
    at = p / 100 * (len(v) - 1)
    lo = int(at)
    return v[lo] + (at - lo) * (v[min(lo + 1, len(v) - 1)] - v[lo])
def line(label, diffs):
    print(f"{label}: per case |second / first - 1| median {pct(diffs, 50):.1%}, "
          f"90th percentile {pct(diffs, 90):.1%}, mean {statistics.mean(diffs):.1%}")
rounds = len(one[names[0]]["rounds"])
print(f"{len(names)} cases, {rounds} rounds each")
line("medians of rounds", [abs(two[n]["median"] / one[n]["median"] - 1) for n in names])
line("one process each ", [abs(two[n]["rounds"][0] / one[n]["rounds"][0] - 1) for n in names])
shift = statistics.geometric_mean([two[n]["median"] / one[n]["median"] for n in names])
print(f"second over first, geometric mean over cases: {shift:.3f} (the machine "
      f"as a whole between the runs)")
if one[names[0]]["low"] is not None:
    inside = sum(one[n]["low"] <= two[n]["median"] <= one[n]["high"] for n in names)
    widths = [(one[n]["high"] - one[n]["low"]) / one[n]["median"] for n in names]
    print(f"second run's step_ms inside the first run's interval: {inside}/{len(names)} "
          f"({inside / len(names):.0%}); interval width, median {pct(widths, 50):.1%} "
          f"of the median (90th percentile {pct(widths, 90):.1%})")
    def group(n):
        parts = n.split("/")
        plain = [p for p in parts[1:] if ":" not in p]
        return parts[0] + " " + (plain[0] if plain else "")
    for g in sorted({group(n) for n in names}):
        cases = [n for n in names if group(n) == g]
        d = [abs(two[n]["median"] / one[n]["median"] - 1) for n in cases]
        ins = sum(one[n]["low"] <= two[n]["median"] <= one[n]["high"] for n in cases)
        w = [(one[n]["high"] - one[n]["low"]) / one[n]["median"] for n in cases]
        print(f"  {g}: {len(cases)} cases, median |diff| {pct(d, 50):.1%}, "
              f"90th percentile {pct(d, 90):.1%}, inside {ins}/{len(cases)}, "
              f"width median {pct(w, 50):.1%}")
    for run, cases in (("first", one), ("second", two)):
        flagged = sum(1 for n in names if cases[n].get("unstable"))
        print(f"{run} run: {flagged} of {len(names)} cases unstable")
PY
