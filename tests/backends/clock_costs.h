// The time a step of the clock backend (clock_module.cpp) takes, by
// definition: what its runner spins for, and the truth the bricks tests
// check estimates against.
#pragma once

#include <cstdint>
#include <vector>

#include "generators/graph.h"

namespace paradnn::test {

constexpr double kClockStepUs = 300;  // once per step
// The free memory of clockgpu's device: 8 MiB, so that a case's limit
// there (80% of it) is far below the host's.
constexpr int64_t kClockDeviceFreeBytes = int64_t{8} << 20;
// A layer: a fixed part and one per 100 elements of its output. Data
// inputs cost nothing, and neither does a brick's mean loss, which no
// model has; an inference step computes no loss, as real backends' do not.
inline double ClockLayerUs(const Layer& l) {
  if (l.op == Op::kInput || l.op == Op::kTokens || l.op == Op::kMeanLoss) {
    return 0;
  }
  return 40 + static_cast<double>(Elements(l.shape)) / 100;
}

// What a step spins for, in order: per layer (and per gradient sum, in
// training) its microseconds and whether it is a matrix product (its
// profile class, gemm; the others are elementwise), then the step's fixed
// cost, which no operation covers.
struct ClockPart {
  double us = 0;
  bool gemm = false;
  int layer = -1;         // the layer it is part of (its profile's)
  bool backward = false;  // a gradient sum, in the layer's backward
};
inline std::vector<ClockPart> ClockParts(const Graph& g, Mode mode) {
  std::vector<ClockPart> parts;
  std::vector<int> readers(g.size(), 0);
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    if (mode == Mode::kTrain || l.op != Op::kSoftmaxCrossEntropy) {
      const bool gemm = l.op == Op::kDense || l.op == Op::kConv2d ||
                        l.op == Op::kRecurrent || l.op == Op::kAttention;
      if (ClockLayerUs(l) > 0) parts.push_back({ClockLayerUs(l), gemm, i});
    }
    for (int x : l.inputs) ++readers[x];
  }
  if (mode == Mode::kTrain) {
    // Backward adds the gradients of a tensor that k layers read: k - 1
    // adds of its shape.
    const std::vector<bool> grad = g.NeedsGrad();
    for (int x = 0; x < g.size(); ++x) {
      if (!grad[x] || readers[x] < 2) continue;
      Layer add;
      add.op = Op::kAdd;
      add.shape = g.layer(x).shape;
      parts.push_back({(readers[x] - 1) * ClockLayerUs(add), false, x, true});
    }
  }
  return parts;
}

inline double ClockStepUs(const Graph& g, Mode mode) {
  double us = kClockStepUs;
  for (const ClockPart& p : ClockParts(g, mode)) us += p.us;
  return us;
}

}  // namespace paradnn::test
