// Token and positional embeddings -> `layers` post-norm encoder blocks
// (multi-head self-attention with its Q, K, V and output projections,
// residual add, layer norm, feed-forward with GELU, residual add, layer
// norm) -> Dense(vocab) at every position.
#include "generators/spec.h"

namespace paradnn {
namespace {

Graph BuildTransformer(const ModelSpec& s) {
  const int64_t d = s.Int("d_model");
  const int64_t vocab = s.Int("vocab");
  const int64_t layers = s.Int("layers"), heads = s.Int("heads");
  const int64_t ffn = s.Int("ffn");
  const bool causal = s.Str("causal") == "true";
  Graph g;
  g.Reserve(12 * layers + 5);
  int x = g.Positional(
      g.Embedding(g.Tokens(s.Int("length"), s.Int("batch"), vocab), d));
  for (int64_t i = 0; i < layers; ++i) {
    const int a =
        g.Attention(g.Dense(x, d), g.Dense(x, d), g.Dense(x, d), heads, causal);
    x = g.LayerNorm(g.Add(g.Dense(a, d), x));
    const int f = g.Dense(g.Gelu(g.Dense(x, ffn)), d);
    x = g.LayerNorm(g.Add(f, x));
  }
  g.SoftmaxCrossEntropy(g.Dense(x, vocab));
  return g;
}

std::string CheckTransformer(const ModelSpec& s) {
  if (s.Int("d_model") % s.Int("heads") != 0) {
    return "heads:" + s.Str("heads") +
           " does not divide d_model:" + s.Str("d_model") +
           ": expected a d_model that is a multiple of heads";
  }
  return "";
}

}  // namespace

FamilyDef TransformerFamily() {
  return {"TRANSFORMER",
          {{"layers", {}},
           {"d_model", {}},
           {"heads", {}},
           {"ffn", {}},
           {"length", {}},
           {"vocab", {}},
           {"causal", {"false", "true"}},
           {"batch", {}}},
          BuildTransformer,
          CheckTransformer};
}

}  // namespace paradnn
