// Checks on the values a backend computed.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace paradnn::test {

// Whether every value is a bf16 number widened to float (its low 16 bits
// zero): what a computation in bf16 gives, and one in fp32 almost never.
inline bool AllBf16(const std::vector<float>& values) {
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    if ((bits & 0xffff) != 0) return false;
  }
  return !values.empty();
}

}  // namespace paradnn::test
