#!/usr/bin/env bash
# FLOP/s of a large FC training case relative to a plain fp32 GEMM of its
# main shape (1024 x 4096 x 4096), both measured in one run of one binary.
#   bench/fc_vs_gemm.sh [extra Google Benchmark or paradnn flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" -DPARADNN_BUILD_BENCH=ON >/dev/null
case=${PARADNN_BENCH_CASE:-FC/layers:8/nodes:4096/input:2000/output:1000/batch:1024/torch/fp32/train}
out=$(mktemp)
"$root/build/bench/gemm_bench" --paradnn_case="$case" \
  --benchmark_filter='Sgemm/1024/|FC/' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json "$@" >"$out"
python3 - "$out" <<'PY'
import json, sys
runs = [b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b.get("aggregate_name") == "median"]
gemm = next(b for b in runs if b["name"].startswith("BM_Sgemm"))
fc = next(b for b in runs if b["name"].startswith("FC/"))
print(f"GEMM 1024x4096x4096: {gemm['FLOPS']/1e9:7.1f} GFLOP/s (median of 3)")
print(f"{fc['run_name']}: {fc['FLOPS']/1e9:7.1f} GFLOP/s (median of 3)")
print(f"FC / GEMM: {fc['FLOPS']/gemm['FLOPS']:.1%}")
PY
rm -f "$out"
