#!/usr/bin/env bash
# What linking paradnn costs a host binary that runs none of paradnn's
# cases: the same host (bench/host_cost/) without paradnn, with the static
# macro, and with its own main calling paradnn_register() (which registers
# the built-in sweep), each running only its own benchmark.
# Prints the median wall time of a run over RUNS rounds (the three hosts in
# turn), the peak RSS and the number of shared objects loaded. Needs
# /usr/bin/time (setup --bench).
#   bench/host_cost.sh [BUILD] [RUNS]    (BUILD: paradnn's build, build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
runs=${2:-30}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
for v in without static own; do
  cmake -S "$root/bench/host_cost" -B "$work/$v" -DHOST=$v \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
  cmake --build "$work/$v" >/dev/null
done
args=(--benchmark_filter=BM_Host --benchmark_min_time=0.001)
# Rounds of one run of each host in turn, so that the machine's slow
# stretches fall on all three alike.
declare -A walls rss
for ((i = 0; i < runs; i++)); do
  for v in without static own; do
    start=$(date +%s%N)
    /usr/bin/time -f "%M" -o "$work/rss" "$work/$v/host" "${args[@]}" \
      >/dev/null 2>&1
    walls[$v]+="$(( ($(date +%s%N) - start) / 1000 )) "
    rss[$v]=$(( $(cat "$work/rss") > ${rss[$v]:-0} ? $(cat "$work/rss") : ${rss[$v]:-0} ))
  done
done
printf "%-8s %14s %14s %14s\n" host "wall ms" "peak RSS MB" "shared objects"
for v in without static own; do
  median=$(printf "%s\n" ${walls[$v]} | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  objects=$(LD_DEBUG=files "$work/$v/host" "${args[@]}" 2>&1 >/dev/null |
            grep -c "calling init:" || true)
  printf "%-8s %14.1f %14.1f %14d\n" "$v" "$(echo "$median / 1000" | bc -l)" \
    "$(echo "${rss[$v]} / 1024" | bc -l)" "$objects"
done
