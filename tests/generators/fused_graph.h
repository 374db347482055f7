// A graph with every kind of fused group (generators/fusion.h), for the
// plan's test and the backends' fused steps.
#pragma once

#include <memory>
#include <vector>

#include "generators/graph.h"

namespace paradnn::test {

struct FusedGraph {
  Graph g;
  // The layers the tests name.
  int image, conv1, bn1, relu1, conv2, bn2, add2, relu6, pool, bn3, relu3,
      conv4, swish4, conv5, silu5, add5, conv6, add6, add7, gap, dense8, gelu8,
      dense9, add9, dense10, sigmoid10;
};

// Batch norms with statistics and affine values of their own (as a
// trained model's, which folding must carry), from a fixed sequence.
inline void GiveStatistics(Graph& g, int bn) {
  const int64_t c = g.layer(bn).units;
  auto v = [&](double base, double step) {
    auto out = std::make_shared<std::vector<float>>(c);
    for (int64_t k = 0; k < c; ++k) {
      (*out)[k] = static_cast<float>(base + step * ((k * 7 + bn) % 5));
    }
    return out;
  };
  g.SetValues(bn, {v(0.6, 0.2), v(-0.2, 0.1), v(-0.3, 0.15), v(0.5, 0.3)});
}

inline FusedGraph MakeFusedGraph() {
  FusedGraph f;
  Graph& g = f.g;
  f.image = g.Input({2, 8, 10, 10});
  // convolution, batch norm, ReLU
  f.conv1 = g.Conv2d(f.image, 16, 3, 1, 1);
  f.bn1 = g.BatchNorm(f.conv1);
  f.relu1 = g.ReLU(f.bn1);
  // convolution, batch norm, the residual add (its shortcut's last
  // reader: summed in place), ReLU6
  f.conv2 = g.Conv2d(f.relu1, 16, 3, 1, 1);
  f.bn2 = g.BatchNorm(f.conv2);
  f.add2 = g.Add(f.bn2, f.relu1);
  f.relu6 = g.Relu6(f.add2);
  // a batch norm no convolution writes, with its ReLU
  f.pool = g.MaxPool(f.relu6, 2, 2, 0);
  f.bn3 = g.BatchNorm(f.pool);
  f.relu3 = g.ReLU(f.bn3);
  // a biased pointwise convolution with hard-swish; a depthwise one with
  // SiLU and a sum
  f.conv4 = g.Conv2d(f.relu3, 16, 1, 1, 0, 1, true);
  f.swish4 = g.HardSwish(f.conv4);
  f.conv5 = g.Conv2d(f.swish4, 16, 3, 1, 1, 16, true);
  f.silu5 = g.Silu(f.conv5);
  f.add5 = g.Add(f.silu5, f.relu3);
  // a sum whose shortcut is read again later: summed into a copy
  f.conv6 = g.Conv2d(f.add5, 16, 1, 1, 0);
  f.add6 = g.Add(f.conv6, f.add5);
  f.add7 = g.Add(f.add6, f.add5);
  // dense layers: GELU, a sum, and the output through a sigmoid
  f.gap = g.GlobalAvgPool(f.add7);
  f.dense8 = g.Dense(f.gap, 32);
  f.gelu8 = g.Gelu(f.dense8);
  f.dense9 = g.Dense(f.gelu8, 16);
  f.add9 = g.Add(f.dense9, f.gap);
  f.dense10 = g.Dense(f.add9, 5);
  f.sigmoid10 = g.Sigmoid(f.dense10);
  for (int bn : {f.bn1, f.bn2, f.bn3}) GiveStatistics(g, bn);
  return f;
}

}  // namespace paradnn::test
