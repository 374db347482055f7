#!/usr/bin/env bash
# How long listing a sweep takes (`--benchmark_list_tests`: load, expand,
# build every model's graph and cost, register with Google Benchmark):
# each of the paper's grids, then FC grids of 10k, 30k and 100k models, to
# show that the cost grows linearly with the number of cases; last, each
# paper grid with its layer bricks (--paradnn_bricks). Median of RUNS runs.
#   bench/listing.sh [BUILD] [RUNS]    (BUILD: paradnn's build, build/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
runs=${2:-5}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Median wall seconds of listing CONFIG (with more flags after it); also
# counts the cases.
list() {
  local config=$1 times=()
  shift
  for ((i = 0; i < runs; i++)); do
    local start=$(date +%s%N)
    "$build/paradnn" --paradnn_config="$config" --benchmark_list_tests "$@" \
      >"$work/list" 2>/dev/null
    times+=($(( $(date +%s%N) - start )))
  done
  cases=$(wc -l <"$work/list")
  seconds=$(printf "%s\n" "${times[@]}" | sort -n |
    awk '{t[NR]=$1} END {printf "%.3f", t[int((NR+1)/2)]/1e9}')
}

printf "%-24s %8s %10s %14s\n" sweep cases seconds "us per case"
total=0
for grid in paper_fc paper_cnn paper_rnn paper_transformer; do
  list "$root/configs/$grid.yaml"
  total=$(awk -v a="$total" -v b="$seconds" 'BEGIN {print a + b}')
  printf "%-24s %8d %10s %14.1f\n" "$grid" "$cases" "$seconds" \
    "$(awk -v s="$seconds" -v n="$cases" 'BEGIN {print s / n * 1e6}')"
done
printf "%-24s %8s %10s\n" "the four together" "" "$total"

# FC grids of 10 x 10 x 10 x 10 x B models: 10k, 30k and 100k.
for batches in 1 3 10; do
  batch=$(seq -s, 1 "$batches")
  cat >"$work/grid.yaml" <<YAML
backends: [torch]
dtypes: [fp32]
modes: [train]
sweeps:
  - family: FC
    layers: {from: 1, to: 10, step: 1}
    nodes: {from: 32, to: 320, step: 32}
    input: {from: 100, to: 1000, step: 100}
    output: {from: 10, to: 100, step: 10}
    batch: [$batch]
YAML
  list "$work/grid.yaml"
  printf "%-24s %8d %10s %14.1f\n" "FC grid" "$cases" "$seconds" \
    "$(awk -v s="$seconds" -v n="$cases" 'BEGIN {print s / n * 1e6}')"
done

# The paper's grids with a brick for every unique layer: the models and
# their bricks.
for grid in paper_fc paper_cnn paper_rnn paper_transformer; do
  list "$root/configs/$grid.yaml" --paradnn_bricks
  printf "%-24s %8d %10s %14.1f\n" "${grid#paper_} with bricks" "$cases" "$seconds" \
    "$(awk -v s="$seconds" -v n="$cases" 'BEGIN {print s / n * 1e6}')"
done

# A zoo of ONNX files, each at two batch sizes: the files are read (checked,
# shapes inferred) and mapped, their weights' values never.
if [[ -n ${ZOO:-} ]]; then
  {
    echo "backends: [torch, onednn]"
    echo "dtypes: [fp32]"
    echo "modes: [train, infer]"
    echo "sweeps:"
    for f in "$ZOO"/*.onnx; do
      printf '  - onnx: %s\n    batch: [1, 8]\n' "$(realpath "$f")"
    done
  } >"$work/zoo.yaml"
  list "$work/zoo.yaml"
  printf "%-24s %8d %10s %14.1f\n" \
    "zoo: $(ls "$ZOO"/*.onnx | wc -l) files, $(du -sh "$ZOO" | cut -f1)" \
    "$cases" "$seconds" \
    "$(awk -v s="$seconds" -v n="$cases" 'BEGIN {print s / n * 1e6}')"
fi
