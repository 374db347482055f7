#!/usr/bin/env bash
# What paradnn's step adds over a training loop written by hand against
# LibTorch (bench/torch_loop_bench.cpp), on a tiny FC model where any
# per-step overhead shows: both in one binary, interleaved at random, 10
# repetitions each, medians; 1 and 2 threads.
#   bench/runner_overhead.sh
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" -DPARADNN_BUILD_BENCH=ON >/dev/null
. "$root/bench/openblas_core.sh"
model=FC/layers:4/nodes:32/input:64/output:10/batch:8
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf "%-8s %14s %14s %8s\n" threads "by hand ms" "paradnn ms" ratio
for threads in 1 2; do
  "$root/build/bench/torch_loop_bench" --paradnn_case="$model/torch/fp32/train" \
    --paradnn_threads="$threads" --paradnn_progress=false \
    --benchmark_filter="threads:$threads/|FC/" \
    --benchmark_enable_random_interleaving=true --benchmark_repetitions=10 \
    --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true \
    --benchmark_format=json >"$out" 2>/dev/null
  python3 - "$out" "$threads" <<'PY'
import json, sys
median = {b["run_name"].split("/")[0]: b["real_time"]
          for b in json.load(open(sys.argv[1]))["benchmarks"]
          if b.get("aggregate_name") == "median"}
hand, ours = median["BM_TorchLoop"], median["FC"]
print(f"{sys.argv[2]:<8} {hand:14.4f} {ours:14.4f} {ours / hand:8.3f}")
PY
done
