#include "generators/cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace paradnn {

int64_t AllowedPairs(const Layer& l) {
  // The query at position context - length + t sees that many plus one.
  const int64_t length = l.shape[0];
  return length * (l.context - length) + length * (length + 1) / 2;
}

int64_t RowsLookedUp(const Graph& g, int layer) {
  const Layer& l = g.layer(layer);
  if (l.op != Op::kEmbeddingBag) return 0;
  const double rows = static_cast<double>(l.vocab);
  const double ids = static_cast<double>(Elements(g.layer(l.inputs[0]).shape));
  // log1p keeps (1 - 1/V)^n exact for tables of billions of rows.
  return std::llround(-rows * std::expm1(ids * std::log1p(-1 / rows)));
}

int64_t KvCacheBytes(const Layer& l, int64_t element_size) {
  if (l.op != Op::kCachedAttention) return 0;
  return 2 * l.shape[1] * l.context * (l.units / l.heads * l.kv_heads) *
         element_size;
}

int64_t ForwardFlops(const Graph& g, int i) {
  const Layer& l = g.layer(i);
  const Shape& in = l.inputs.empty() ? l.shape : g.layer(l.inputs[0]).shape;
  switch (l.op) {
    case Op::kDense:
      return 2 * Elements(l.shape) * in.back();
    case Op::kConv2d:
    case Op::kConv3d:
      // Each output reads the channels of its group only.
      return 2 * Elements(l.shape) * (in[1] / l.groups) * l.kernel_d *
             l.kernel * l.kernel_w;
    case Op::kRecurrent:
      // Every gate multiplies the step's input and the previous hidden state.
      return 2 * Elements(l.shape) * Gates(l.cell) * (in.back() + l.units);
    case Op::kAttention:
      // Q K^T and the weighted sum of V: 2 x 2 L^2 d per sample. A causal
      // mask does not save work: the products are computed in full.
      return 2 * 2 * Elements(l.shape) * in[0];
    case Op::kCachedAttention:
      // 2 x 2 d per (query, key) pair the mask allows.
      return 2 * 2 * l.units * l.shape[1] * AllowedPairs(l);
    case Op::kCross:
      // V x and U (V x), or W x.
      return 2 * Elements(l.shape) * (l.rank > 0 ? 2 * l.rank : l.units);
    default:
      return 0;
  }
}

int64_t BackwardFlops(const Graph& g, int i,
                      const std::vector<bool>& needs_grad) {
  const Layer& l = g.layer(i);
  const int64_t fwd = ForwardFlops(g, i);
  // The weight gradient always, the input gradient only where the input
  // depends on something trainable. Attention has no weights: its
  // backward is the four products giving the gradients of the scores, V,
  // Q and K, twice the forward.
  if (l.op == Op::kAttention) return 2 * fwd;
  if (l.op == Op::kRecurrent) {
    // Weights: every step's gates against its input and previous state.
    // The gradient through time, h_t to h_(t-1), for t >= 1 always; not
    // into h0, which is zero and constant; into the input where it needs
    // one.
    const int64_t in = g.layer(l.inputs[0]).shape.back();
    const int64_t length = l.shape[0], batch = l.shape[1];
    const int64_t per_step = 2 * batch * Gates(l.cell) * l.units;
    int64_t flops = fwd + per_step * (length - 1) * l.units;
    if (needs_grad[l.inputs[0]]) flops += per_step * length * in;
    return flops;
  }
  if (l.op == Op::kCross && l.rank > 0) {
    // The gradients of U and of V x, then of V (three of forward's two
    // products' size); of x (the fourth) where it needs one.
    return fwd / 2 * 3 + (needs_grad[l.inputs[1]] ? fwd / 2 : 0);
  }
  if (fwd == 0) return 0;
  return fwd + (needs_grad[l.inputs.back()] ? fwd : 0);
}

