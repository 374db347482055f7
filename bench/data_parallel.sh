#!/usr/bin/env bash
# Data-parallel training on 2 ranks x 1 thread against 1 rank x 1 thread,
# on this machine's 2 cores: how much of a step the gradients' all-reduce
# takes, and the scaling efficiency (examples per second on 2 ranks over
# twice those of one), for small, mid and large FC models and an LSTM, on
# both backends. Batch is per rank (weak scaling). One rank and two take
# turns in rounds (paradnn compare: 1 2, 2 1, 1 2, ...), each round in fresh
# processes, and the two ranks' step time over one's is printed with its 90%
# interval and its verdict (faster, slower, equivalent, undecided). Then a
# table, then
# PyTorch's own all-reduce of the same gradient sizes over the same Gloo
# (bench/gloo_allreduce.py, no compute around it) for reference; the report
# with its scaling plots goes to a temporary folder, kept with -k.
#   bench/data_parallel.sh [-k] [steps] [rounds]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
keep=false
if [[ "${1:-}" == "-k" ]]; then keep=true; shift; fi
steps=${1:-10}
rounds=${2:-5}
"$root/scripts/setup.sh" --bench >/dev/null
"$root/scripts/build.sh" >/dev/null
out=$(mktemp -d)
$keep || trap 'rm -rf "$out"' EXIT
cases=()
for backend in onednn torch; do
  for model in FC/layers:4/nodes:128/input:2000/output:200/batch:64 \
               FC/layers:4/nodes:1024/input:2000/output:1000/batch:128 \
               FC/layers:4/nodes:4096/input:2000/output:1000/batch:256 \
               RNN/cell:lstm/layers:2/embed:512/vocab:1024/length:32/batch:64; do
    cases+=("--paradnn_case=$model/$backend/fp32/train")
  done
done
common="--paradnn_threads=1 --paradnn_steps=$steps --paradnn_progress=false ${cases[*]}"
port=$((24000 + $$ % 5000))
# Rank 1 writes no results (BENCHMARK_OUT emptied): rank 0 reports for both.
"$root/build/paradnn" compare --rounds "$rounds" -o "$out/rounds" \
  --run-a "$root/build/paradnn $common" \
  --run-b "RANK=1 WORLD_SIZE=2 MASTER_PORT=$port BENCHMARK_OUT= $root/build/paradnn $common >/dev/null &
           RANK=0 WORLD_SIZE=2 MASTER_PORT=$port $root/build/paradnn $common; wait" \
  2>/dev/null
echo
"$root/build/paradnn" report "$out/rounds/b.json" --scaling "$out/rounds/a.json" \
  -o "$out/report" 2>/dev/null
# scaling.csv: case,name,world_size,step_ms,examples_per_second,
# allreduce_frac,efficiency; one block per case (medians of rounds).
awk -F, 'NR == 1 { printf "%-72s %9s %9s %9s %10s\n", "case", "1 rank ms", \
                          "2 ranks ms", "allreduce", "efficiency"; next }
         $3 == 1 { one = $4 }
         $3 == 2 { printf "%-72s %9.3f %9.3f %9.2f %10.3f\n", $2, one, $4, $6, $7 }' \
  "$out/report/scaling.csv"
echo
echo "paradnn's all-reduce per step (2 ranks; waiting for the other rank included):"
sizes=$(/usr/bin/python3 - "$out/rounds/b.round1.json" <<'PY'
import json, sys
sizes = []
for b in json.load(open(sys.argv[1]))["benchmarks"]:
    print(f"{b['name'].split('/real_time')[0][:72]:<72} "
          f"{b['allreduce_seconds_per_step'] * 1e3:9.3f} ms "
          f"{b['allreduce_bytes_per_step'] / 1e6:8.2f} MB", file=sys.stderr)
    if "/torch/" in b["name"]:
        sizes.append(str(int(b["allreduce_bytes_per_step"] / 4)))
print(" ".join(sizes))
PY
)
echo
echo "PyTorch's all_reduce over Gloo of the same sizes, alone:"
/usr/bin/python3 "$root/bench/gloo_allreduce.py" $sizes
$keep && echo "report: $out/report/index.html"
