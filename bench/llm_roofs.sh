#!/usr/bin/env bash
# How close do LLM steps come to this machine's roofs, on each backend, in
# fp32 and bf16? Decode at batch 1 (a weight-streaming step: its share of
# calibrate's memory bandwidth at its mix of reads and writes, nearly all
# reads, `bandwidth_util`) and prefill of 512 and
# 2048 tokens (a GEMM-bound step: its share of calibrate's GEMM peak,
# `flops_util`), on a decoder of 8 layers, d_model 1024 and grouped-query
# attention (156 M parameters: 623 MB of weights in fp32, 311 MB in bf16).
# Calibrates first, in the same run.
#   bench/llm_roofs.sh [steps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --bench >/dev/null
"$root/scripts/build.sh" >/dev/null
steps=${1:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$root/build/paradnn" calibrate -o "$work/platform.json" 2>/dev/null
llm=LLM/layers:8/d_model:1024/heads:16/kv_heads:4/ffn:2816/vocab:32000
args=()
for backend in torch onednn; do
  for dtype in fp32 bf16; do
    for shape in context:2048/batch:1/phase:decode \
      context:512/batch:1/phase:prefill context:2048/batch:1/phase:prefill; do
      args+=(--paradnn_case="$llm/$shape/$backend/$dtype/infer")
    done
  done
done
"$root/build/paradnn" "${args[@]}" --paradnn_steps="$steps" \
  --paradnn_platform="$work/platform.json" --paradnn_progress=false \
  --benchmark_format=json >"$work/llm.json"
PYTHONPATH="$root/bench" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$work" <<'PY'
import json, os, sys
import gbench
work = sys.argv[1]
p = json.load(open(os.path.join(work, "platform.json")))
print(f"STREAM triad {p['memory_bandwidth'] / 1e9:.1f} GB/s, reads "
      f"{p['memory_read_bandwidth'] / 1e9:.1f} GB/s, writes "
      f"{p['memory_write_bandwidth'] / 1e9:.1f} GB/s")
print(f"{'case':<58} {'step ms':>9} {'tokens/s':>9} {'GB/s':>6} "
      f"{'bw util':>7} {'GFLOP/s':>8} {'flops util':>10}")
for name, b in gbench.per_case(os.path.join(work, "llm.json")):
    short = "/".join(name.split("/")[7:])
    if "error_occurred" in b:
        print(f"{short:<58} {b.get('error_message', '')}")
        continue
    step_s = b["step_ms"] / 1e3
    util = b.get("flops_util", b.get("flops_over_peak", float("nan")))
    print(f"{short:<58} {b['step_ms']:9.2f} {b['tokens_per_second']:9.1f} "
          f"{b['bytes_per_step'] / step_s / 1e9:6.1f} "
          f"{b['bandwidth_util']:7.3f} {b['FLOPS'] / 1e9:8.1f} {util:10.3f}")
PY
