// The LibTorch profiler's events as a step's profile: each operation's
// self time in its class (backends/profile.h).
#pragma once

#include <torch/csrc/autograd/profiler_legacy.h>

#include <vector>

#include "backends/profile.h"

namespace paradnn {

// The profiler's scopes around the parameter update and, data-parallel,
// the gradients' all-reduce: everything inside is of their class.
inline constexpr char kOptimizerScope[] = "paradnn::optimizer";
inline constexpr char kAllReduceScope[] = "paradnn::allreduce";

// Self time (own time minus nested operations') of every range of one
// thread's events; everything inside a scope of ours is of its class.
void AddSelfTimes(
    const std::vector<torch::autograd::profiler::LegacyEvent>& events,
    StepProfile* profile);

}  // namespace paradnn
