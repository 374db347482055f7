// Deterministic weights and inputs: functions of (seed, tensor index,
// element index) only, so every backend and every run sees the same values.
#pragma once

#include <cstdint>
#include <vector>

#include "generators/graph.h"

namespace paradnn {

// Values of Graph::Params()[index].
std::vector<float> InitParam(const Graph& g, uint64_t seed, int index);
void InitParam(const ParamTensor& p, uint64_t seed, int index, float* out);

// Float data for a kInput layer (the first by default), uniform in [-1, 1].
std::vector<float> InitInput(const Graph& g, uint64_t seed, int layer = -1);
// Token ids for the kTokens layer, uniform in [0, vocab), [length, batch].
std::vector<int64_t> InitTokens(const Graph& g, uint64_t seed);
// Labels in [0, classes), one per row of the logits.
std::vector<int64_t> InitLabels(const Graph& g, uint64_t seed);

}  // namespace paradnn
