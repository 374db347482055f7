#!/usr/bin/env bash
# Configures and builds paradnn in build/ (Release, ccache, 2 jobs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cmake -S "$root" -B "$root/build" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$root/build" -j "${PARADNN_JOBS:-2}"
