#!/usr/bin/env bash
# Step time of paradnn's LibTorch backend against the same models written in
# PyTorch eager Python (Debian's python3-torch, the same LibTorch), small and
# mid-sized models of every family, train and infer, and LLM decoders'
# prefill and decode steps (fp32 and bf16). The two take turns in
# short rounds (a quarter second per case and side), so that both meet the
# same moments of a shared machine; each side's fastest round per case is
# kept. Prints paradnn's time over eager's per case (below 1: paradnn
# faster), beside the ratio of the two sides' rounds taken in turn (median,
# least and most), which shows how far the machine moves one case's
# ratio, and the geometric means and worst cases of both.
#   bench/vs_pytorch.sh [threads] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --bench >/dev/null
"$root/scripts/build.sh" >/dev/null
. "$root/bench/openblas_core.sh"
threads=${1:-$(nproc)}
rounds=${2:-9}
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
args=()
for c in "${cases[@]}"; do args+=(--paradnn_case="$c"); done
time_eager() {
  /usr/bin/python3 "$root/bench/pytorch_eager.py" --threads "$threads" \
    --min_seconds 0.25 "${cases[@]}" >"$work/python$1.json"
}
time_paradnn() {
  "$root/build/paradnn" "${args[@]}" --paradnn_threads="$threads" \
    --paradnn_progress=false --benchmark_min_time=0.25 \
    --benchmark_format=json >"$work/paradnn$1.json"
}
# Each side goes first in every other round: neither always meets what the
# other leaves behind.
for round in $(seq "$rounds"); do
  if ((round % 2)); then
    time_eager "$round"
    time_paradnn "$round"
  else
    time_paradnn "$round"
    time_eager "$round"
  fi
done
/usr/bin/python3 - "$work" "$rounds" <<'PY'
import json, math, os, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
py, pd = {}, {}
for r in range(1, rounds + 1):
    for k, v in json.load(open(os.path.join(work, f"python{r}.json"))).items():
        py.setdefault(k, []).append(v)
    for b in json.load(open(os.path.join(work, f"paradnn{r}.json")))["benchmarks"]:
        k = b["run_name"].removesuffix("/real_time")
        pd.setdefault(k, []).append(b["real_time"] / 1e3)
print(f"{'case':<92} {'python ms':>10} {'paradnn ms':>10} {'ratio':>6}"
      f"  rounds: median (least-most)")
ratios, medians = [], []
for k in py:
    ratio = min(pd[k]) / min(py[k])
    ratios.append(ratio)
    turns = [a / b for a, b in zip(pd[k], py[k])]
    medians.append(statistics.median(turns))
    print(f"{k:<92} {min(py[k])*1e3:10.3f} {min(pd[k])*1e3:10.3f} {ratio:6.3f}"
          f"  {medians[-1]:.3f} ({min(turns):.3f}-{max(turns):.3f})")
def summary(xs):
    return (f"geometric mean {math.exp(sum(map(math.log, xs)) / len(xs)):.3f}, "
            f"worst {max(xs):.3f}")
print(f"paradnn over eager ({rounds} rounds): fastest rounds {summary(ratios)}; "
      f"rounds in turn, median {summary(medians)}")
PY
rm -rf "$work"