namespace {

int64_t ForwardElementwise(const Graph& g, int i) {
  const Layer& l = g.layer(i);
  switch (l.op) {
    case Op::kDense:
    case Op::kConv2d:
    case Op::kConv3d: {
      // Weight norm: each weight squared into its norm, then scaled.
      const int64_t weights =
          l.weight_norm < 0 ? 0 : Elements(g.ConvWeights(i));
      return (l.bias ? Elements(l.shape) : 0) + 2 * weights;
    }
    case Op::kSigmoid:
    case Op::kSilu:
    case Op::kRelu6:
    case Op::kHardSwish:
    case Op::kHardSigmoid:
    case Op::kChannelMul:
    case Op::kLayerScale:
    case Op::kBatchNorm:
    case Op::kLayerNorm:
    case Op::kInstanceNorm:
    case Op::kGelu:
    case Op::kPositional:
    case Op::kReLU:
    case Op::kAdd:
      return Elements(l.shape);
    case Op::kAttention:
      // The softmax over every score: batch x heads x L x L.
      return Elements(l.shape) / l.units * l.heads * l.shape[0];
    case Op::kCachedAttention:
      // The softmax over every score the mask allows.
      return l.shape[1] * l.heads * AllowedPairs(l);
    case Op::kRmsNorm:
    case Op::kRope:
    case Op::kSwiGlu:
      return Elements(l.shape);
    case Op::kEmbeddingBag:
      // Every row looked up is added into its example's sum.
      return Elements(g.layer(l.inputs[0]).shape) * l.units;
    case Op::kCross:
      // + b, x0 *, + x.
      return 3 * Elements(l.shape);
    case Op::kMaxPool:
    case Op::kAvgPool:
      return Elements(l.shape) * l.kernel * l.kernel_w;
    case Op::kGlobalAvgPool:
      return Elements(g.layer(l.inputs[0]).shape);
    case Op::kResize:
      // A bilinear output weighs its four nearest inputs.
      return 4 * Elements(l.shape);
    case Op::kRecurrent:
      // Gate activations and the state update, per gate element.
      return Elements(l.shape) * Gates(l.cell);
    case Op::kSoftmaxCrossEntropy:
    case Op::kMeanLoss:
      return Elements(g.layer(l.inputs[0]).shape);
    default:
      return 0;
  }
}

// A flatten is a view of its input's values where they are laid out as
// the graph's shapes say (LibTorch's tensors), and so is a first token (the
// first [batch, units] of [length, batch, units]): they move nothing.
bool IsView(const Layer& l) {
  return l.op == Op::kFlatten || l.op == Op::kFirstToken;
}

int64_t OutputBytes(const Layer& l, int64_t e) {
  if (IsView(l)) return 0;
  return Elements(l.shape) * (l.op == Op::kTokens ? 8 : e);
}

// What a layer holds besides its inputs and output while it runs.
int64_t Workspace(const Layer& l, int64_t e) {
  switch (l.op) {
    case Op::kAttention:
      // The scores and their softmax, batch x heads x L x L each.
      return 2 * Elements(l.shape) / l.units * l.heads * l.shape[0] * e;
    case Op::kCachedAttention:
      // The scores against every cached position, and their softmax.
      return 2 * l.shape[1] * l.heads * l.shape[0] * l.context * e;
    case Op::kRecurrent:
      // Every step's input products: both backends compute them as one
      // product before the steps.
      return Gates(l.cell) * Elements(l.shape) * e;
    case Op::kCross:
      // V x and W x + b, which backward reads too.
      return (Elements(l.shape) / l.units * l.rank + Elements(l.shape)) * e;
    default:
      return 0;
  }
}

// The bytes of layer i's parameters a step reads: an embedding bag's rows
// looked up, all of any other layer's.
int64_t StepParamBytes(const Graph& g, int i, int64_t e) {
  const Layer& l = g.layer(i);
  if (l.op == Op::kEmbeddingBag) return RowsLookedUp(g, i) * l.units * e;
  int64_t n = 0;
  for (const ParamTensor& p : g.Params()) {
    if (p.layer == i) n += Elements(p.shape);
  }
  return n * e;
}

}  // namespace

