#pragma once

#include "core/run.h"

namespace paradnn {

// Writes --paradnn_profile_out: per profiled case its step time, the share
// of each operation class, and its operations by self time per step.
void WriteProfiles(const Run& run);

}  // namespace paradnn
