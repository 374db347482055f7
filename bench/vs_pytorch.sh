#!/usr/bin/env bash
# Step time of paradnn's LibTorch backend against the same models written in
# PyTorch eager Python (Debian's python3-torch, the same LibTorch), small and
# mid-sized models of every family, train and infer, and LLM decoders'
# prefill and decode steps (fp32 and bf16). The two take turns in rounds
# (`paradnn compare`: eager then paradnn, then paradnn then eager, ...; a
# quarter second per case and side in each), each round in fresh processes.
# Prints paradnn's time over eager's per case (below 1: paradnn faster) with
# its 90% interval from both sides' rounds and its verdict (faster, slower,
# equivalent within 5%, undecided: the undecided cases get more rounds), and
# per family and mode the geometric mean with its interval.
#   bench/vs_pytorch.sh [threads] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --bench >/dev/null
"$root/scripts/build.sh" >/dev/null
. "$root/bench/openblas_core.sh"
threads=${1:-$(nproc)}
rounds=${2:-5}
cases=()
for mode in train infer; do
  cases+=(
    "FC/layers:4/nodes:32/input:64/output:10/batch:8/torch/fp32/$mode"
    "FC/layers:4/nodes:32/input:2000/output:1000/batch:64/torch/fp32/$mode"
    "FC/layers:8/nodes:512/input:2000/output:200/batch:128/torch/fp32/$mode"
    "FC/layers:4/nodes:1024/input:2000/output:1000/batch:512/torch/fp32/$mode"
    "CNN/block:residual/blocks:1/filters:4/image:32/output:10/batch:2/torch/fp32/$mode"
    "CNN/block:bottleneck/blocks:1/filters:16/image:200/output:1000/batch:8/torch/fp32/$mode"
    "RNN/cell:lstm/layers:2/embed:16/vocab:32/length:5/batch:4/torch/fp32/$mode"
    "RNN/cell:gru/layers:1/embed:256/vocab:128/length:50/batch:64/torch/fp32/$mode")
done
llm=LLM/layers:8/d_model:1024/heads:16/kv_heads:4/ffn:2816/vocab:32000
for dtype in fp32 bf16; do
  cases+=(
    "$llm/context:512/batch:1/phase:prefill/torch/$dtype/infer"
    "$llm/context:2048/batch:1/phase:decode/torch/$dtype/infer"
    "$llm/context:2048/batch:16/phase:decode/torch/$dtype/infer")
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
args=()
for c in "${cases[@]}"; do args+=(--paradnn_case="$c"); done
"$root/build/paradnn" compare --rounds "$rounds" -o "$work" \
  --run-a "/usr/bin/python3 $root/bench/pytorch_eager.py --threads $threads --min_seconds 0.25 ${cases[*]}" \
  --run-b "$root/build/paradnn ${args[*]} --paradnn_threads=$threads --paradnn_progress=false --benchmark_min_time=0.25" \
  2>/dev/null
