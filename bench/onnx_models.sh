#!/usr/bin/env bash
# Real models from ONNX files: torchvision's ResNet-50, MobileNetV2,
# MobileNetV3-Small, EfficientNet-B0, DenseNet-121, AlexNet and ViT-B/16
# (untrained),
# exported by PyTorch's own exporter (bench/torchvision_onnx.sh), run as
# paradnn cases at `batch` examples, train and infer:
#  1. LibTorch against the same torchvision models in PyTorch eager, fp32,
#     in rounds that take turns (paradnn compare --run-a/--run-b, fresh
#     processes each round): paradnn's time over eager's per case with its
#     interval, and the geometric mean per model and mode (target <= 0.95);
#  2. oneDNN over LibTorch in fp32 (target <= 0.8 per model) and bf16 over
#     fp32 on oneDNN (target < 1), from one run of rounds of both backends
#     and both types (--paradnn_rounds: every case in a fresh process each
#     round, the cases in a new random order each round).
#   [ONNX_MODELS="NAME ..."] bench/onnx_models.sh [batch] [rounds] [threads]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --test >/dev/null
"$root/scripts/build.sh" >/dev/null
. "$root/bench/openblas_core.sh"
batch=${1:-8}
rounds=${2:-3}
threads=${3:-$(nproc)}
# ONNX_MODELS="vit_b_16 ..." runs those of torchvision's models instead.
read -r -a models <<<"${ONNX_MODELS:-resnet50 mobilenet_v2 mobilenet_v3_small \
efficientnet_b0 densenet121 alexnet vit_b_16}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/bench/torchvision_onnx.sh" "$work" "$batch" "${models[@]}"

echo "== LibTorch over PyTorch eager, fp32 (below 1: paradnn faster)"
cases=()
families=()
for m in "${models[@]}"; do
  families+=(--paradnn_families="$work/$m.onnx")
  for mode in train infer; do cases+=("$m.onnx/batch:$batch/torch/fp32/$mode"); done
done
args=()
for c in "${cases[@]}"; do args+=(--paradnn_case="$c"); done
"$root/build/paradnn" compare --rounds "$rounds" -o "$work/eager" \
  --run-a "/usr/bin/python3 $root/bench/pytorch_eager.py --threads $threads --min_seconds 0.25 ${cases[*]}" \
  --run-b "$root/build/paradnn ${families[*]} ${args[*]} --paradnn_threads=$threads --paradnn_progress=false --benchmark_min_time=0.25" \
  2>/dev/null

# A case that fails is named in the run's summary; the others compare.
"$root/build/paradnn" --paradnn_config="$work/models.yaml" \
  --paradnn_dtypes=fp32,bf16 --paradnn_rounds="$rounds" \
  --paradnn_threads="$threads" --paradnn_progress=false \
  --benchmark_out="$work/both.json" --benchmark_out_format=json \
  >/dev/null 2>"$work/both.err" || grep -E "ERROR|failed" "$work/both.err"
echo "== oneDNN over LibTorch, fp32 (below 1: oneDNN faster)"
"$root/build/paradnn" compare "$work/both.json" --a /torch/fp32/ --b /onednn/fp32/
echo "== bf16 over fp32 on oneDNN (below 1: bf16 faster)"
"$root/build/paradnn" compare "$work/both.json" --a /onednn/fp32/ --b /onednn/bf16/
