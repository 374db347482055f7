// Fully connected: layers x (Dense(nodes) + ReLU), then Dense(output).
#include "generators/spec.h"

namespace paradnn {
namespace {

Graph BuildFc(const ModelSpec& s) {
  Graph g;
  int x = g.Input({s.Int("batch"), s.Int("input")});
  for (int64_t i = 0; i < s.Int("layers"); ++i) {
    x = g.ReLU(g.Dense(x, s.Int("nodes")));
  }
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
