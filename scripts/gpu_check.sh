#!/usr/bin/env bash
# paradnn on the first GPU of a machine that has PyTorch with CUDA, a C++
# compiler and CMake, and none of Debian's packages: builds the core and the
# LibTorch module against that PyTorch, calibrates, runs a short sweep of
# every family in fp32, fp16 and bf16 (configs/gpu_check.yaml), writes the
# report and prints a summary.
#
#   scripts/gpu_check.sh --prepare     on a Debian 12 or 13 machine: fetches
#                                      Debian's packages of what PyTorch does
#                                      not bring (yaml-cpp, Boost's
#                                      program_options, nlohmann-json, Eigen,
#                                      Google Benchmark; about 12 MB) into
#                                      .gpu_deps/debs; copy the clone with it
#   scripts/gpu_check.sh [OUT]         on the GPU machine: build, calibrate,
#                                      sweep, report into OUT (default
#                                      results/gpu), summary on stdout and in
#                                      OUT/summary.txt
#   scripts/gpu_check.sh --until-gpu   everything the GPU does not take part
#                                      in (CI): the build against the
#                                      packages alone, the sweep's listing,
#                                      torch_cuda's reason to skip
#
# PYTHON names the Python whose PyTorch to build against (default python3);
# PARADNN_GPU_DEPS the folder of the packages (default .gpu_deps).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=${PARADNN_GPU_DEPS:-$root/.gpu_deps}
python=${PYTHON:-python3}
build=$root/build-gpu
start=$SECONDS

# The -dev packages paradnn's core and runner build with; each one's
# libraries come along (the closure of their dependencies, cut to these
# projects: the C and C++ runtimes are the machine's).
dev_packages=(libyaml-cpp-dev libboost-program-options-dev nlohmann-json3-dev
  libeigen3-dev libbenchmark-dev)
own='yaml-cpp|boost|benchmark|nlohmann|eigen'
max_mb=60

elapsed() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }

