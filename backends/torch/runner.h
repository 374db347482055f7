// The LibTorch backend's runner: a case's model prepared on a device,
// stepped, profiled, its loss and values read.
#pragma once

#include <torch/torch.h>

#include <memory>

#include "backends/backend.h"

namespace paradnn {

// The model of `job` built, initialized and moved to `device`.
std::unique_ptr<Runner> MakeTorchRunner(const Job& job, const RunOptions& opt,
                                        torch::Device device);

}  // namespace paradnn
