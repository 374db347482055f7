#!/usr/bin/env bash
# Configures and builds paradnn in build/ (Release, ccache, 2 jobs): every
# target, or the ones PARADNN_BUILD_TARGETS names (space-separated).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
targets=()
for t in ${PARADNN_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$root/build" -j "${PARADNN_JOBS:-2}" "${targets[@]}"
