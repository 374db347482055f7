#include "machine/blas.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace paradnn {

std::string LoadedBlasLibrary() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    size_t at = line.find('/');
    if (at == std::string::npos) continue;
    std::string path = line.substr(at);
    if (path.find("blas") != std::string::npos ||
        path.find("mkl") != std::string::npos) {
      return path;
    }
  }
  return "";
}

namespace {

using BlasCoreName = char* (*)();

BlasCoreName OpenBlasCoreName() {
  return reinterpret_cast<BlasCoreName>(
      dlsym(RTLD_DEFAULT, "openblas_get_corename"));
}

// OpenBLAS's kernels for the widest vector extensions this CPU has, by the
// names OPENBLAS_CORETYPE takes; nullptr below AVX2.
const char* OpenBlasCoreForCpu() {
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
      __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl")) {
    return "SkylakeX";
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    return "Haswell";
  }
  return nullptr;
}

// OpenBLAS chooses its kernels when it loads, from a table of the CPUs it
// knows, and falls back to generic SSE3 ones ("Prescott") on any other:
// Debian 12's (0.3.21) on an Emerald Rapids Xeon, where LibTorch's GEMMs
// then ran at a third of their speed with its AVX-512 kernels, and each
// call of a model either at that or 1.7 times slower again
// (docs/architecture.md). Where it fell back and the user named no kernels
// (OPENBLAS_CORETYPE, which OpenBLAS reads as it chooses), it chooses again
// with those of the CPU's vector extensions, as LibTorch's thread count is
// set rather than left at its default; before the backend's first product,
// once per process. Returns OpenBLAS's own choice where it replaced it, ""
// otherwise.
std::string ChooseBlasKernels() {
  using Call = void (*)();
  const BlasCoreName name = OpenBlasCoreName();
  const auto quit =
      reinterpret_cast<Call>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_quit"));
  const auto init =
      reinterpret_cast<Call>(dlsym(RTLD_DEFAULT, "gotoblas_dynamic_init"));
  const char* core = OpenBlasCoreForCpu();
  if (name == nullptr || quit == nullptr || init == nullptr ||
      core == nullptr || std::getenv("OPENBLAS_CORETYPE") != nullptr ||
      std::strcmp(name(), "Prescott") != 0) {
    return "";
  }
  const std::string chosen = name();
  setenv("OPENBLAS_CORETYPE", core, 1);
  quit();
  init();
  // Child processes (isolated cases, ranks) choose for themselves.
  unsetenv("OPENBLAS_CORETYPE");
  std::fprintf(stderr,
               "paradnn: torch: OpenBLAS does not know this CPU and chose "
               "its generic %s kernels; it runs its %s kernels instead (set "
               "OPENBLAS_CORETYPE to choose)\n",
               chosen.c_str(), name());
  return chosen;
}

}  // namespace

const std::string& ReplacedBlasCore() {
  static const std::string replaced = ChooseBlasKernels();
  return replaced;
}

std::string BlasCore() {
  const BlasCoreName name = OpenBlasCoreName();
  if (name == nullptr) return "";
  std::string core = std::string(", OpenBLAS core ") + name();
  const std::string& replaced = ReplacedBlasCore();
  if (!replaced.empty()) {
    core += " (OpenBLAS chose its generic " + replaced +
            " kernels: it does not know this CPU)";
  }
  return core;
}

}  // namespace paradnn
