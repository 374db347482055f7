#include "generators/init.h"

#include <algorithm>

#include "generators/check.h"

namespace paradnn {
namespace {

// Stream ids outside the range of parameter indices: one per input layer,
// then labels.
constexpr uint64_t kInputStream = 1ull << 40;
constexpr uint64_t kLabelStream = 1ull << 41;
constexpr uint64_t kCacheStream = 1ull << 42;  // one per cache layer

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

int FindLayer(const Graph& g, Op op) {
  for (int i = 0; i < g.size(); ++i) {
    if (g.layer(i).op == op) return i;
  }
  return -1;
}

// Integers in [0, range) for a [length, batch] (time-major) or [batch]
// array, numbered example by example from `first_example`.
std::vector<int64_t> ExampleInts(uint64_t seed, uint64_t stream, int64_t length,
                                 int64_t batch, int64_t first_example,
                                 int64_t range) {
  std::vector<int64_t> out(length * batch);
  for (int64_t t = 0; t < length; ++t) {
    for (int64_t b = 0; b < batch; ++b) {
      const uint64_t at = (first_example + b) * length + t;
      out[t * batch + b] = static_cast<int64_t>(Bits(seed, stream, at) % range);
    }
  }
  return out;
}

}  // namespace

void InitParam(const ParamTensor& p, uint64_t seed, int index, float* out) {
  const int64_t n = Elements(p.shape);
  if (p.values) {
    std::copy(p.values->begin(), p.values->end(), out);
    return;
  }
  if (p.bound <= 0) {
    for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(p.fill);
    return;
  }
  const float bound = static_cast<float>(p.bound);
  // Each element from its own counter: the same values on any number of
  // threads, in a fraction of the time a model of billions of parameters
  // takes on one.
#pragma omp parallel for schedule(static)
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

std::vector<float> InitInput(const Graph& g, uint64_t seed, int layer,
                             int64_t first_example) {
  const int i = layer >= 0 ? layer : FindLayer(g, Op::kInput);
  PARADNN_CHECK(i >= 0 && g.layer(i).op == Op::kInput, "not a float input");
  const Shape& shape = g.layer(i).shape;
  std::vector<float> out(Elements(shape));
  const uint64_t offset = first_example * (out.size() / shape[0]);
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = Symmetric(Bits(seed, kInputStream + i, offset + k));
  }
  return out;
}

std::vector<int64_t> InitTokens(const Graph& g, uint64_t seed, int layer,
                                int64_t first_example) {
  const int i = layer >= 0 ? layer : FindLayer(g, Op::kTokens);
  PARADNN_CHECK(i >= 0 && g.layer(i).op == Op::kTokens, "not a token input");
  const Layer& l = g.layer(i);
  return ExampleInts(seed, kInputStream + i, l.shape[0], l.shape[1],
                     first_example, l.vocab);
}

std::vector<int64_t> InitLabels(const Graph& g, uint64_t seed,
                                int64_t first_example) {
  const Shape& logits = g.layer(g.logits()).shape;
  const int64_t classes = logits[g.class_axis()];
  const int64_t rows = Elements(logits) / classes;
  if (LabelShape(g).size() > 1) {
    // A class per pixel: [N, H, W], each example's pixels together.
    const int64_t batch = logits[0], pixels = rows / batch;
    const std::vector<int64_t> by_pixel =
        ExampleInts(seed, kLabelStream, pixels, batch, first_example, classes);
    std::vector<int64_t> out(rows);
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t p = 0; p < pixels; ++p) {
        out[b * pixels + p] = by_pixel[p * batch + b];
      }
    }
    return out;
  }
  const int tokens = FindLayer(g, Op::kTokens);
  const int64_t batch = tokens >= 0 ? g.layer(tokens).shape[1] : rows;
  return ExampleInts(seed, kLabelStream, rows / batch, batch, first_example,
                     classes);
}

Shape LabelShape(const Graph& g) {
  Shape logits = g.layer(g.logits()).shape;
  const int64_t axis = g.class_axis();
  if (axis + 1 == static_cast<int64_t>(logits.size())) {
    return {Elements(logits) / logits[axis]};
  }
  logits.erase(logits.begin() + axis);
  return logits;
}

RunningStatistics InitRunningStatistics(const Layer& batch_norm) {
  const int64_t c = batch_norm.units;
  if (batch_norm.values.size() == 4) {
    return {*batch_norm.values[2], *batch_norm.values[3]};
  }
  return {std::vector<float>(c, 0.f), std::vector<float>(c, 1.f)};
}

std::vector<float> InitCache(const Graph& g, uint64_t seed, int layer) {
  const Layer& l = g.layer(layer);
  PARADNN_CHECK(l.op == Op::kCachedAttention, "not a cached attention");
  std::vector<float> out(2 * l.shape[1] * l.context *
                         (l.units / l.heads * l.kv_heads));
  for (size_t k = 0; k < out.size(); ++k) {
    out[k] = Symmetric(Bits(seed, kCacheStream + layer, k));
  }
  return out;
}

}  // namespace paradnn
