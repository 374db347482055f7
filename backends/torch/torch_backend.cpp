// The LibTorch backend: what it supports, its runner, its description
// (LibTorch, BLAS, device) and its probes of the device (GEMM, memory).
#include "backends/torch/torch_backend.h"

#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>

#include "backends/torch/cuda_driver.h"
#include "backends/torch/model.h"
#include "backends/torch/runner.h"
#include "backends/torch/runtime.h"
#include "machine/blas.h"
#include "machine/caches.h"

namespace paradnn {
namespace {

// The BLAS library LibTorch loaded, as the dynamic linker resolved it.
std::string LoadedBlas() {
  const std::string path = LoadedBlasLibrary();
  if (!path.empty()) return path;
  // PyTorch's own builds link MKL into libtorch_cpu.
  return at::hasMKL() ? "MKL (linked into LibTorch)" : "none loaded";
}

class TorchBackend : public Backend {
 public:
  // Before any of its products runs: the kernels they run on.
  // Before any of its products runs: the kernels they run on. Where the
  // CPU hides its cache sizes, LibTorch's oneDNN 3 misreads them
  // (AmdCacheLeafMissing): its convolutions then write wrong values or
  // divide by zero, so LibTorch convolves in its own code, as it does when
  // built without oneDNN, and the run's context says so.
  explicit TorchBackend(bool cuda) : cuda_(cuda) {
    ReplacedBlasCore();
    if (!cuda_ && TorchOneDnnMisreadsCaches()) {
      at::globalContext().setUserEnabledMkldnn(false);
    }
  }

  std::string name() const override { return cuda_ ? "torch_cuda" : "torch"; }

  std::string Unsupported(const Job& job) const override {
    if (cuda_ && !TorchHasCuda()) {
      return "torch_cuda: this LibTorch has no CUDA or no GPU is present";
    }
    // LibTorch's CPU has no fp16 GEMM of its BLAS: fp16 is the GPUs'.
    if (!cuda_ && job.dtype == DType::kFp16) {
      return "torch: fp16 runs on GPUs (torch_cuda); on the CPU, bf16";
    }
#if TORCH_VERSION_MAJOR < 2
    if (!cuda_ && job.dtype == DType::kBf16 &&
        job.graph.Has(Op::kEmbeddingBag)) {
      return std::string("torch: LibTorch ") + TORCH_VERSION +
             "'s embedding_bag has no bf16 on the CPU";
    }
#endif
    return "";
  }

  std::unique_ptr<Runner> Prepare(const Job& job,
                                  const RunOptions& opt) const override {
    return Translated([&] {
      if (cuda_) UseCudaMath(/*tf32=*/false);
      return MakeTorchRunner(
          job, opt, cuda_ ? torch::Device(torch::kCUDA, 0) : torch::kCPU);
    });
  }

  std::string Describe() const override {
    return std::string("LibTorch ") + TORCH_VERSION +
           (!cuda_ && TorchOneDnnMisreadsCaches()
                ? " (its oneDNN off: this CPU hides its cache sizes)"
                : "") +
           ", BLAS " + LoadedBlas() + BlasCore() +
           (cuda_ ? ", CUDA device 0 (fp32 without TF32, cuDNN autotuned)"
                  : ", CPU");
  }

  std::string Device() const override { return cuda_ ? "gpu" : "cpu"; }

  // The step allocator hands a tensor the block of its size freed last.
  bool RecyclesWithinStep() const override { return true; }
  bool ActivationsJoinProducer() const override { return true; }
  // Batch norms folded into their convolutions (PrepareInference).
  Fusion InferenceFusion() const override { return Fusion::kFoldBatchNorm; }