Cost ComputeCost(const Graph& g, Mode mode, DType dtype,
                 const FusionPlan* plan) {
  const bool train = mode == Mode::kTrain;
  const std::vector<bool> needs_grad = g.NeedsGrad();
  const int64_t e = ElementSize(dtype);
  Cost c;
  for (const ParamTensor& p : g.Params()) c.params += Elements(p.shape);

  int64_t activation_bytes = 0;
  int64_t gradient_bytes = 0;
  int64_t saved = 0;  // bytes recurrent cells and attention keep for backward
  int64_t workspace = 0;  // the largest a layer holds while it runs
  // Inference, freeing as it goes: the activations alive at once, at most.
  std::vector<int> last_reader(g.size(), -1);
  for (int i = 0; i < g.size(); ++i) {
    for (int in : g.layer(i).inputs) last_reader[in] = i;
  }
  int64_t live = 0, peak_live = 0;
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    const bool loss = l.op == Op::kSoftmaxCrossEntropy || l.op == Op::kMeanLoss;
    if (loss && !train) continue;
    const int64_t fwd = ForwardFlops(g, i);
    c.flops += fwd;
    c.elementwise += ForwardElementwise(g, i);
    const int64_t out = Elements(l.shape);
    // A fused group writes its output only: what its layers pass each
    // other stays in registers and is never written.
    if (plan == nullptr || !plan->Hidden(i)) {
      activation_bytes += OutputBytes(l, e);
    }
    // A decoder's attention reads its whole cache and writes the new
    // positions' keys and values into it.
    if (l.op == Op::kCachedAttention) {
      const int64_t cache = KvCacheBytes(l, e);
      c.kv_cache_bytes += cache;
      activation_bytes += cache + cache / l.context * l.shape[0];
      live += cache;  // held from one step to the next
    }
    workspace = std::max(workspace, Workspace(l, e));
    live += OutputBytes(l, e);
    peak_live = std::max(peak_live, live + Workspace(l, e));
    for (int in : l.inputs) {
      if (last_reader[in] == i) live -= OutputBytes(g.layer(in), e);
    }
    if (!train) continue;
    c.flops += BackwardFlops(g, i, needs_grad);
    c.elementwise += ForwardElementwise(g, i);
    if (needs_grad[i] && !IsView(l)) gradient_bytes += out * e;
    // Recurrent layers keep every step's gate pre-activations, of the input
    // and of the hidden products, and the gates' activations for backward;
    // attention its scores and their softmax.
    saved += (l.op == Op::kRecurrent ? 3 : 1) * Workspace(l, e);
  }
  // A step reads every parameter but the rows of embedding bags it does
  // not look up, and updates those it reads (SGD: w -= lr * grad). A
  // bag's gradient holds a row per id looked up, and the ids (LibTorch's
  // sparse gradient).
  int64_t step_params = 0, bag_params = 0, sparse_grad_bytes = 0;
  for (const ParamTensor& p : g.Params()) {
    const Layer& l = g.layer(p.layer);
    if (l.op == Op::kEmbeddingBag) {
      bag_params += Elements(p.shape);
      step_params += RowsLookedUp(g, p.layer) * l.units;
      sparse_grad_bytes +=
          Elements(g.layer(l.inputs[0]).shape) * (l.units * e + 8);
    } else {
      step_params += Elements(p.shape);
    }
  }
  if (train) c.elementwise += 2 * step_params;
  // A batch norm folded into its convolution reads no scale and shift:
  // the convolution reads a bias of its own instead, where it had none.
  if (plan != nullptr) {
    for (const FusedGroup& group : plan->groups) {
      if (group.batch_norm < 0) continue;
      const int64_t channels = g.layer(group.anchor).units;
      step_params -= 2 * channels;
      if (!g.layer(group.anchor).bias) step_params += channels;
    }
  }

  const int64_t weight_bytes = c.params * e;
  const int64_t step_weight_bytes = step_params * e;
  // Initialization makes each parameter's values in fp32 for the backend to
  // convert: the largest parameter in fp32 sits beside the weights made
  // before it.
  int64_t largest = 0;
  for (const ParamTensor& p : g.Params()) {
    largest = std::max(largest, Elements(p.shape));
  }
  const int64_t staging = largest * 4;
  if (train) {
    c.bytes = 2 * step_weight_bytes + activation_bytes + gradient_bytes;
    c.gradient_bytes = gradient_bytes;
    // The weights, their gradients and everything the step writes are
    // alive at once in the backward pass.
    const int64_t grad_bytes = (c.params - bag_params) * e + sparse_grad_bytes;
    c.memory = weight_bytes + grad_bytes + activation_bytes + gradient_bytes +
               saved + staging;
    c.streaming_memory = c.memory;
  } else {
    c.bytes = step_weight_bytes + activation_bytes;
    // Backends that plan their buffers once (oneDNN) keep every
    // activation; LibTorch frees them as it goes and holds less.
    c.memory = weight_bytes + activation_bytes + workspace + staging;
    c.streaming_memory = weight_bytes + peak_live + staging;
  }
  // Read: the weights, once; the caches; the data. Every other byte counted
  // is written.
  c.read_bytes = step_weight_bytes + c.kv_cache_bytes;
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    if (l.op == Op::kInput || l.op == Op::kTokens) {
      c.read_bytes += OutputBytes(l, e);
    }
  }
  c.intensity = c.bytes > 0 ? static_cast<double>(c.flops) / c.bytes : 0;
  return c;
}

