#!/usr/bin/env bash
# Installs the Debian packages paradnn needs (Debian 12 or 13), only those
# missing, and makes sure LibTorch's BLAS is OpenBLAS rather than the
# reference BLAS.
#   scripts/setup.sh          build and run dependencies
#   scripts/setup.sh --test   also what the tests use (Chromium opens reports,
#                             clang fuzzes, Google Benchmark and yaml-cpp
#                             sources for hosts)
#   scripts/setup.sh --bench  also what bench/ compares against
set -euo pipefail

# Debian's libdnnl-dev is built with its OpenCL GPU runtime, so its CMake
# package calls find_package(OpenCL REQUIRED): OpenCL's headers and loader
# are needed to configure, though paradnn runs oneDNN on the CPU only.
# make too: cmake only recommends it, and a minimal Debian 12 has none.
packages=(cmake make g++ ccache libbenchmark-dev libtorch-dev libdnnl-dev
          ocl-icd-opencl-dev opencl-headers
          libyaml-cpp-dev libboost-program-options-dev catch2
          nlohmann-json3-dev libopenblas0-openmp libeigen3-dev gnuplot-nox
          libonnx-dev  # ONNX files as cases
          libgloo-dev)  # Gloo's headers, for the data-parallel communicator
# clang's sanitizer and fuzzer runtimes: Debian 12 names them by LLVM
# version; Debian 13 has a package for its default clang.
. /etc/os-release
case "${VERSION_ID:-}" in
  12) clang_rt=libclang-rt-14-dev ;;
  *) clang_rt=libclang-rt-dev ;;
esac
case "${1:-}" in
  # xz-utils: yaml-cpp's source tarball (scripts/host_sources.sh) is .tar.xz.
  # python3-torchvision, python3-torchaudio, python3-onnx: real models
  # exported by PyTorch's own ONNX exporter (which needs the onnx module
  # from PyTorch 2).
  --test) packages+=(chromium clang "$clang_rt" slurm-wlm munge openmpi-bin
                     python3 xz-utils python3-torchvision python3-torchaudio
                     python3-onnx) ;;
  --bench) packages+=(python3-torch time bc) ;;
esac

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if (( ${#missing[@]} )); then
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# Debian's LibTorch calls whatever libblas.so.3 points to; the reference BLAS
# is about 35x slower than OpenBLAS.
arch=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
for lib in libblas.so.3 liblapack.so.3; do
  want="/usr/lib/$arch/openblas-openmp/$lib"
  now=$(update-alternatives --query "$lib-$arch" 2>/dev/null | sed -n 's/^Value: //p')
  if [[ "$now" != "$want" ]]; then
    echo "setup: pointing $lib at OpenBLAS (was ${now:-unset})"
    $sudo update-alternatives --set "$lib-$arch" "$want"
  fi
done
# The tests build hosts with their own Google Benchmark, from sources.
if [[ "${1:-}" == "--test" ]]; then
  echo "setup: host sources (Google Benchmark, yaml-cpp) in $("$(dirname "$0")/host_sources.sh")"
fi
echo "setup: ok ($(update-alternatives --query "libblas.so.3-$arch" | sed -n 's/^Value: //p'))"
