#!/usr/bin/env bash
# Step time of paradnn's LibTorch backend against the same models written in
# PyTorch eager Python (Debian's python3-torch, the same LibTorch), small and
# mid-sized models of every family, train and infer, measured alternately in
# one run (three rounds, the fastest of each kept). Prints paradnn's time
# over eager's per case (below 1: paradnn faster) and their geometric mean.
#   bench/vs_pytorch.sh [threads]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --bench >/dev/null
"$root/scripts/build.sh" >/dev/null
. "$root/bench/openblas_core.sh"
threads=${1:-$(nproc)}
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
work=$(mktemp -d)
args=()
for c in "${cases[@]}"; do args+=(--paradnn_case="$c"); done
for round in 1 2 3; do
  /usr/bin/python3 "$root/bench/pytorch_eager.py" --threads "$threads" \
    "${cases[@]}" >"$work/python$round.json"
  "$root/build/paradnn" "${args[@]}" --paradnn_threads="$threads" \
    --paradnn_progress=false --benchmark_min_time=1 \
    --benchmark_format=json >"$work/paradnn$round.json"
done
/usr/bin/python3 - "$work" <<'PY'
import json, sys, os
work = sys.argv[1]
py, pd = {}, {}
for r in (1, 2, 3):
    for k, v in json.load(open(os.path.join(work, f"python{r}.json"))).items():
        py[k] = min(py.get(k, v), v)
    for b in json.load(open(os.path.join(work, f"paradnn{r}.json")))["benchmarks"]:
        k, v = b["run_name"].removesuffix("/real_time"), b["real_time"] / 1e3
        pd[k] = min(pd.get(k, v), v)
import math
print(f"{'case':<92} {'python ms':>10} {'paradnn ms':>10} {'ratio':>6}")
for k in py:
    print(f"{k:<92} {py[k]*1e3:10.3f} {pd[k]*1e3:10.3f} {pd[k]/py[k]:6.3f}")
ratios = [pd[k] / py[k] for k in py]
print(f"paradnn over eager: geometric mean "
      f"{math.exp(sum(map(math.log, ratios)) / len(ratios)):.3f}, "
      f"worst {max(ratios):.3f}")
PY
rm -rf "$work"
