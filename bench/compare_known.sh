#!/usr/bin/env bash
# Does paradnn compare decide what it should? Two comparisons of real cases
# (bench/compare_slice.yaml: both backends, train and infer), each with
# `paradnn compare --run-a/--run-b` and its defaults (rounds in turns until
# each case is decided or the time budget is spent):
#   A/A: the same command on both sides: (almost) nothing should be called
#        faster or slower;
#   A/B: B's steps stretched by PARADNN_TEST_STRETCH (default 1.10): every
#        case should be called slower, its ratio near the stretch.
#   bench/compare_known.sh [config] [stretch] [compare flags]
# COMPARE_KEEP=DIR keeps both comparisons' folders there.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
"$root/scripts/build.sh" >/dev/null
config=${1:-$root/bench/compare_slice.yaml}
stretch=${2:-1.10}
shift 2 || shift $#
work=${COMPARE_KEEP:-$(mktemp -d)}
[[ -n ${COMPARE_KEEP:-} ]] || trap 'rm -rf "$work"' EXIT
run="$root/build/paradnn --paradnn_config=$config --paradnn_progress=false"
for kind in aa ab; do
  b_env=""
  [[ $kind == ab ]] && b_env="PARADNN_TEST_STRETCH=$stretch "
  start=$(date +%s)
  "$root/build/paradnn" compare -o "$work/$kind" "$@" \
    --run-a "$run" --run-b "$b_env$run" >"$work/$kind.txt" 2>"$work/$kind.err"
  echo "$kind: $(($(date +%s) - start)) s"
done
python3 - "$work" "$stretch" <<'PY'
import re, statistics, sys
work, stretch = sys.argv[1], float(sys.argv[2])
def cases(kind):
    out = []
    for line in open(f"{work}/{kind}.txt"):
        m = re.match(r"^(\S+)\s.*\s(\d+)\+(\d+)\s+([\d.]+)(?: \(([\d.]+)-([\d.]+)\))?\s+"
                     r"(faster|slower|equivalent|undecided)$", line.rstrip())
        if m:
            out.append(dict(name=m[1], rounds=(int(m[2]), int(m[3])),
                            ratio=float(m[4]), verdict=m[7],
                            low=float(m[5]) if m[5] else None,
                            high=float(m[6]) if m[6] else None))
    return out
for kind, label in (("aa", "A/A (the same command)"),
                    ("ab", f"A/B (B stretched {stretch})")):
    c = cases(kind)
    counts = {v: sum(x["verdict"] == v for x in c)
              for v in ("faster", "slower", "equivalent", "undecided")}
    rounds = [max(x["rounds"]) for x in c]
    print(f"{label}: {len(c)} cases: " +
          ", ".join(f"{n} {v}" for v, n in counts.items()) +
          f"; rounds a side {min(rounds)}-{max(rounds)} (median "
          f"{statistics.median(rounds)})")
    widths = [x["high"] / x["low"] - 1 for x in c if x["low"]]
    if widths:
        print(f"  ratio intervals: median width {statistics.median(widths):.1%}")
    if kind == "ab":
        off = [abs(x["ratio"] / stretch - 1) for x in c]
        print(f"  estimates against {stretch}: median off {statistics.median(off):.1%}, "
              f"most {max(off):.1%}; within 3%: {sum(o <= 0.03 for o in off)}/{len(c)}")
        inside = sum(x["low"] is not None and x["low"] <= stretch <= x["high"] for x in c)
        print(f"  intervals holding {stretch}: {inside}/{len(c)}")
    for line in open(f"{work}/{kind}.txt"):
        if line.startswith("all "):
            print("  " + line.rstrip())
PY
