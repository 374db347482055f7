// Checks on the values a backend computed.
#pragma once

#include <algorithm>
#include <cmath>
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

// Largest |a - b| relative to the largest |b|, so that a bound reads as a
// fraction of the values' scale. Sizes must agree, and every value be
// finite: otherwise infinite, which fails every bound (std::max keeps its
// first argument against a NaN, so NaNs would otherwise compare as equal).
inline double RelativeError(const std::vector<float>& a,
                            const std::vector<float>& b) {
  if (a.size() != b.size()) return INFINITY;
  double diff = 0, scale = 1e-30;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i]) || !std::isfinite(b[i])) return INFINITY;
    diff = std::max(diff, std::abs(double(a[i]) - b[i]));
    scale = std::max(scale, std::abs(double(b[i])));
  }
  return diff / scale;
}

}  // namespace paradnn::test
