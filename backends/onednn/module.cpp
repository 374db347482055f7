// The oneDNN module: libparadnn_backend_onednn.so, loaded on the first
// onednn case.
#include <cstring>

#include "backends/onednn/onednn_backend.h"

namespace {

paradnn::Backend* Make(const char* name) {
  return std::strcmp(name, "onednn") == 0
             ? paradnn::MakeOnednnBackend().release()
             : nullptr;
}

}  // namespace

PARADNN_BACKEND_MODULE(Make)
