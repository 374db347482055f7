#!/usr/bin/env bash
# What paradnn's step adds over a training loop written by hand against
# LibTorch (bench/torch_loop_bench.cpp), on a tiny FC model where any
# per-step overhead shows: both in one binary, interleaved at random, 20
# repetitions each; 1 and 2 threads. Prints each side's median and fastest
# repetition: this shared machine runs small steps at one of two speeds for
# seconds at a time, which can land more of one side's repetitions in the
# slow one and move the medians' ratio; the fastest repetitions are the
# time each side takes when nothing else does. (One round: paradnn's case
# runs in this process, beside the loop by hand.)
#   bench/runner_overhead.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" -DPARADNN_BUILD_BENCH=ON >/dev/null
. "$root/bench/openblas_core.sh"
model=FC/layers:4/nodes:32/input:64/output:10/batch:8
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf "%-8s %-8s %12s %12s %8s\n" threads "" "by hand ms" "paradnn ms" ratio
for threads in 1 2; do
  "$root/build/bench/torch_loop_bench" --paradnn_case="$model/torch/fp32/train" \
    --paradnn_threads="$threads" --paradnn_progress=false --paradnn_rounds=1 \
    --benchmark_filter="threads:$threads/|FC/" \
    --benchmark_enable_random_interleaving=true --benchmark_repetitions=20 \
    --benchmark_min_time=0.2 \
    --benchmark_format=json >"$out" 2>/dev/null
  python3 - "$out" "$threads" <<'PY'
import json, sys
import statistics
times = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b["run_type"] == "iteration":
        times.setdefault(b["run_name"].split("/")[0], []).append(b["real_time"])
for name, pick in (("median", statistics.median), ("fastest", min)):
    hand, ours = pick(times["BM_TorchLoop"]), pick(times["FC"])
    print(f"{sys.argv[2]:<8} {name:<8} {hand:12.4f} {ours:12.4f} {ours / hand:8.3f}")
PY
done
