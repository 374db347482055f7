#!/usr/bin/env bash
# Are small steps measured as their steady step? The default sweep run with
# the default rounds, then its cases with a step under 2 ms again with 200
# timed steps a round (both with rounds, each round a fresh process): per
# case the default figure over the long one, and the unstable cases of the
# default run.
#   bench/small_steps.sh [config] [runner flags]
# SMALL_KEEP=DIR keeps both runs' JSON there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
config=${1:-$root/configs/quickstart.yaml}
shift || true
work=${SMALL_KEEP:-$(mktemp -d)}
[[ -n ${SMALL_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
mkdir -p "$work"
start=$(date +%s)
"$root/build/paradnn" --paradnn_config="$config" --paradnn_progress=false \
  --benchmark_out="$work/default.json" --benchmark_out_format=json "$@" \
  >/dev/null 2>"$work/default.err"
echo "default run: $(($(date +%s) - start)) s; $(grep 'cases in [0-9]* rounds' "$work/default.err" || true)"
small=$(python3 - "$work/default.json" <<'PY'
import json, sys
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("aggregate_name") == "median" and b["step_ms"] < 2:
        print(b["run_name"].split("/iterations:")[0].split("/repeats:")[0]
              .removesuffix("/manual_time"))
PY
)
args=()
for c in $small; do args+=("--paradnn_case=$c"); done
start=$(date +%s)
"$root/build/paradnn" "${args[@]}" --paradnn_steps=200 --paradnn_progress=false \
  --benchmark_out="$work/long.json" --benchmark_out_format=json "$@" \
  >/dev/null 2>"$work/long.err"
echo "200 steps a round: $(($(date +%s) - start)) s"
python3 - "$work/default.json" "$work/long.json" <<'PY'
import json, statistics, sys
def medians(path):
    out = {}
    for b in json.load(open(path))["benchmarks"]:
        if b.get("aggregate_name") == "median":
            name = (b["run_name"].split("/iterations:")[0].split("/repeats:")[0]
                    .removesuffix("/manual_time"))
            out[name] = (b["step_ms"], b.get("unstable", 0) > 0.5)
    return out
default, long = medians(sys.argv[1]), medians(sys.argv[2])
names = sorted(set(default) & set(long))
ratios = [default[n][0] / long[n][0] for n in names]
off = [abs(r - 1) for r in ratios]
print(f"{len(names)} cases under 2 ms: default over 200 steps a round, "
      f"median {statistics.median(ratios):.3f}, within 10%: "
      f"{sum(o <= 0.10 for o in off)}/{len(names)}, most off {max(off):.1%}")
for n, r in sorted(zip(names, ratios), key=lambda x: -abs(x[1] - 1))[:5]:
    print(f"  {r:.3f} {n} ({default[n][0]:.3f} ms against {long[n][0]:.3f} ms)")
unstable = sum(1 for v in default.values() if v[1])
print(f"default run: {unstable} of {len(default)} cases unstable")
PY
