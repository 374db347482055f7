// ResNet v1 as in TensorFlow's official model, with residual or bottleneck
// blocks: stem, four groups of `blocks` blocks (or one count per group:
// blocks:3-4-6-3 is ResNet-50's), global pool, Dense(output).
#include "generators/spec.h"

namespace paradnn {
namespace {

int ConvBn(Graph& g, int x, int64_t channels, int64_t kernel, int64_t stride) {
  return g.BatchNorm(g.Conv2d(x, channels, kernel, stride, kernel / 2));
}

// The first block of a group projects its shortcut (1x1 conv with the
// group's stride + batch norm); the others add their input unchanged.
int Block(Graph& g, int x, bool bottleneck, int64_t filters, int64_t stride,
          bool project) {
  int64_t out = bottleneck ? 4 * filters : filters;
  int shortcut = project ? ConvBn(g, x, out, 1, stride) : x;
  int y;
  if (bottleneck) {
    y = g.ReLU(ConvBn(g, x, filters, 1, 1));
    y = g.ReLU(ConvBn(g, y, filters, 3, stride));
    y = ConvBn(g, y, out, 1, 1);
  } else {
    y = g.ReLU(ConvBn(g, x, filters, 3, stride));
    y = ConvBn(g, y, filters, 3, 1);
  }
  return g.ReLU(g.Add(y, shortcut));
}

Graph BuildCnn(const ModelSpec& s) {
  const bool bottleneck = s.Str("block") == "bottleneck";
  const int64_t filters = s.Int("filters");
  const int64_t image = s.Int("image");
  Graph g;
  int x = g.Input({s.Int("batch"), 3, image, image});
  x = g.ReLU(ConvBn(g, x, filters, 7, 2));
  x = g.MaxPool(x, 3, 2, 1);
  const int64_t strides[4] = {1, 2, 2, 2};
  const std::vector<int64_t> blocks = s.Ints("blocks");
  for (int group = 0; group < 4; ++group) {
    for (int64_t b = 0; b < blocks[group]; ++b) {
      x = Block(g, x, bottleneck, filters << group, b == 0 ? strides[group] : 1,
                b == 0);
    }
  }
  x = g.GlobalAvgPool(x);
  g.SoftmaxCrossEntropy(g.Dense(x, s.Int("output")));
  return g;
}

}  // namespace

FamilyDef CnnFamily() {
  return {"CNN",
          {{"block", {"residual", "bottleneck"}},
           {"blocks", {}, 4},
           {"filters", {}},
           {"image", {}},
           {"output", {}},
           {"batch", {}}},
          BuildCnn};
}

}  // namespace paradnn
