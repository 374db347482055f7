#!/usr/bin/env bash
# As fast as an inference engine? torchvision's CNNs, exported for
# inference by PyTorch's own exporter (batch norm folded, the batch
# dynamic; bench/torchvision_onnx.sh), in fp32 at batch 1 and 8: ONNX
# Runtime's step (its CPU provider with its default graph optimizations,
# npm's onnxruntime-node, driven by bench/onnxruntime.js) against paradnn's
# oneDNN and LibTorch backends on the same files, the same threads, one
# process a side a round taking turns (paradnn compare --run-a/--run-b):
# per case paradnn's time over ONNX Runtime's with its interval, and their
# geometric mean per backend. LibTorch's against PyTorch eager running the
# same torchvision models as PyTorch's guidance has it
# (bench/pytorch_eager.py: batch norms folded, channels-last). Then fusion
# itself: each backend's inference over every layer on its own
# (--paradnn_fuse=false) on the same files, and oneDNN's on the synthetic
# families (bench/fusion_slice.yaml).
#   [ORT_VERSION=1.30.0] [ONNX_MODELS="NAME ..."] \
#     bench/vs_onnxruntime.sh [rounds] [threads] [batches]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --test >/dev/null
"$root/scripts/build.sh" >/dev/null
. "$root/bench/openblas_core.sh"
rounds=${1:-5}
threads=${2:-$(nproc)}
batches=${3:-1 8}
read -r -a models <<<"${ONNX_MODELS:-resnet50 mobilenet_v2 efficientnet_b0 \
densenet121 regnet_y_400mf resnet18 mnasnet1_0 resnext50_32x4d}"

# ONNX Runtime's own CPU build, as npm ships it; --ignore-scripts: its
# install script downloads more (GPU providers) from outside the registry.
if ! command -v npm >/dev/null; then
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
  $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi
version=${ORT_VERSION:-1.30.0}
ort="$root/build/bench/onnxruntime-node-$version"
if [[ ! -d $ort/node_modules/onnxruntime-node ]]; then
  mkdir -p "$ort"
  (cd "$ort" && npm install --silent --ignore-scripts --no-save \
    "onnxruntime-node@$version" >/dev/null)
fi
export ORT_NODE="$ort/node_modules/onnxruntime-node"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
TORCHVISION_ONNX_MODE=infer "$root/bench/torchvision_onnx.sh" "$work" \
  "${batches// /, }" "${models[@]}"
echo "== CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)," \
  "$threads threads; ONNX Runtime $version (npm onnxruntime-node)"

families=()
for m in "${models[@]}"; do families+=(--paradnn_families="$work/$m.onnx"); done
# One backend against ONNX Runtime: cases named as paradnn names them, which
# onnxruntime.js times under the same names.
against_ort() {
  local backend=$1 cases=() args=()
  for m in "${models[@]}"; do
    for b in $batches; do cases+=("$m.onnx/batch:$b/$backend/fp32/infer"); done
  done
  for c in "${cases[@]}"; do args+=(--paradnn_case="$c"); done
  echo "== $backend over ONNX Runtime, fp32 inference (below 1: paradnn faster)"
  "$root/build/paradnn" compare --rounds "$rounds" --max-rounds $((2 * rounds)) \
    -o "$work/ort_$backend" \
    --run-a "node $root/bench/onnxruntime.js --dir $work --threads $threads --min_seconds 0.5 ${cases[*]}" \
    --run-b "$root/build/paradnn ${families[*]} ${args[*]} --paradnn_threads=$threads --paradnn_progress=false --benchmark_min_time=0.5" \
    2>/dev/null
}
against_ort onednn
against_ort torch

echo "== LibTorch over PyTorch eager, fp32 inference (below 1: paradnn faster)"
names=()
for m in "${models[@]}"; do
  for b in $batches; do names+=("$m.onnx/batch:$b/torch/fp32/infer"); done
done
args=()
for c in "${names[@]}"; do args+=(--paradnn_case="$c"); done
"$root/build/paradnn" compare --rounds "$rounds" --max-rounds $((2 * rounds)) \
  -o "$work/eager" \
  --run-a "/usr/bin/python3 $root/bench/pytorch_eager.py --threads $threads --min_seconds 0.5 ${names[*]}" \
  --run-b "$root/build/paradnn ${families[*]} ${args[*]} --paradnn_threads=$threads --paradnn_progress=false --benchmark_min_time=0.5" \
  2>/dev/null

# Fusion itself, on the same files and on every synthetic family's
# inference: the same command with and without it, taking turns.
for backend in onednn torch; do
  echo "== $backend fused over unfused, fp32 inference (below 1: fusion faster)"
  cases=()
  for m in "${models[@]}"; do
    for b in $batches; do cases+=(--paradnn_case="$m.onnx/batch:$b/$backend/fp32/infer"); done
  done
  run="$root/build/paradnn ${families[*]} ${cases[*]} --paradnn_threads=$threads --paradnn_progress=false --benchmark_min_time=0.5"
  "$root/build/paradnn" compare --rounds "$rounds" --max-rounds $((2 * rounds)) \
    -o "$work/fuse_$backend" --run-a "$run --paradnn_fuse=false" \
    --run-b "$run --paradnn_fuse=true" 2>/dev/null
done
run="$root/build/paradnn --paradnn_config=$root/bench/fusion_slice.yaml --paradnn_threads=$threads --paradnn_progress=false --benchmark_min_time=0.2"
"$root/build/paradnn" compare --rounds "$rounds" --max-rounds $((2 * rounds)) \
  -o "$work/fuse_synthetic" --run-a "$run --paradnn_fuse=false" \
  --run-b "$run --paradnn_fuse=true" 2>/dev/null
