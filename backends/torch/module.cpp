// The LibTorch module: libparadnn_backend_torch.so, loaded on the first
// torch or torch_cuda case.
#include <cstring>

#include "backends/torch/torch_backend.h"

namespace {

paradnn::Backend* Make(const char* name) {
  if (std::strcmp(name, "torch") == 0) {
    return paradnn::MakeTorchBackend(/*cuda=*/false).release();
  }
  if (std::strcmp(name, "torch_cuda") == 0) {
    return paradnn::MakeTorchBackend(/*cuda=*/true).release();
  }
  return nullptr;
}

}  // namespace

PARADNN_BACKEND_MODULE(Make)
