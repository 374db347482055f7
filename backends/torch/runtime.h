// What the LibTorch backend's files share: the data type a case's runs
// in, tensors from and to vectors, LibTorch's errors as the backend's,
// and the thread count.
#pragma once

#include <torch/torch.h>

#include <stdexcept>
#include <vector>

#include "generators/graph.h"

namespace paradnn {

inline torch::ScalarType TorchType(DType d) {
  switch (d) {
    case DType::kBf16:
      return torch::kBFloat16;
    case DType::kFp16:
      return torch::kHalf;
    case DType::kFp32:
      break;
  }
  return torch::kFloat;
}

// A tensor that owns a copy of the values.
template <typename T>
torch::Tensor FromVector(const std::vector<T>& v, const Shape& shape) {
  return torch::from_blob(const_cast<T*>(v.data()), shape,
                          c10::CppTypeToScalarType<T>::value)
      .clone();
}

inline std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(),
                            c.data_ptr<float>() + c.numel());
}

// LibTorch's messages carry a backtrace; the reason is the part before it.
template <typename F>
auto Translated(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

// LibTorch's set_num_threads rebuilds its pthreadpool on every call, to
// the same count too, and the new worker spins for about 20 ms of a core
// before it sleeps (21-25 ms each, LibTorch 1.13 here). Called as each case
// was prepared, it took a core from the first steps after: in a bricks run,
// which times a brick in one or two steps right after preparing it, a third
// of the small LibTorch bricks' steps came out about 4 ms (a scheduler
// tick) longer (docs/bricks.md at 23ff8d0, "A thread pool built again").
inline void UseThreads(int threads) {
  if (torch::get_num_threads() != threads) torch::set_num_threads(threads);
}

}  // namespace paradnn
