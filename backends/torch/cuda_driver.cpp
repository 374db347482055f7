#include "backends/torch/cuda_driver.h"

#include <dlfcn.h>

#include <cstddef>

namespace paradnn::cuda_driver {
namespace {

// The driver API's types, as cuda.h declares them: results are ints (0:
// CUDA_SUCCESS), devices ints, contexts opaque pointers.
using Result = int;

// The driver, loaded once; nullptr where there is none.
void* Driver() {
  static void* const handle = [] {
    void* h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h == nullptr) return h;
    using Init = Result (*)(unsigned);
    const auto init = reinterpret_cast<Init>(dlsym(h, "cuInit"));
    return init != nullptr && init(0) == 0 ? h : nullptr;
  }();
  return handle;
}

template <typename F>
F Function(const char* name) {
  void* driver = Driver();
  return driver == nullptr ? nullptr : reinterpret_cast<F>(dlsym(driver, name));
}

// The device of that ordinal, or -1.
int Device(int ordinal) {
  const auto get = Function<Result (*)(int*, int)>("cuDeviceGet");
  int device = -1;
  return get != nullptr && get(&device, ordinal) == 0 ? device : -1;
}

}  // namespace

std::string DeviceName(int ordinal) {
  const int device = Device(ordinal);
  const auto name = Function<Result (*)(char*, int, int)>("cuDeviceGetName");
  char buf[256] = {};
  if (device < 0 || name == nullptr ||
      name(buf, sizeof(buf) - 1, device) != 0) {
    return "";
  }
  return buf;
}

DeviceMemory Memory(int ordinal) {
  const int device = Device(ordinal);
  const auto retain =
      Function<Result (*)(void**, int)>("cuDevicePrimaryCtxRetain");
  const auto release =
      Function<Result (*)(int)>("cuDevicePrimaryCtxRelease_v2");
  const auto push = Function<Result (*)(void*)>("cuCtxPushCurrent_v2");
  const auto pop = Function<Result (*)(void**)>("cuCtxPopCurrent_v2");
  const auto info = Function<Result (*)(size_t*, size_t*)>("cuMemGetInfo_v2");
  DeviceMemory m;
  void* context = nullptr;
  if (device < 0 || retain == nullptr || release == nullptr ||
      push == nullptr || pop == nullptr || info == nullptr ||
      retain(&context, device) != 0) {
    return m;
  }
  if (push(context) == 0) {
    size_t free = 0, total = 0;
    if (info(&free, &total) == 0) {
      m.free = static_cast<int64_t>(free);
      m.total = static_cast<int64_t>(total);
    }
    pop(&context);
  }
  release(device);
  return m;
}

}  // namespace paradnn::cuda_driver
