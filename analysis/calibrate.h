// paradnn calibrate: this machine's peaks, each backend's own GEMM and the
// memory's bandwidth, measured, into the platform file (machine/platform.h).
#pragma once

#include <cstdint>

#include "machine/platform.h"

namespace paradnn {

// The data types calibrate measures a GEMM in: the case data types, and
// TF32, the math NVIDIA GPUs may run fp32 products in.
constexpr const char* kGemmTypes[] = {"fp32", "tf32", "fp16", "bf16"};

// The GEMM shapes (m, n, k) calibrate measures; the best of them is a
// backend's roof. Large ones, and the batch-sized products of dense layers
// whose operands stay in cache, where a backend runs fastest.
constexpr int64_t kGemmShapes[][3] = {{2048, 4096, 4096}, {4096, 4096, 1024},
                                      {1024, 1024, 1024}, {512, 1024, 1024},
                                      {512, 256, 2048},   {64, 1024, 1024}};

// Measures every backend's own GEMM over kGemmShapes in each of
// kGemmTypes it has, best of several runs, a STREAM triad with `threads`
// threads, and each other device's memory; progress on stderr.
Platform Calibrate(int threads);

}  // namespace paradnn
