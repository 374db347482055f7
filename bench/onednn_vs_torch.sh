#!/usr/bin/env bash
# Step time of the oneDNN backend relative to LibTorch on the same cases
# (the quickstart sweep: FC, CNN and RNN, train and infer), both backends of
# each model run back to back in one run. Prints per-case ratios and their
# geometric mean per family and mode (below 1: oneDNN is faster).
#   bench/onednn_vs_torch.sh [config] [extra flags]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
config=${1:-$root/configs/quickstart.yaml}
shift || true
out=$(mktemp)
"$root/build/paradnn" --paradnn_config="$config" --paradnn_backends=torch,onednn \
  --paradnn_progress=false --benchmark_format=json "$@" >"$out"
python3 - "$out" <<'PY'
import json, math, sys, collections
runs = {}
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    if b.get("error_occurred"):
        print("skipped:", b["run_name"], b.get("error_message"))
        continue
    parts = b["run_name"].removesuffix("/real_time").split("/")
    runs[("/".join(parts[:-3]), parts[-3], parts[-2], parts[-1])] = b["real_time"]
groups = collections.defaultdict(list)
print(f"{'model':<78} {'dtype':5} {'mode':5} {'torch ms':>9} {'onednn ms':>9} {'ratio':>6}")
for (model, backend, dtype, mode), t in sorted(runs.items()):
    if backend != "torch" or (model, "onednn", dtype, mode) not in runs:
        continue
    o = runs[(model, "onednn", dtype, mode)]
    groups[(model.split("/")[0], dtype, mode)].append(o / t)
    print(f"{model:<78} {dtype:5} {mode:5} {t:9.2f} {o:9.2f} {o/t:6.2f}")
print("\ngeometric mean of oneDNN / LibTorch step time:")
for (family, dtype, mode), r in sorted(groups.items()):
    g = math.exp(sum(map(math.log, r)) / len(r))
    print(f"  {family:4} {dtype} {mode:5} {g:5.2f}  (min {min(r):.2f}, max {max(r):.2f}, {len(r)} cases)")
PY
rm -f "$out"
