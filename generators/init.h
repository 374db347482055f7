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

// A batch norm's running mean and variance: the ones a file gives
// (Layer::values), else a fresh model's, 0 and 1.
struct RunningStatistics {
  std::vector<float> mean, variance;
};
RunningStatistics InitRunningStatistics(const Layer& batch_norm);

// Inputs and labels are functions of the example too: with `first_example`
// f, a graph of batch b holds examples f..f+b-1, so two ranks of batch b
// (f = 0 and f = b) hold between them exactly the examples of one graph of
// batch 2b (f = 0), the same values in the same order: a data-parallel run
// checked against one rank stepping on the whole batch.

// Float data for a kInput layer (the first by default), uniform in [-1, 1];
// the batch is its first dimension.
std::vector<float> InitInput(const Graph& g, uint64_t seed, int layer = -1,
                             int64_t first_example = 0);
// Token ids for a kTokens layer (the first by default), uniform in
// [0, vocab), [length, batch].
std::vector<int64_t> InitTokens(const Graph& g, uint64_t seed, int layer = -1,
                                int64_t first_example = 0);
// Labels in [0, classes), one per row of the logits ([length, batch] rows
// where the input is tokens, [batch, height, width] where there is a class
// per pixel, else [batch]).
std::vector<int64_t> InitLabels(const Graph& g, uint64_t seed,
                                int64_t first_example = 0);
// The labels' shape: [rows], or the logits' without their classes'
// dimension where there is a class per pixel ([N, H, W]).
Shape LabelShape(const Graph& g);

// What a decoder's key/value cache (a kCachedAttention layer) holds before
// the first step: the keys and values of the positions before the step's,
// uniform in [-1, 1], laid out [2 (keys, values), batch, kv_heads, context,
// head size].
std::vector<float> InitCache(const Graph& g, uint64_t seed, int layer);

}  // namespace paradnn
