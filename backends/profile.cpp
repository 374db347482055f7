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

void StepProfile::Add(OpClass c, const std::string& op, double seconds,
                      int layer, Pass pass) {
  seconds = std::max(0.0, seconds);
  Op& o = ops_[op];
  o.cls = c;
  o.seconds += seconds;
  ++o.calls;
  if (layer < 0) return;
  LayerProfile& l = layers_[layer];
  (pass == Pass::kBackward ? l.backward_s
   : pass == Pass::kUpdate ? l.update_s
                           : l.forward_s) += seconds;
  l.kernels[op] += seconds;
}

StepProfile StepProfile::FromParts(std::map<std::string, Op> ops,
                                   std::map<int, LayerProfile> layers,
                                   double wall_s, int steps) {
  StepProfile p;
  p.ops_ = std::move(ops);
  p.layers_ = std::move(layers);
  p.SetWall(wall_s, steps);
  return p;
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
