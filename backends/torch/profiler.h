// The LibTorch profiler's events as a step's profile: each operation's
// self time in its class (backends/profile.h).
#pragma once

#include <torch/csrc/autograd/profiler_legacy.h>

#include <string>
#include <utility>
#include <vector>

#include "backends/profile.h"

namespace paradnn {

// The profiler's scopes around the parameter update and, data-parallel,
// the gradients' all-reduce: everything inside is of their class.
inline constexpr char kOptimizerScope[] = "paradnn::optimizer";
inline constexpr char kAllReduceScope[] = "paradnn::allreduce";

// The scope of graph layer i's forward operations: "paradnn::layer/i".
std::string LayerScope(int i);

// The autograd sequence numbers [first, end) a layer's forward took.
struct LayerSequence {
  uint64_t first = 0, end = 0;
  int layer = -1;
};

// Self time (own time minus nested operations') of every range of one
// thread's events; everything inside a scope of ours is of its class.
// Each is attributed to its layer: a forward operation by the layer scope
// around it, a backward one by the autograd node it runs in, whose
// sequence number falls in one of the layer's `sequences` (in increasing
// order). A layer scope's own time (LibTorch's between operations) is its
// layer's too.
void AddSelfTimes(
    const std::vector<torch::autograd::profiler::LegacyEvent>& events,
    const std::vector<LayerSequence>& sequences, StepProfile* profile);

}  // namespace paradnn
