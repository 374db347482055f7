// Embedding -> `layers` stacked cells (hidden = embed) -> Dense(vocab) at
// every time step.
#include "generators/spec.h"

namespace paradnn {
namespace {

Cell ParseCell(const std::string& s) {
  if (s == "lstm") return Cell::kLstm;
  if (s == "gru") return Cell::kGru;
  return Cell::kRnn;
}

Graph BuildRnn(const ModelSpec& s) {
  const int64_t embed = s.Int("embed");
  const int64_t vocab = s.Int("vocab");
  const Cell cell = ParseCell(s.Str("cell"));
  const int64_t layers = s.Int("layers");
  Graph g;
  g.Reserve(layers + 4);
  int x = g.Embedding(g.Tokens(s.Int("length"), s.Int("batch"), vocab), embed);
  for (int64_t i = 0; i < layers; ++i) x = g.Recurrent(x, cell, embed);
  g.SoftmaxCrossEntropy(g.Dense(x, vocab));
  return g;
}

}  // namespace

FamilyDef RnnFamily() {
  return {"RNN",
          {{"cell", {"rnn", "lstm", "gru"}},
           {"layers", {}},
           {"embed", {}},
           {"vocab", {}},
           {"length", {}},
           {"batch", {}}},
          BuildRnn};
}

}  // namespace paradnn
