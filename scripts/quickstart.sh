#!/usr/bin/env bash
# Installs what is missing, builds, measures this machine's peaks, runs the
# default sweep (configs/quickstart.yaml) on both backends and writes the
# report:
#   results/platform.json     peak FLOP/s (fp32, bf16) and memory bandwidth
#   results/quickstart.json   Google Benchmark JSON, with flops_util and the
#                             share of step time per operation class
#   results/quickstart.txt    the table
#   results/profile.json      every case's layers: time, kernels, roofs
#   results/report/index.html roofline, heat maps, regressions, where step
#                             time goes, layer by layer, oneDNN vs LibTorch
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
# The runner and the backend modules it loads: the tests and examples are
# scripts/test.sh's.
PARADNN_BUILD_TARGETS="paradnn_runner paradnn_backend_torch paradnn_backend_onednn" \
  "$root/scripts/build.sh"
results="$root/results"
mkdir -p "$results"
"$root/build/paradnn" calibrate -o "$results/platform.json"
"$root/build/paradnn" --paradnn_config="$root/configs/quickstart.yaml" \
  --paradnn_platform="$results/platform.json" \
  --paradnn_profile_out="$results/profile.json" \
  --benchmark_out="$results/quickstart.json" --benchmark_out_format=json \
  "$@" | tee "$results/quickstart.txt"
"$root/build/paradnn" report "$results/quickstart.json" --a /onednn/ --b /torch/ \
  --platform "$results/platform.json" --profile "$results/profile.json" \
  -o "$results/report"
echo "results: $results/quickstart.json, $results/quickstart.txt; report: $results/report/index.html"
