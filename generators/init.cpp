#include "generators/init.h"

#include "generators/check.h"

namespace paradnn {
namespace {

// Stream ids outside the range of parameter indices: one per input layer,
// then labels.
constexpr uint64_t kInputStream = 1ull << 40;
constexpr uint64_t kLabelStream = 1ull << 41;

// splitmix64: a counter-based generator, so any element can be computed
// independently of the others.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t Bits(uint64_t seed, uint64_t stream, uint64_t i) {
  return Mix(Mix(seed ^ Mix(stream)) + i);
}

// Uniform in [-1, 1) with 24 random bits, exact in fp32.
float Symmetric(uint64_t bits) {
  return static_cast<float>(static_cast<int64_t>(bits >> 40) - (1 << 23)) /
         static_cast<float>(1 << 23);
}

std::vector<int64_t> Ints(uint64_t seed, uint64_t stream, int64_t n,
                          int64_t range) {
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = static_cast<int64_t>(Bits(seed, stream, i) % range);
  }
  return out;
}

int FindLayer(const Graph& g, Op op) {
  for (int i = 0; i < g.size(); ++i) {
    if (g.layer(i).op == op) return i;
  }
  return -1;
}

}  // namespace

void InitParam(const ParamTensor& p, uint64_t seed, int index, float* out) {
  const int64_t n = Elements(p.shape);
  if (p.bound <= 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p.fill);
    return;
  }
  const float bound = static_cast<float>(p.bound);
  for (int64_t i = 0; i < n; ++i) {
    out[i] = bound * Symmetric(Bits(seed, index, i));
  }
}

std::vector<float> InitParam(const Graph& g, uint64_t seed, int index) {
  const std::vector<ParamTensor> params = g.Params();
  const ParamTensor& p = params.at(index);
  std::vector<float> out(Elements(p.shape));
  InitParam(p, seed, index, out.data());
  return out;
}

std::vector<float> InitInput(const Graph& g, uint64_t seed, int layer) {
  const int i = layer >= 0 ? layer : FindLayer(g, Op::kInput);
  PARADNN_CHECK(i >= 0 && g.layer(i).op == Op::kInput, "not a float input");
  std::vector<float> out(Elements(g.layer(i).shape));
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = Symmetric(Bits(seed, kInputStream + i, k));
  }
  return out;
}

std::vector<int64_t> InitTokens(const Graph& g, uint64_t seed) {
  int i = FindLayer(g, Op::kTokens);
  PARADNN_CHECK(i >= 0, "graph has no token input");
  const Layer& l = g.layer(i);
  return Ints(seed, kInputStream, Elements(l.shape), l.vocab);
}

std::vector<int64_t> InitLabels(const Graph& g, uint64_t seed) {
  const Shape& logits = g.layer(g.logits()).shape;
  return Ints(seed, kLabelStream, Elements(logits) / logits.back(),
              logits.back());
}

}  // namespace paradnn
