#!/usr/bin/env bash
# Step time of the oneDNN backend relative to LibTorch on the same cases
# (the quickstart sweep: FC, CNN and RNN, train and infer), both backends of
# each model in one run of rounds (--paradnn_rounds, default 3: every case in
# a fresh process each round, the cases in a new random order each round,
# so the two backends' rounds take turns). Prints oneDNN's time over
# LibTorch's per case (below 1: oneDNN is faster) with its 90% interval and
# its verdict (faster, slower, equivalent within 5%, undecided), and per
# family and mode the geometric mean with its interval (paradnn compare).
# A case that fails on one backend (bf16 where a CPU has no kernels for it)
# is left out of the comparison, not the whole run.
#   bench/onednn_vs_torch.sh [config] [extra flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
config=${1:-$root/configs/quickstart.yaml}
shift || true
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$root/build/paradnn" --paradnn_config="$config" --paradnn_backends=torch,onednn \
  --paradnn_progress=false --benchmark_out="$out" --benchmark_out_format=json \
  "$@" >/dev/null ||
  echo "onednn_vs_torch: some cases failed (named above); comparing the rest" >&2
"$root/build/paradnn" compare "$out" --a /torch/ --b /onednn/
