#!/usr/bin/env bash
# What makes a process slow or fast on this machine: one case run plainly
# (one round, its own process) K times under each setting, the settings
# taking turns (a process of each, then again), and per setting the median
# step time, the least and the most, and their spread (most - least over
# the median). Settings: the default (threads where the OS puts them),
# --paradnn_pin (each OpenMP thread on a CPU of its own), OpenMP's passive
# wait policy, one thread, one thread pinned to CPU 0 (taskset), and
# transparent huge pages "always" instead of the machine's mode, where
# /sys lets this user change it (restored after).
#   bench/machine.sh [case] [processes per setting] [steps]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
case_name=${1:-FC/layers:8/nodes:128/input:2000/output:200/batch:64/torch/fp32/train}
k=${2:-10}
steps=${3:-100}
thp=/sys/kernel/mm/transparent_hugepage/enabled
thp_mode=$(sed 's/.*\[\(.*\)\].*/\1/' "$thp" 2>/dev/null || echo unknown)
settings=(default pin passive one_thread one_thread_cpu0)
[[ -w $thp ]] && settings+=(thp_always)
work=$(mktemp -d)
trap 'rm -rf "$work"; [[ -w $thp ]] && echo "$thp_mode" >"$thp" || true' EXIT
run() {  # setting, output file
  local args=(--paradnn_case="$case_name" --paradnn_rounds=1
              --paradnn_steps="$steps" --paradnn_progress=false
              --benchmark_format=json)
  case $1 in
    default) "$root/build/paradnn" "${args[@]}" ;;
    pin) "$root/build/paradnn" "${args[@]}" --paradnn_pin ;;
    passive) OMP_WAIT_POLICY=passive "$root/build/paradnn" "${args[@]}" ;;
    one_thread) "$root/build/paradnn" "${args[@]}" --paradnn_threads=1 ;;
    one_thread_cpu0) taskset -c 0 "$root/build/paradnn" "${args[@]}" --paradnn_threads=1 ;;
    thp_always)
      echo always >"$thp"
      "$root/build/paradnn" "${args[@]}"
      echo "$thp_mode" >"$thp" ;;
  esac >"$2" 2>/dev/null
}
for i in $(seq "$k"); do
  for s in "${settings[@]}"; do run "$s" "$work/$s.$i.json"; done
done
echo "$case_name, $steps steps a process, $k processes per setting (THP: $thp_mode)"
python3 - "$work" "$k" "${settings[@]}" <<'PY'
import json, os, statistics, sys
work, k, settings = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print(f"{'setting':16} {'median ms':>10} {'least':>8} {'most':>8} {'spread':>7}  processes (ms)")
for s in settings:
    ms = [json.load(open(os.path.join(work, f"{s}.{i}.json")))["benchmarks"][0]["step_ms"]
          for i in range(1, k + 1)]
    m = statistics.median(ms)
    print(f"{s:16} {m:10.3f} {min(ms):8.3f} {max(ms):8.3f} {(max(ms) - min(ms)) / m:7.1%}  "
          + " ".join(f"{x:.2f}" for x in ms))
PY
