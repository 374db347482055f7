// The LibTorch backend. This header includes no LibTorch header.
#pragma once

#include <cstdint>
#include <memory>

#include "backends/backend.h"

namespace paradnn {

// "torch" on the CPU, or "torch_cuda" on the first GPU.
std::unique_ptr<Backend> MakeTorchBackend(bool cuda);

// The number of values in the parameters of the LibTorch modules built for
// the graph, counted by LibTorch.
int64_t TorchModuleParameterCount(const Graph& g);

// LibTorch's intra-op thread count now.
int TorchThreads();
// Whether this LibTorch has CUDA and sees a GPU.
bool TorchHasCuda();
// Whether LibTorch's oneDNN is version 3 or later on an AMD CPU that hides
// its cache sizes (AmdCacheLeafMissing, machine/caches.h), where it
// misreads them: the backend then turns LibTorch's oneDNN off.
bool TorchOneDnnMisreadsCaches();

}  // namespace paradnn
