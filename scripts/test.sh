#!/usr/bin/env bash
# Installs what is missing, builds with tests and examples, runs the tests
# (the fuzz targets among them, for a few seconds each), then the unit tests
# under ASan and UBSan (CMakePresets.json, build-asan/), then the GPU check
# up to where it needs a GPU (scripts/gpu_check.sh).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" --test
"$root/scripts/build.sh" -DPARADNN_BUILD_TESTS=ON -DPARADNN_BUILD_EXAMPLES=ON
(cd "$root/build" && ctest --output-on-failure -j "${PARADNN_JOBS:-2}" "$@")
# The unit tests again under AddressSanitizer and UndefinedBehaviorSanitizer.
cd "$root"
cmake --preset asan >/dev/null
cmake --build --preset asan >/dev/null
ctest --preset asan
# The GPU check's packages, and its build against them alone.
"$root/scripts/gpu_check.sh" --prepare >/dev/null
"$root/scripts/gpu_check.sh" --until-gpu
