// The oneDNN backend: the layer graph on oneDNN's CPU primitives, forward
// and backward. This header includes no oneDNN header.
#pragma once

#include <memory>

#include "backends/backend.h"

namespace paradnn {

std::unique_ptr<Backend> MakeOnednnBackend();

}  // namespace paradnn
