// The time a step of the clock backend (clock_module.cpp) takes, by
// definition: what its runner spins for, and the truth the bricks tests
// check estimates against.
#pragma once

#include <vector>

#include "generators/graph.h"

namespace paradnn::test {

constexpr double kClockStepUs = 300;  // once per step
// A layer: a fixed part and one per 100 elements of its output. Data
// inputs cost nothing, and neither does a brick's mean loss, which no
// model has; an inference step computes no loss, as real backends' do not.
inline double ClockLayerUs(const Layer& l) {
  if (l.op == Op::kInput || l.op == Op::kTokens || l.op == Op::kMeanLoss) {
    return 0;
  }
  return 40 + static_cast<double>(Elements(l.shape)) / 100;
}

inline double ClockStepUs(const Graph& g, Mode mode) {
  double us = kClockStepUs;
  std::vector<int> readers(g.size(), 0);
  for (const Layer& l : g.layers()) {
    if (mode == Mode::kTrain || l.op != Op::kSoftmaxCrossEntropy) {
      us += ClockLayerUs(l);
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
      us += (readers[x] - 1) * ClockLayerUs(add);
    }
  }
  return us;
}

}  // namespace paradnn::test
