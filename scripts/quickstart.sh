#!/usr/bin/env bash
# Installs what is missing, builds, and runs the default sweep
# (configs/quickstart.yaml), leaving results/quickstart.json (Google
# Benchmark JSON) and results/quickstart.txt (the table).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh"
"$root/scripts/build.sh"
mkdir -p "$root/results"
"$root/build/paradnn" --paradnn_config="$root/configs/quickstart.yaml" \
  --benchmark_out="$root/results/quickstart.json" --benchmark_out_format=json \
  "$@" | tee "$root/results/quickstart.txt"
echo "results: $root/results/quickstart.json, $root/results/quickstart.txt"
