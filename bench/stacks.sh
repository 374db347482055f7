#!/usr/bin/env bash
# Stack against stack: the same sweep (bench/stacks.yaml: every family on
# both backends, fp32 and bf16, train and infer) built against this
# machine's Debian stack and against another release's, in a debootstrap
# root beside it (scripts/debian_root.sh), run in rounds that take turns
# (paradnn compare --run-a/--run-b: one process per side per round, each
# with --paradnn_rounds=1, each case forked, 5 timed steps). Prints each case's
# ratio with its interval and the geometric means per family, backend,
# data type and mode, and writes the report (speedups with intervals, heat
# maps, the parameters that explain them) with the other release as A.
#   bench/stacks.sh [config] [rounds] [suite]   (bench/stacks.yaml, 5, trixie)
# Results in $PARADNN_ROOTS/<suite>/src/stacks (a.json, b.json, report/).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
config=${1:-bench/stacks.yaml}
rounds=${2:-5}
suite=${3:-trixie}
cd "$root"
scripts/setup.sh >/dev/null
scripts/build.sh >/dev/null
# Setup and build in the root; its unit tests are CI's business.
scripts/debian_root.sh "$suite" -- true
# The rounds write their results where both sides can: inside the root.
out=${PARADNN_ROOTS:-/var/cache/paradnn/roots}/$suite/src/stacks
rm -rf "$out"
# Each case in a process of its own, as rounds run them: on Debian 13, after
# LibTorch's cases in the same process, oneDNN 3.7's LLM prefill of 512
# tokens at batch 1 sometimes gives NaN logits (the case then fails).
flags="--paradnn_config=$config --paradnn_steps=5 --paradnn_isolate --paradnn_progress=false"
build/paradnn compare --rounds "$rounds" -o "$out" \
  --run-a "scripts/debian_root.sh $suite --run build/paradnn $flags" \
  --run-b "build/paradnn $flags"
build/paradnn report "$out/a.json" --vs "$out/b.json" -o "$out/report" >/dev/null
echo "stacks: report in $out/report/index.html"
