#!/usr/bin/env bash
# Installs what is missing, builds with tests and examples, runs the tests
# (the fuzz targets among them, for a few seconds each).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --test
"$root/scripts/build.sh" -DPARADNN_BUILD_TESTS=ON -DPARADNN_BUILD_EXAMPLES=ON
cd "$root/build"
ctest --output-on-failure -j "${PARADNN_JOBS:-2}" "$@"