int64_t AllReduceTraffic(const Cost& cost, DType dtype, int world) {
  return world > 1 ? 2 * (world - 1) * cost.params * ElementSize(dtype) / world
                   : 0;
}

LayerCost ComputeLayerCost(const Graph& g, int i, Mode mode, DType dtype) {
  const Layer& l = g.layer(i);
  const int64_t e = ElementSize(dtype);
  LayerCost c;
  const bool loss = l.op == Op::kSoftmaxCrossEntropy || l.op == Op::kMeanLoss;
  // The data is made before the step; its readers count reading it.
  const bool data = l.op == Op::kInput || l.op == Op::kTokens;
  if ((loss && mode == Mode::kInfer) || data) return c;
  const int64_t param_bytes = StepParamBytes(g, i, e);
  // A slice reads its own part of its input only.
  int64_t in_bytes = 0;
  if (l.op == Op::kSlice) {
    in_bytes = OutputBytes(l, e);
  } else {
    for (int x : l.inputs) in_bytes += OutputBytes(g.layer(x), e);
  }
  const int64_t cache = KvCacheBytes(l, e);
  c.forward_flops = ForwardFlops(g, i);
  c.read_bytes = in_bytes + param_bytes + cache;
  c.forward_bytes = c.read_bytes + (loss ? 0 : OutputBytes(l, e)) +
                    (cache > 0 ? cache / l.context * l.shape[0] : 0);
  if (mode == Mode::kInfer) return c;
  c.update_bytes = 3 * param_bytes;
  c.read_bytes += 2 * param_bytes;
  const std::vector<bool> needs_grad = g.NeedsGrad();
  if (!needs_grad[i]) return c;
  c.backward_flops = BackwardFlops(g, i, needs_grad);
  // The output's gradient, the inputs and weights again, the weights'
  // gradients and the gradients of the inputs that take one. Moving
  // values (a sum, a concat, a sequence, a class token, a shuffle, a
  // slice) needs no input to pass the gradient back, and a sum's inputs
  // take its output's gradient as it is. A slice's input's gradient is
  // written whole: zeros outside the slice.
  const bool moves = l.op == Op::kAdd || l.op == Op::kConcat ||
                     l.op == Op::kSequence || l.op == Op::kMaps ||
                     l.op == Op::kClassToken || l.op == Op::kChannelShuffle ||
                     l.op == Op::kSlice;
  const int64_t reads =
      (loss ? 0 : OutputBytes(l, e)) + (moves ? 0 : in_bytes) + param_bytes;
  c.read_bytes += reads;
  c.backward_bytes = reads + param_bytes;
  if (l.op == Op::kAdd) return c;
  for (int x : l.inputs) {
    if (needs_grad[x]) c.backward_bytes += OutputBytes(g.layer(x), e);
  }
  return c;
}

LayerCost ComputeGroupCost(const Graph& g, const FusedGroup& group,
                           DType dtype) {
  const int64_t e = ElementSize(dtype);
  const Layer& anchor = g.layer(group.anchor);
  LayerCost c = ComputeLayerCost(g, group.anchor, Mode::kInfer, dtype);
  if (group.batch_norm >= 0) {
    const int64_t channels = anchor.units * e;
    c.read_bytes += anchor.bias ? 0 : channels;
  }
  if (group.shortcut >= 0) {
    c.read_bytes += OutputBytes(g.layer(group.shortcut), e);
  }
  // The anchor's output is the group's, written once at its end.
  c.forward_bytes = c.read_bytes + OutputBytes(g.layer(group.Output()), e);
  for (int m : group.Members()) c.forward_flops += ForwardFlops(g, m);
  return c;
}

}  // namespace paradnn
