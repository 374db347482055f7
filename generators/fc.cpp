// Fully connected: layers x (Dense(nodes) + ReLU), then Dense(output).
#include "generators/spec.h"

namespace paradnn {
namespace {

Graph BuildFc(const ModelSpec& s) {
  const int64_t layers = s.Int("layers"), nodes = s.Int("nodes");
  Graph g;
  g.Reserve(2 * layers + 3);
  int x = g.Input({s.Int("batch"), s.Int("input")});
  for (int64_t i = 0; i < layers; ++i) x = g.ReLU(g.Dense(x, nodes));
  g.SoftmaxCrossEntropy(g.Dense(x, s.Int("output")));
  return g;
}

}  // namespace

FamilyDef FcFamily() {
  return {"FC",
          {{"layers", {}},
           {"nodes", {}},
           {"input", {}},
           {"output", {}},
           {"batch", {}}},
          BuildFc};
}

}  // namespace paradnn
