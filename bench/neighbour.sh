#!/usr/bin/env bash
# Runs a command beside a neighbour that keeps the machine busy in bursts,
# as other tenants of a shared machine do: one thread copying memory for 1
# to 4 s, then sleeping 2 to 8 s, until the command ends.
#   bench/neighbour.sh bench/bricks.sh [its arguments]
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: $0 COMMAND [ARGS...]" >&2; exit 2; }
(
  while :; do
    timeout $((1 + RANDOM % 4)) \
      dd if=/dev/zero of=/dev/null bs=32M count=1000000 2>/dev/null || true
    sleep $((2 + RANDOM % 7))
  done
) &
neighbour=$!
# The loop, then the children it had: once it is gone it starts no more,
# and they would run on under init.
trap 'kids=$(pgrep -P $neighbour); kill $neighbour $kids 2>/dev/null || true' \
  EXIT
"$@"
