// oneDNN 3 on an AMD CPU that hides its cache sizes (AmdCacheLeafMissing,
// machine/caches.h) divides by zero creating some convolutions' primitive
// descriptors (a ResNet-50's, a DenseNet-121's), which kills the process:
// the backend cannot step around it, and a sweep reports such a case as
// crashed in its isolated process. The tests that run those models on the
// oneDNN backend name the defect and leave that backend out there. Debian
// links LibTorch to the same oneDNN, which the LibTorch backend then turns
// off (TorchOneDnnMisreadsCaches).
#pragma once

#include <string>

#if __has_include(<oneapi/dnnl/dnnl_version.h>)
#include <oneapi/dnnl/dnnl_version.h>
#endif

#include "machine/caches.h"

namespace paradnn::test {

// Why the oneDNN backend cannot run every convolution here, or "".
inline std::string OnednnCacheDefect() {
#if !defined(DNNL_VERSION_MAJOR)
  return "";
#else
  if (DNNL_VERSION_MAJOR < 3 || !AmdCacheLeafMissing()) return "";
  return "oneDNN " + std::to_string(DNNL_VERSION_MAJOR) + "." +
         std::to_string(DNNL_VERSION_MINOR) +
         " misreads the caches of this CPU, which hides their sizes "
         "(AmdCacheLeafMissing): left out";
#endif
}

}  // namespace paradnn::test