prepare() {
  command -v apt-get >/dev/null || {
    echo "gpu_check: --prepare needs Debian's apt-get" >&2
    exit 1
  }
  local packages
  packages=$(apt-cache depends --recurse --no-recommends --no-suggests \
    --no-conflicts --no-breaks --no-replaces --no-enhances \
    "${dev_packages[@]}" | grep -E '^[a-z]' | grep -E "$own" | sort -u)
  rm -rf "$deps/debs"
  mkdir -p "$deps/debs"
  # shellcheck disable=SC2086
  (cd "$deps/debs" && apt-get download -qq $packages)
  local bytes
  bytes=$(du -cb "$deps"/debs/*.deb | tail -1 | cut -f1)
  # shellcheck disable=SC1091
  echo "gpu_check: $(echo "$packages" | wc -l) packages of $(. /etc/os-release &&
    echo "$PRETTY_NAME"), $((bytes / 1000000)) MB, in $deps/debs:"
  ls "$deps/debs"
  if ((bytes > max_mb * 1000000)); then
    echo "gpu_check: over the $max_mb MB the GPU machine is sent" >&2
    exit 1
  fi
}

# The packages' files under $deps/root, as dpkg would install them under /.
unpack() {
  if ! ls "$deps"/debs/*.deb >/dev/null 2>&1; then
    echo "gpu_check: no packages in $deps/debs: run scripts/gpu_check.sh" \
      "--prepare on a Debian machine first and copy .gpu_deps along" >&2
    exit 1
  fi
  rm -rf "$deps/root"
  mkdir -p "$deps/root"
  local deb
  for deb in "$deps"/debs/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$deps/root"
    else  # a .deb is an ar archive with the files in data.tar.xz
      ar p "$deb" data.tar.xz | tar -xJ -C "$deps/root"
    fi
  done
}

# Configures and builds the runner and the LibTorch module in build-gpu,
# against the packages and LibTorch from $torch_prefix.
build_paradnn() {
  local torch_prefix=$1 generator=() cuda=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  # PyTorch's CMake files look for the CUDA toolkit it was built with.
  if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
    export PATH=/usr/local/cuda/bin:$PATH
  fi
  if command -v nvcc >/dev/null; then
    cuda=(-DCUDAToolkit_ROOT="$(dirname "$(dirname "$(command -v nvcc)")")")
  fi
  rm -f "$build/CMakeCache.txt"
  mkdir -p "$build"
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_PREFIX_PATH="$deps/root/usr;$torch_prefix" "${cuda[@]}" \
    -DPARADNN_WITH_ONEDNN=OFF -DPARADNN_WITH_ONNX=OFF -DPARADNN_BUILD_TESTS=OFF \
    -DPARADNN_BUILD_EXAMPLES=OFF -DPARADNN_INSTALL=OFF >"$build/configure.log" ||
    {
      tail -40 "$build/configure.log"
      echo "gpu_check: CMake failed (log: $build/configure.log)" >&2
      exit 1
    }
  # Every dependency but LibTorch from the packages, not the machine.
  local dep dir
  for dep in yaml-cpp Boost benchmark nlohmann_json Eigen3; do
    dir=$(sed -n "s/^${dep}_DIR:[A-Z]*=//p" "$build/CMakeCache.txt")
    case $dir in
      "$deps/root"/*) ;;
      *)
        echo "gpu_check: $dep was found in '$dir', not in $deps/root" >&2
        exit 1
        ;;
    esac
  done
  cmake --build "$build" -j "${PARADNN_JOBS:-$(nproc)}" \
    --target paradnn_runner paradnn_backend_torch
  export LD_LIBRARY_PATH=$deps/root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}

if [ "${1:-}" = --prepare ]; then
  prepare
  exit 0
fi

unpack
if [ "${1:-}" = --until-gpu ]; then
  # No GPU, and no PyTorch in Python here: the system's LibTorch stands in
  # for PyTorch's (the same CMake package, Torch).
  torch_prefix=$("$python" -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null || echo /usr)
  build_paradnn "$torch_prefix"
  listed=$("$build/paradnn" --paradnn_config="$root/configs/gpu_check.yaml" \
    --benchmark_list_tests 2>/dev/null | grep -c /torch_cuda/)
  reason=$("$build/paradnn" --paradnn_rounds=1 --benchmark_format=json \
    --paradnn_case=FC/layers:1/nodes:8/input:8/output:2/batch:2/torch_cuda/fp16/infer \
    2>/dev/null | sed -n 's/.*"error_message": "\(.*\)".*/\1/p')
  echo "gpu_check: built against the packages alone in $(elapsed $((SECONDS - start)));" \
    "configs/gpu_check.yaml lists $listed cases; here torch_cuda says: $reason"
  [ "$listed" -gt 0 ] && [ -n "$reason" ]
  exit 0
fi

out=${1:-$root/results/gpu}
mkdir -p "$out"
read -r torch_prefix torch_version cuda_version cuda_ok < <("$python" -c '
import torch
print(torch.utils.cmake_prefix_path, torch.__version__, torch.version.cuda,
      torch.cuda.is_available())') || {
  echo "gpu_check: $python has no PyTorch (PYTHON names another)" >&2
  exit 1
}
if [ "$cuda_version" = None ] || [ "$cuda_ok" != True ]; then
  echo "gpu_check: PyTorch $torch_version in $python has no CUDA or sees no GPU" >&2
  exit 1
fi
build_paradnn "$torch_prefix"
built=$SECONDS
"$build/paradnn" calibrate -o "$out/platform.json" 2>"$out/calibrate.log"
calibrated=$SECONDS
# Each case in a process of its own, as rounds run them, once: one case's
# CUDA error ends its process, not the sweep. 10 timed steps a case.
status=0
timeout 420 "$build/paradnn" --paradnn_config="$root/configs/gpu_check.yaml" \
  --paradnn_platform="$out/platform.json" --paradnn_rounds=1 \
  --paradnn_isolate --paradnn_steps=10 --benchmark_out="$out/gpu.json" \
  --benchmark_out_format=json >"$out/gpu.txt" 2>"$out/sweep.log" || status=$?
swept=$SECONDS
plots=()
command -v gnuplot >/dev/null || plots=(--no-plots)
"$build/paradnn" report "$out/gpu.json" --platform "$out/platform.json" \
  "${plots[@]}" -o "$out/report" 2>"$out/report.log" || status=$?
"$python" - "$out" "$torch_version" "$cuda_version" "$status" \
  "$(elapsed $((built - start)))" "$(elapsed $((calibrated - built)))" \
  "$(elapsed $((swept - calibrated)))" "$(elapsed $((SECONDS - start)))" \
  <<'EOF' | tee "$out/summary.txt"
import json, re, statistics, sys
out, torch_version, cuda_version, status, t_build, t_cal, t_sweep, t_all = sys.argv[1:]
p = json.load(open(out + "/platform.json"))
gpu = p.get("devices", {}).get("gpu", {})
print("paradnn GPU check:", p.get("device_names", {}).get("gpu", "GPU"),
      "- PyTorch", torch_version, "CUDA", cuda_version)
print("peaks (torch_cuda's GEMM):",
      ", ".join("%s %.1f TFLOP/s" % (t, gpu[t] / 1e12)
                for t in ("fp32", "tf32", "fp16", "bf16") if t in gpu) or "none",
      "; device memory triad %.2f TB/s" % (p.get("device_bandwidth", {}).get("gpu", 0) / 1e12))
log = open(out + "/sweep.log").read()
counts = re.findall(r"paradnn: (\d+) passed, (\d+) skipped, (\d+) failed", log)
print("cases:", "%s passed, %s skipped, %s failed" % counts[-1] if counts
      else "the sweep ended early (exit status %s): see sweep.log" % status)
rows = {}
decode = []
try:
    results = json.load(open(out + "/gpu.json"))["benchmarks"]
except (OSError, ValueError):
    results = []
# One row a case: its median over rounds where there are rounds.
cases = {}
for b in results:
    if b.get("error_occurred"):
        continue
    if b.get("run_type") != "aggregate":
        cases.setdefault(b["run_name"], b)
    elif b.get("aggregate_name") == "median":
        cases[b["run_name"]] = b
for b in cases.values():
    parts = b["run_name"].split("/")
    family = parts[0]
    if family == "LLM":
        family += " " + next(x[6:] for x in parts if x.startswith("phase:"))
    at = parts.index("torch_cuda")
    dtype, mode = parts[at + 1], parts[at + 2]
    rows.setdefault((family, dtype, mode), []).append(b)
    if family == "LLM decode":
        decode.append(b)
print("%-18s %-5s %-6s %5s %12s %16s" % ("family", "dtype", "mode", "cases",
                                         "flops_util", "bandwidth_util"))
def median(bs, key):
    v = [b[key] for b in bs if key in b]
    return "%.3f" % statistics.median(v) if v else "-"
for (family, dtype, mode), bs in sorted(rows.items()):
    print("%-18s %-5s %-6s %5d %12s %16s" % (family, dtype, mode, len(bs),
          median(bs, "flops_util"), median(bs, "bandwidth_util")))
for b in decode:
    name = b["run_name"]
    print("LLM decode %s: %.0f GB/s (bandwidth_util %.3f), %.3f ms a token" % (
        "/".join(x for x in name.split("/") if x.startswith(("context", "batch"))
                 or x in ("fp32", "fp16", "bf16")),
        b["bytes_per_step"] / (b["step_ms"] / 1e3) / 1e9,
        b.get("bandwidth_util", 0), b["step_ms"]))
print("time: build %s, calibrate %s, sweep %s, all %s; report: %s/report/index.html"
      % (t_build, t_cal, t_sweep, t_all, out))
EOF
exit "$status"
