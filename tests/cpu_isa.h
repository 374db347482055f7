// Whether this CPU has what oneDNN calls avx512_core: AVX-512 F, BW, VL and
// DQ (Skylake-SP and later). oneDNN's bf16 kernels and its jit softmax
// backward need it; asked of the CPU itself, not of oneDNN, so that the
// tests check the library's choice against an independent answer.
#pragma once

namespace paradnn::test {

inline bool HasAvx512Core() {
  return __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq");
}

}  // namespace paradnn::test
