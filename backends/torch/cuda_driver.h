// The CUDA driver's answers LibTorch's C++ API does not give: a device's
// name and its free memory. Called through the driver's C interface
// (libcuda.so.1, part of every NVIDIA driver), so that the module builds
// without CUDA's headers and runs without a driver.
#pragma once

#include <cstdint>
#include <string>

namespace paradnn::cuda_driver {

struct DeviceMemory {
  int64_t free = 0;  // bytes, as the driver counts them now
  int64_t total = 0;
};

// CUDA device `ordinal` (as CUDA_VISIBLE_DEVICES numbers them): its name
// ("NVIDIA H200"), "" where there is no driver or no such device.
std::string DeviceName(int ordinal);

// Its memory, through its primary context (the one LibTorch uses, so
// nothing else is allocated); zeros where there is no driver or device.
// Both initialize the driver, which a process must not have done before
// it forks a child that uses CUDA.
DeviceMemory Memory(int ordinal);

}  // namespace paradnn::cuda_driver
