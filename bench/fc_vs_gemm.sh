#!/usr/bin/env bash
# FLOP/s of a large FC training case on each backend relative to a plain
# fp32 GEMM of its main shape (1024 x 4096 x 4096) through the library under
# that backend (OpenBLAS for LibTorch, oneDNN's sgemm for oneDNN), all
# measured in one run of one binary, median of 3 repetitions.
#   bench/fc_vs_gemm.sh [extra Google Benchmark or paradnn flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" -DPARADNN_BUILD_BENCH=ON >/dev/null
. "$root/bench/openblas_core.sh"
model=${PARADNN_BENCH_MODEL:-FC/layers:8/nodes:4096/input:2000/output:1000/batch:1024}
out=$(mktemp)
"$root/build/bench/gemm_bench" --paradnn_case="$model/torch/fp32/train" \
  --paradnn_case="$model/onednn/fp32/train" \
  --benchmark_filter='Sgemm/1024/|FC/' --benchmark_repetitions=3 \
  --benchmark_report_aggregates_only=true --benchmark_format=json "$@" >"$out"
python3 - "$out" <<'PY'
import json, sys
runs = {b["run_name"]: b for b in json.load(open(sys.argv[1]))["benchmarks"]
        if b.get("aggregate_name") == "median"}
def find(prefix):
    return next(b for n, b in runs.items() if n.startswith(prefix))
for backend, gemm in (("torch", "BM_Sgemm/"), ("onednn", "BM_DnnlSgemm/")):
    g = find(gemm)
    fc = next(b for n, b in runs.items() if n.startswith("FC/") and f"/{backend}/" in n)
    print(f"{g['run_name']:<40} {g['FLOPS']/1e9:7.1f} GFLOP/s")
    print(f"{fc['run_name']:<40} {fc['FLOPS']/1e9:7.1f} GFLOP/s  "
          f"= {fc['FLOPS']/g['FLOPS']:.1%} of the GEMM")
PY
rm -f "$out"
