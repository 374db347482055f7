#!/usr/bin/env bash
# Builds the libFuzzer targets with clang and runs each from its seed corpus
# (fuzz/corpus/<target>) for SECONDS (default 20). A crash fails the script
# and leaves the input as fuzz/crash-*: add it to tests/ as a regression test.
#   scripts/fuzz.sh [SECONDS]
set -euo pipefail
shopt -s nullglob
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-20}
CXX=clang++ cmake -S "$root/fuzz" -B "$root/build-fuzz" -DCMAKE_BUILD_TYPE=Debug >/dev/null
cmake --build "$root/build-fuzz" -j "${PARADNN_JOBS:-2}" >/dev/null
for target in config family name mllog results; do
  work=$(mktemp -d)
  mkdir "$work/corpus"
  cp "$root/fuzz/corpus/$target/"* "$work/corpus/"
  echo "fuzz: $target for ${seconds}s"
  # TMPDIR: the targets write their inputs to files there.
  mkdir "$work/tmp"
  # Artifacts go to $work first: libFuzzer also writes inputs that merely
  # ran long (slow-unit-*) there, which are no failure and stay behind.
  mkdir "$work/artifacts"
  if ! (cd "$root/fuzz" && TMPDIR="$work/tmp" "$root/build-fuzz/${target}_fuzzer" -max_total_time="$seconds" \
    -rss_limit_mb=4096 -artifact_prefix="$work/artifacts/" "$work/corpus" \
    2>"$work/log"); then
    tail -40 "$work/log"
    for f in "$work/artifacts/"*; do
      case $(basename "$f") in
        slow-unit-*) ;;
        *) cp "$f" "$root/fuzz/crash-$target-$(basename "$f")" ;;
      esac
    done
    exit 1
  fi
  grep -E "^(#[0-9]+ +DONE|Done)" "$work/log" | tail -1
  rm -rf "$work"
done
echo "fuzz: no crashes"
