// The cost model: every number paradnn reports about a model comes from here,
// computed over the layer graph (docs/cost_model.md has the rules).
#pragma once

#include <cstdint>
#include <vector>

#include "generators/fusion.h"
#include "generators/graph.h"

namespace paradnn {

struct Cost {
  int64_t params = 0;          // trainable values
  int64_t flops = 0;           // matrix-like work per step, 2 per multiply-add
  int64_t elementwise = 0;     // elementwise operations per step, not in flops
  int64_t bytes = 0;           // minimum traffic of one step
  int64_t gradient_bytes = 0;  // of which layer outputs' gradients (training)
  // Of which read: the parameters, a decoder's caches and the data; the
  // rest is written (outputs, gradients, the update's new weights).
  int64_t read_bytes = 0;
  double intensity = 0;  // flops / bytes
  // Estimated peak bytes a backend holds: one that plans a buffer for
  // every activation once (oneDNN's), and one that frees each activation
  // after its last reader (Backend::RecyclesWithinStep, LibTorch's). In
  // training both keep what backward needs: the two are equal.
  int64_t memory = 0;
  int64_t streaming_memory = 0;
  int64_t kv_cache_bytes = 0;  // decoders: their key/value caches
};

// With a fusion plan, the step of a backend that runs its groups fused
// (generators/fusion.h): each group writes its output alone, and a batch
// norm folded into a convolution is read as the convolution's bias.
Cost ComputeCost(const Graph& g, Mode mode, DType dtype,
                 const FusionPlan* plan = nullptr);

// Bytes each rank sends per step when `world` ranks average the gradients
// (one per parameter, in the step's data type) with a ring all-reduce:
// 2 (world - 1) / world of the gradients; 0 alone.
int64_t AllReduceTraffic(const Cost& cost, DType dtype, int world);

// Matrix-like FLOPs of one layer's forward pass (0 for other layers).
int64_t ForwardFlops(const Graph& g, int layer);
// And of its backward pass in training; needs_grad is Graph::NeedsGrad().
int64_t BackwardFlops(const Graph& g, int layer,
                      const std::vector<bool>& needs_grad);

// One layer's part of a step: its matrix FLOPs and the least bytes each
// pass moves. Forward reads the layer's inputs and parameters (a decoder's
// attention its cache too) and writes its output; backward (training,
// where the output takes a gradient) reads the output's gradient, the
// inputs and parameters again, and writes the parameters' gradients and
// those of the inputs that take one; the update (training) reads the
// parameters and their gradients and writes the parameters. An embedding
// bag's parameters are the rows a step looks up. A view (flatten, first
// token) moves none, and a data input is no work of the step's: its
// readers read it.
struct LayerCost {
  int64_t forward_flops = 0, backward_flops = 0;
  int64_t forward_bytes = 0, backward_bytes = 0, update_bytes = 0;
  int64_t read_bytes = 0;  // of the three passes' bytes, those read
  int64_t bytes() const {
    return forward_bytes + backward_bytes + update_bytes;
  }
};
LayerCost ComputeLayerCost(const Graph& g, int layer, Mode mode, DType dtype);
// A fused group's part of an inference step (generators/fusion.h): its
// layers' FLOPs; it reads the anchor's inputs and parameters (a folded
// batch norm as a bias) and a sum's other operand, and writes its output
// once.
LayerCost ComputeGroupCost(const Graph& g, const FusedGroup& group,
                           DType dtype);

// A cached attention's (query, key) pairs per sequence that its mask
// allows, and its key/value cache's bytes (0 for other layers).
int64_t AllowedPairs(const Layer& l);
// The rows of an embedding bag's table that one step looks up, expected:
// of n = hotness x batch ids drawn uniformly from V rows (InitTokens),
// V (1 - (1 - 1/V)^n) are distinct. A step reads, and in training
// updates, those rows only.
int64_t RowsLookedUp(const Graph& g, int layer);
int64_t KvCacheBytes(const Layer& l, int64_t element_size);

}  // namespace paradnn
