// The graphs of FC, CNN and RNN as paradnn built them in C++ before their
// families were declared in files (families/): the reference the files
// are held to, layer by layer (declared_test.cpp).
#pragma once

#include "generators/spec.h"

namespace paradnn::test {

inline Graph ReferenceFc(const ModelSpec& s) {
  const int64_t layers = s.Int("layers"), nodes = s.Int("nodes");
  Graph g;
  int x = g.Input({s.Int("batch"), s.Int("input")});
  for (int64_t i = 0; i < layers; ++i) x = g.ReLU(g.Dense(x, nodes));
  g.SoftmaxCrossEntropy(g.Dense(x, s.Int("output")));
  return g;
}

inline Graph ReferenceRnn(const ModelSpec& s) {
  const int64_t embed = s.Int("embed");
  const int64_t vocab = s.Int("vocab");
  const std::string& name = s.Str("cell");
  const Cell cell = name == "lstm"  ? Cell::kLstm
                    : name == "gru" ? Cell::kGru
                                    : Cell::kRnn;
  Graph g;
  int x = g.Embedding(g.Tokens(s.Int("length"), s.Int("batch"), vocab), embed);
  for (int64_t i = 0; i < s.Int("layers"); ++i) {
    x = g.Recurrent(x, cell, embed);
  }
  g.SoftmaxCrossEntropy(g.Dense(x, vocab));
  return g;
}

inline int ReferenceConvBn(Graph& g, int x, int64_t channels, int64_t kernel,
                           int64_t stride) {
  return g.BatchNorm(g.Conv2d(x, channels, kernel, stride, kernel / 2));
}

// ResNet v1: the first block of a group projects its shortcut.
inline int ReferenceBlock(Graph& g, int x, bool bottleneck, int64_t filters,
                          int64_t stride, bool project) {
  const int64_t out = bottleneck ? 4 * filters : filters;
  const int shortcut = project ? ReferenceConvBn(g, x, out, 1, stride) : x;
  int y;
  if (bottleneck) {
    y = g.ReLU(ReferenceConvBn(g, x, filters, 1, 1));
    y = g.ReLU(ReferenceConvBn(g, y, filters, 3, stride));
    y = ReferenceConvBn(g, y, out, 1, 1);
  } else {
    y = g.ReLU(ReferenceConvBn(g, x, filters, 3, stride));
    y = ReferenceConvBn(g, y, filters, 3, 1);
  }
  return g.ReLU(g.Add(y, shortcut));
}

inline Graph ReferenceCnn(const ModelSpec& s) {
  const bool bottleneck = s.Str("block") == "bottleneck";
  const int64_t filters = s.Int("filters");
  const int64_t image = s.Int("image");
  Graph g;
  int x = g.Input({s.Int("batch"), 3, image, image});
  x = g.ReLU(ReferenceConvBn(g, x, filters, 7, 2));
  x = g.MaxPool(x, 3, 2, 1);
  const int64_t strides[4] = {1, 2, 2, 2};
  const std::vector<int64_t> blocks = s.Ints("blocks");
  for (int group = 0; group < 4; ++group) {
    for (int64_t b = 0; b < blocks[group]; ++b) {
      x = ReferenceBlock(g, x, bottleneck, filters << group,
                         b == 0 ? strides[group] : 1, b == 0);
    }
  }
  x = g.GlobalAvgPool(x);
  g.SoftmaxCrossEntropy(g.Dense(x, s.Int("output")));
  return g;
}

}  // namespace paradnn::test
