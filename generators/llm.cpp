// A Llama-style decoder serving requests: token embedding -> `layers`
// pre-norm blocks (RMSNorm; Q, K and V projections, `kv_heads` key/value
// heads shared by groups of the `heads` query heads, rotary positions,
// attention over the key/value cache, output projection, residual add;
// RMSNorm; SwiGLU feed-forward of width `ffn`; residual add) -> RMSNorm ->
// the last position's projection to `vocab` (untied), no biases. Phase
// `prefill` takes the `context` prompt tokens of each sequence at once,
// causal, filling the cache; phase `decode` one new token per sequence,
// attending over exactly `context` positions of the cache, its own
// included: every step does the same work, writing its keys and values into
// the same last slot. Inference only.
#include "generators/spec.h"

namespace paradnn {
namespace {

Graph BuildLlm(const ModelSpec& s) {
  const int64_t d = s.Int("d_model"), heads = s.Int("heads");
  const int64_t kv_heads = s.Int("kv_heads"), ffn = s.Int("ffn");
  const int64_t context = s.Int("context"), layers = s.Int("layers");
  const int64_t kv = d / heads * kv_heads;
  const int64_t length = s.Str("phase") == "prefill" ? context : 1;
  const int64_t position = context - length;
  Graph g;
  g.Reserve(16 * layers + 6);
  int x = g.Embedding(g.Tokens(length, s.Int("batch"), s.Int("vocab")), d);
  for (int64_t i = 0; i < layers; ++i) {
    const int h = g.RmsNorm(x);
    const int q = g.Rope(g.Dense(h, d, false), heads, position);
    const int k = g.Rope(g.Dense(h, kv, false), kv_heads, position);
    const int v = g.Dense(h, kv, false);
    const int a = g.CachedAttention(q, k, v, heads, kv_heads, context);
    x = g.Add(g.Dense(a, d, false), x);
    // One statement each: layers (and their parameters' initial values)
    // come in the order written, not in the compiler's order of arguments.
    const int n = g.RmsNorm(x);
    const int gate = g.Dense(n, ffn, false);
    const int up = g.Dense(n, ffn, false);
    x = g.Add(g.Dense(g.SwiGlu(gate, up), d, false), x);
  }
  g.Dense(g.LastPosition(g.RmsNorm(x)), s.Int("vocab"), false);
  return g;
}

std::string CheckLlm(const ModelSpec& s) {
  const int64_t d = s.Int("d_model"), heads = s.Int("heads");
  const int64_t kv_heads = s.Int("kv_heads");
  if (heads % kv_heads != 0) {
    return "kv_heads:" + s.Str("kv_heads") +
           " does not divide heads:" + s.Str("heads") +
           ": expected a kv_heads that divides heads (1: multi-query, "
           "heads: multi-head attention)";
  }
  if (d % heads != 0) {
    return "heads:" + s.Str("heads") +
           " does not divide d_model:" + s.Str("d_model") +
           ": expected a d_model that is a multiple of heads";
  }
  if ((d / heads) % 2 != 0) {
    return "d_model:" + s.Str("d_model") + " / heads:" + s.Str("heads") +
           " is odd: expected an even head size (rotary positions turn "
           "pairs)";
  }
  return "";
}

}  // namespace

FamilyDef LlmFamily() {
  FamilyDef f{"LLM",
              {{"layers", {}},
               {"d_model", {}},
               {"heads", {}},
               {"kv_heads", {}},
               {"ffn", {}},
               {"vocab", {}},
               {"context", {}},
               {"batch", {}},
               {"phase", {"prefill", "decode"}}},
              BuildLlm,
              CheckLlm};
  f.modes = {Mode::kInfer};
  f.modes_why =
      "the LLM family serves requests (prefill and decode over a key/value "
      "cache): inference only";
  return f;
}

}  // namespace paradnn
