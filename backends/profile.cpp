#include "backends/profile.h"

#include <algorithm>

namespace paradnn {

std::string ShareCounter(OpClass c) {
  return std::string("time_") + ToString(c) + "_frac";
}

const char* ToString(OpClass c) {
  static const char* const kNames[kOpClasses] = {
      "gemm", "elementwise", "movement", "optimizer", "other", "communication"};
  return kNames[static_cast<int>(c)];
}

void StepProfile::Add(OpClass c, const std::string& op, double seconds) {
  Op& o = ops_[op];
  o.cls = c;
  o.seconds += std::max(0.0, seconds);
  ++o.calls;
}

void StepProfile::SetWall(double seconds, int steps) {
  wall_s_ = seconds;
  steps_ = steps;
}

std::array<double, kOpClasses> StepProfile::Shares() const {
  std::array<double, kOpClasses> s{};
  double covered = 0;
  for (const auto& [name, op] : ops_) {
    s[static_cast<int>(op.cls)] += op.seconds;
    covered += op.seconds;
  }
  const double total = std::max(covered, wall_s_);
  if (total <= 0) {
    s.fill(0);
    s[static_cast<int>(OpClass::kOther)] = 1;
    return s;
  }
  s[static_cast<int>(OpClass::kOther)] += total - covered;
  for (double& v : s) v /= total;
  return s;
}

}  // namespace paradnn
