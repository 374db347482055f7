// The LibTorch model of a layer graph: torch::nn modules for its layers,
// run by interpreting the graph in order.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/torch/profiler.h"
#include "generators/fusion.h"
#include "generators/graph.h"

namespace paradnn {

// The modules of one layer; at most one is set.
struct LayerModules {
  torch::nn::Linear linear{nullptr};
  torch::nn::Conv2d conv{nullptr};
  torch::nn::Conv3d conv3d{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Embedding embedding{nullptr};
  torch::nn::EmbeddingBag bag{nullptr};
  torch::nn::RNN rnn{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::GRU gru{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  // A positional table's, a class token's, an RMSNorm scale's or a layer
  // scale's holder, and the tensor.
  std::shared_ptr<torch::nn::Module> table;
  torch::Tensor positional;
  // A cross layer's tensors in `table`: V and U, or W (in weight_u), and b;
  // a weight-normed convolution's v, g (in weight_u) and bias; an instance
  // norm's scale (in weight_u) and shift.
  torch::Tensor weight_v, weight_u, bias;
  torch::nn::Module* base = nullptr;  // whichever of the above is set
  torch::Tensor causal_mask;          // attention: true above the diagonal
  // Cached attention: keys and values [batch, kv_heads, context, dh] each
  // (views of one tensor), and true where the mask hides a key from a query
  // of [heads / kv_heads x length] (prefill only).
  torch::Tensor keys, values, cache_mask;
  torch::Tensor rope_cos, rope_sin;  // rotary: [length, 1, 1, dh / 2]
  // Inference with a batch norm folded in (PrepareInference): a convolution's
  // bias, the norm's shift among it; the norm then passes its input on.
  torch::Tensor folded_bias;
  bool folded = false;
};

class TorchModel : public torch::nn::Module {
 public:
  explicit TorchModel(const Graph& g);

  // The caches' first contents (InitCache), in the model's data type.
  void FillCaches(uint64_t seed, const torch::Device& device,
                  torch::ScalarType dtype);

  // Causal masks stay boolean (Module::to would make a buffer the model's
  // data type): moved to the device once, not every step.
  void MoveMasks(const torch::Device& device, torch::ScalarType dtype);

  // Parameters in the order of Graph::Params().
  std::vector<torch::Tensor> OrderedParams();

  // Inference as PyTorch's guidance runs a CNN: each batch norm a
  // convolution writes folded into that convolution's weights and a bias
  // (the plan's), so that the norm costs no pass of its own
  // (torch.nn.utils.fusion.fuse_conv_bn_eval), and on a CPU
  // (`channels_last`) the convolutions' weights channels-last, where
  // oneDNN's kernels take them without reordering every call.
  void PrepareInference(const FusionPlan& plan, bool channels_last);

  // Returns the logits (the last output of a graph without loss); in
  // training also sets `loss`. inputs[i] feeds input layer i.
  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs,
                        const torch::Tensor& labels, torch::Tensor* loss);

  // Under the profiler, the autograd sequence numbers each layer's forward
  // operations took, [first, end), in every Forward since the last call:
  // their backward nodes carry them.
  std::vector<LayerSequence> TakeSequences() { return std::move(sequences_); }

  // The mean cross entropy of the logits against the labels: classes along
  // the logits' last dimension against [rows] labels, or along dimension 1
  // against labels of every other dimension ([N, H, W]: a class per
  // pixel).
  static torch::Tensor CrossEntropy(const torch::Tensor& logits,
                                    const torch::Tensor& labels);

 private:
  // Heads split the units: head j of a position reads units [j dh, (j+1) dh).
  static torch::Tensor Attention(const torch::Tensor& q, const torch::Tensor& k,
                                 const torch::Tensor& v, const Layer& l,
                                 const torch::Tensor& causal_mask);

  // Each head's pairs (i, i + dh/2) turned by its position's angles.
  static torch::Tensor Rope(const torch::Tensor& x, const Layer& l,
                            const LayerModules& m);

  // The new keys and values into the cache's last positions, in place; then
  // each group of heads / kv_heads query heads against its key/value head's
  // cache, as one batch of products: no copy of the cache per query head.
  static torch::Tensor CachedAttention(const torch::Tensor& q,
                                       const torch::Tensor& k,
                                       const torch::Tensor& v, const Layer& l,
                                       LayerModules& m);

  void AddRecurrent(const std::string& name, const Layer& l, int64_t in,
                    LayerModules& m);

  const Graph& graph_;
  std::vector<LayerModules> layers_;
  std::vector<int> last_use_;  // the last layer reading each layer's output
  std::vector<torch::Tensor> values_;
  std::vector<LayerSequence> sequences_;
};

}  // namespace paradnn