  // torch::mm, which LibTorch hands to its BLAS on the CPU, to cuBLAS on a
  // GPU.
  double GemmFlops(int64_t m, int64_t n, int64_t k, DType dtype, int threads,
                   bool tf32) const override {
    if (!cuda_ && (tf32 || dtype == DType::kFp16)) return 0;
    if (cuda_ && !TorchHasCuda()) return 0;
    return Translated([&] {
      UseThreads(threads);
      if (cuda_) UseCudaMath(tf32 && dtype == DType::kFp32);
      const torch::TensorOptions options =
          torch::TensorOptions().dtype(TorchType(dtype)).device(TheDevice());
      torch::NoGradGuard no_grad;
      const torch::Tensor a = torch::rand({m, k}, options);
      const torch::Tensor b = torch::rand({k, n}, options);
      torch::Tensor c = torch::empty({m, n}, options);
      const double seconds = BestSeconds([&] {
        torch::mm_out(c, a, b);
        if (cuda_) torch::cuda::synchronize();
      });
      if (cuda_) UseCudaMath(/*tf32=*/false);
      return 2.0 * m * n * k / seconds;
    });
  }

  // The triad over three arrays of 512 MiB, each many times any GPU's L2
  // (an H200's is 60 MB), so every byte comes from device memory.
  double MemoryBandwidth() const override {
    if (!cuda_ || !TorchHasCuda()) return 0;
    return Translated([&] {
      const int64_t n = int64_t{1} << 27;
      const torch::TensorOptions options =
          torch::TensorOptions().dtype(torch::kFloat).device(TheDevice());
      torch::NoGradGuard no_grad;
      const torch::Tensor b = torch::full({n}, 1.0, options);
      const torch::Tensor c = torch::full({n}, 2.0, options);
      torch::Tensor a = torch::empty({n}, options);
      const double seconds = BestSeconds(
          [&] {
            torch::add_out(a, b, c, 3.0);
            torch::cuda::synchronize();
          },
          100);
      if (a[n / 2].item<double>() != 7.0) {
        throw std::logic_error("the device's triad computed wrongly");
      }
      return 3.0 * n * sizeof(float) / seconds;
    });
  }

  int64_t DeviceMemoryFree() const override {
    return cuda_ && TorchHasCuda() ? cuda_driver::Memory(0).free : 0;
  }

  std::string DeviceName() const override {
    if (!cuda_ || !TorchHasCuda()) return "";
    const std::string name = cuda_driver::DeviceName(0);
    const double gib = cuda_driver::Memory(0).total / double(int64_t{1} << 30);
    char size[32];
    std::snprintf(size, sizeof(size), ", %.1f GiB", gib);
    return name.empty() ? "CUDA device 0" : name + (gib > 0 ? size : "");
  }

 private:
  torch::Device TheDevice() const {
    return cuda_ ? torch::Device(torch::kCUDA, 0) : torch::kCPU;
  }

  // fp32 cases multiply in fp32: PyTorch lets cuDNN's convolutions round
  // fp32 to TF32 unless told not to, and a user comparing fp32 across
  // platforms compares IEEE fp32; TF32 is its own calibrated peak. cuDNN
  // times its algorithms for each new shape in the warm-up step and keeps
  // the fastest, as training scripts ask it to (torch.backends.cudnn.
  // benchmark).
  static void UseCudaMath(bool tf32) {
    at::globalContext().setFloat32MatmulPrecision(tf32 ? "high" : "highest");
    at::globalContext().setAllowTF32CuDNN(tf32);
    at::globalContext().setBenchmarkCuDNN(true);
  }

  bool cuda_;
};

}  // namespace

std::unique_ptr<Backend> MakeTorchBackend(bool cuda) {
  return std::make_unique<TorchBackend>(cuda);
}

int64_t TorchModuleParameterCount(const Graph& g) {
  TorchModel model(g);
  int64_t n = 0;
  for (const torch::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

int TorchThreads() { return torch::get_num_threads(); }

bool TorchHasCuda() { return torch::cuda::is_available(); }

bool TorchOneDnnMisreadsCaches() {
  static const bool misreads = [] {
    if (!at::hasMKLDNN() || !AmdCacheLeafMissing()) return false;
    // "Intel(R) MKL-DNN v3.7.2 (Git Hash ...)": the oneDNN LibTorch runs.
    const std::string config = at::show_config();
    const size_t at = config.find("MKL-DNN v");
    return at != std::string::npos && std::atoi(config.c_str() + at + 9) >= 3;
  }();
  return misreads;
}

}  // namespace paradnn
