#include "backends/torch/model.h"

#include <ATen/SequenceNumber.h>
#include <ATen/record_function.h>

#include <cmath>
#include <limits>

#include "backends/torch/profiler.h"
#include "backends/torch/runtime.h"
#include "generators/check.h"
#include "generators/init.h"

namespace paradnn {
namespace {}  // namespace

TorchModel::TorchModel(const Graph& g)
    : graph_(g), layers_(g.size()), last_use_(g.size(), -1) {
  for (int i = 0; i < g.size(); ++i) {
    const Layer& l = g.layer(i);
    for (int in : l.inputs) last_use_[in] = i;
    const std::string name = "layer" + std::to_string(i);
    const int64_t in = l.inputs.empty() ? 0 : g.layer(l.inputs[0]).shape.back();
    LayerModules& m = layers_[i];
    switch (l.op) {
      case Op::kDense:
        m.linear = register_module(
            name, torch::nn::Linear(
                      torch::nn::LinearOptions(in, l.units).bias(l.bias)));
        m.base = m.linear.get();
        break;
      case Op::kConv2d:
        if (l.weight_norm >= 0) {
          // PyTorch's weight_norm: the tensors v and g, the weights made
          // from them as the layer runs.
          m.table =
              register_module(name, std::make_shared<torch::nn::Module>());
          m.weight_v = m.table->register_parameter(
              "weight_v", torch::empty(g.ConvWeights(i)));
          m.weight_u = m.table->register_parameter(
              "weight_g", torch::empty(g.WeightNormMagnitudes(i)));
          if (l.bias) {
            m.bias =
                m.table->register_parameter("bias", torch::empty({l.units}));
          }
          m.base = m.table.get();
          break;
        }
        m.conv = register_module(
            name, torch::nn::Conv2d(
                      torch::nn::Conv2dOptions(g.layer(l.inputs[0]).shape[1],
                                               l.units, {l.kernel, l.kernel_w})
                          .stride(l.stride)
                          .padding({l.pad, l.pad_w})
                          .dilation(l.dilation)
                          .groups(l.groups)
                          .bias(l.bias)));
        m.base = m.conv.get();
        break;
      case Op::kConv3d:
        m.conv3d = register_module(
            name,
            torch::nn::Conv3d(
                torch::nn::Conv3dOptions(g.layer(l.inputs[0]).shape[1], l.units,
                                         {l.kernel_d, l.kernel, l.kernel_w})
                    .stride({l.stride_d, l.stride, l.stride})
                    .padding({l.pad_d, l.pad, l.pad_w})
                    .bias(l.bias)));
        m.base = m.conv3d.get();
        break;
      case Op::kBatchNorm:
        m.bn = register_module(
            name, torch::nn::BatchNorm2d(
                      torch::nn::BatchNormOptions(l.units).eps(l.epsilon)));
        m.base = m.bn.get();
        {  // running statistics from a file, else a fresh model's
          torch::NoGradGuard no_grad;
          const RunningStatistics stats = InitRunningStatistics(l);
          m.bn->running_mean.copy_(torch::tensor(stats.mean));
          m.bn->running_var.copy_(torch::tensor(stats.variance));
        }
        break;
      case Op::kEmbedding:
        m.embedding =
            register_module(name, torch::nn::Embedding(l.vocab, l.units));
        m.base = m.embedding.get();
        break;
      case Op::kRecurrent:
        AddRecurrent(name, l, in, m);
        break;
      case Op::kLayerNorm:
        m.layer_norm = register_module(
            name, torch::nn::LayerNorm(
                      torch::nn::LayerNormOptions({l.units}).eps(l.epsilon)));
        m.base = m.layer_norm.get();
        break;
      case Op::kPositional:
        m.table = register_module(name, std::make_shared<torch::nn::Module>());
        // Module::to changes a parameter's data in place: the handle stays.
        m.positional = m.table->register_parameter(
            "weight", torch::empty({l.shape[0], l.units}));
        m.base = m.table.get();
        break;
      case Op::kEmbeddingBag:
        // Summed rows; backward makes a sparse gradient, the rows looked
        // up only, which SGD adds to those rows.
        m.bag = register_module(
            name, torch::nn::EmbeddingBag(
                      torch::nn::EmbeddingBagOptions(l.vocab, l.units)
                          .mode(torch::kSum)
                          .sparse(true)));
        m.base = m.bag.get();
        break;
      case Op::kCross:
        m.table = register_module(name, std::make_shared<torch::nn::Module>());
        if (l.rank > 0) {
          m.weight_v = m.table->register_parameter(
              "weight_v", torch::empty({l.rank, l.units}));
          m.weight_u = m.table->register_parameter(
              "weight_u", torch::empty({l.units, l.rank}));
        } else {
          m.weight_u = m.table->register_parameter(
              "weight", torch::empty({l.units, l.units}));
        }
        m.bias = m.table->register_parameter("bias", torch::empty({l.units}));
        m.base = m.table.get();
        break;
      case Op::kAttention:
        if (l.causal) {
          m.causal_mask =
              torch::ones({l.shape[0], l.shape[0]}, torch::kBool).triu(1);
        }
        break;
      case Op::kInstanceNorm:
        m.table = register_module(name, std::make_shared<torch::nn::Module>());
        m.weight_u =
            m.table->register_parameter("weight", torch::empty({l.units}));
        m.bias = m.table->register_parameter("bias", torch::empty({l.units}));
        m.base = m.table.get();
        break;
      case Op::kRmsNorm:
      case Op::kClassToken:
      case Op::kLayerScale:
        m.table = register_module(name, std::make_shared<torch::nn::Module>());
        m.positional =
            m.table->register_parameter("weight", torch::empty({l.units}));
        m.base = m.table.get();
        break;
      case Op::kRope: {
        const int64_t half = l.units / l.heads / 2;
        std::vector<float> cos, sin;
        RotaryTables(l, &cos, &sin);
        m.rope_cos = torch::tensor(cos).view({l.shape[0], 1, 1, half});
        m.rope_sin = torch::tensor(sin).view({l.shape[0], 1, 1, half});
        break;
      }
      case Op::kCachedAttention: {
        const int64_t length = l.shape[0];
        if (length > 1) {
          // Query t (position context - length + t) sees keys up to it.
          const torch::Tensor query =
              torch::arange(length).add(l.context - length).unsqueeze(1);
          const torch::Tensor key = torch::arange(l.context).unsqueeze(0);
          m.cache_mask = key.gt(query).repeat({l.heads / l.kv_heads, 1});
        }
        break;
      }
      default:
        break;
    }
  }
}

void TorchModel::FillCaches(uint64_t seed, const torch::Device& device,
                            torch::ScalarType dtype) {
  for (int i = 0; i < graph_.size(); ++i) {
    const Layer& l = graph_.layer(i);
    if (l.op != Op::kCachedAttention) continue;
    LayerModules& m = layers_[i];
    const int64_t dh = l.units / l.heads;
    const std::vector<float> init = InitCache(graph_, seed, i);
    // A copy: to() of an fp32 CPU tensor is the tensor itself, and this
    // one borrows `init`'s memory.
    const torch::Tensor cache =
        torch::from_blob(const_cast<float*>(init.data()),
                         {2, l.shape[1], l.kv_heads, l.context, dh},
                         torch::kFloat)
            .to(device, dtype, /*non_blocking=*/false, /*copy=*/true);
    m.keys = cache[0];
    m.values = cache[1];
  }
}

void TorchModel::MoveMasks(const torch::Device& device,
                           torch::ScalarType dtype) {
  for (LayerModules& m : layers_) {
    if (m.causal_mask.defined()) m.causal_mask = m.causal_mask.to(device);
    if (m.cache_mask.defined()) m.cache_mask = m.cache_mask.to(device);
    if (m.rope_cos.defined()) {
      m.rope_cos = m.rope_cos.to(device, dtype);
      m.rope_sin = m.rope_sin.to(device, dtype);
    }
  }
}

std::vector<torch::Tensor> TorchModel::OrderedParams() {
  std::vector<torch::Tensor> out;
  for (const ParamTensor& p : graph_.Params()) {
    LayerModules& m = layers_[p.layer];
    torch::nn::Module* module = m.base;
    // LibTorch names a recurrent layer's tensors per stacked layer.
    const std::string key =
        (m.rnn || m.lstm || m.gru) ? p.role + "_l0" : p.role;
    PARADNN_CHECK(module != nullptr, "parameter of a layer without module");
    torch::Tensor* t = module->named_parameters(false).find(key);
    PARADNN_CHECK(t != nullptr, "module lacks a graph parameter");
    out.push_back(*t);
  }
  return out;
}

void TorchModel::PrepareInference(const FusionPlan& plan, bool channels_last) {
  torch::NoGradGuard no_grad;
  for (const FusedGroup& g : plan.groups) {
    if (g.batch_norm < 0) continue;
    LayerModules& conv = layers_[g.anchor];
    LayerModules& bn = layers_[g.batch_norm];
    const bool video = !conv.conv;
    const torch::Tensor w = video ? conv.conv3d->weight : conv.conv->weight;
    const bool has_bias =
        video ? conv.conv3d->options.bias() : conv.conv->options.bias();
    // In fp32 whatever the model's type, rounded once.
    auto f32 = [](const torch::Tensor& t) { return t.to(torch::kFloat); };
    const torch::Tensor scale =
        f32(bn.bn->weight) /
        torch::sqrt(f32(bn.bn->running_var) + bn.bn->options.eps());
    const torch::Tensor bias =
        has_bias ? f32(video ? conv.conv3d->bias : conv.conv->bias)
                 : torch::zeros_like(scale);
    std::vector<int64_t> per_channel(w.dim(), 1);
    per_channel[0] = -1;
    w.copy_(f32(w) * scale.view(per_channel));
    conv.folded_bias =
        ((bias - f32(bn.bn->running_mean)) * scale + f32(bn.bn->bias))
            .to(w.dtype());
    bn.folded = true;
  }
  for (LayerModules& m : layers_) {
    if (!channels_last || !m.conv) continue;
    torch::Tensor& w = m.conv->weight;
    w.set_data(w.contiguous(torch::MemoryFormat::ChannelsLast));
  }
}

torch::Tensor TorchModel::Forward(const std::vector<torch::Tensor>& inputs,
                                  const torch::Tensor& labels,
                                  torch::Tensor* loss) {
  values_.resize(graph_.size());
  torch::Tensor logits;
  for (int i = 0; i < graph_.size(); ++i) {
    const Layer& l = graph_.layer(i);
    LayerModules& m = layers_[i];
    // Under the profiler, each layer's operations in a scope naming it
    // (LayerScope); outside it, the guard does nothing.
    at::RecordFunction scope(at::RecordScope::USER_SCOPE);
    if (scope.isActive()) scope.before(LayerScope(i));
    const uint64_t first = at::sequence_number::peek();
    const torch::Tensor& x =
        l.inputs.empty() ? inputs[i] : values_[l.inputs[0]];
    torch::Tensor& y = values_[i];
    switch (l.op) {
      case Op::kInput:
      case Op::kTokens:
        y = inputs[i];
        break;
      case Op::kDense:
        y = m.linear(x);
        break;
      case Op::kConv2d:
        if (l.weight_norm >= 0) {
          y = torch::conv2d(
              x, torch::_weight_norm(m.weight_v, m.weight_u, l.weight_norm),
              l.bias ? m.bias : torch::Tensor(), {l.stride, l.stride},
              {l.pad, l.pad_w}, {l.dilation, l.dilation}, l.groups);
          break;
        }
        y = m.folded_bias.defined()
                ? torch::conv2d(x, m.conv->weight, m.folded_bias,
                                {l.stride, l.stride}, {l.pad, l.pad_w},
                                {l.dilation, l.dilation}, l.groups)
                : m.conv(x);
        break;
      case Op::kConv3d:
        y = m.folded_bias.defined()
                ? torch::conv3d(x, m.conv3d->weight, m.folded_bias,
                                {l.stride_d, l.stride, l.stride},
                                {l.pad_d, l.pad, l.pad_w})
                : m.conv3d(x);
        break;
      case Op::kBatchNorm:
        // [N, C] (a global pool's, DeepLabV3's image pooling) as the
        // [N, C, 1, 1] maps it is; [N, C, D, H, W] as [N, C, D x H, W]
        // (the same statistics per channel).
        y = m.folded       ? x
            : x.dim() == 2 ? m.bn(x.view({x.size(0), x.size(1), 1, 1}))
                                 .view({x.size(0), x.size(1)})
            : x.dim() == 5 ? m.bn(x.flatten(2, 3)).view_as(x)
                           : m.bn(x);
        break;
      case Op::kReLU:
        y = torch::relu(x);
        break;
      case Op::kChannelShuffle: {
        // torchvision's channel_shuffle: groups rows of channels, transposed
        // (a copy, as its contiguous() makes).
        const int64_t n = x.size(0), c = x.size(1), h = x.size(2),
                      w = x.size(3);
        y = x.reshape({n, l.groups, c / l.groups, h, w})
                .transpose(1, 2)
                .reshape({n, c, h, w});
        break;
      }
      case Op::kSlice:
        // A view, as torch.chunk's: its readers copy what they need.
        y = x.narrow(l.axis, l.begin, l.units);
        break;
      case Op::kMaxPool:
        y = torch::max_pool2d(x, l.kernel, l.stride, l.pad, /*dilation=*/1,
                              l.ceil);
        break;
      case Op::kAdd:
        y = x + values_[l.inputs[1]];
        break;
      case Op::kGlobalAvgPool:
        y = x.dim() == 5 ? x.mean({2, 3, 4}) : x.mean({2, 3});
        break;
      case Op::kEmbedding:
        y = m.embedding(x);
        break;
      case Op::kRecurrent:
        y = m.rnn    ? std::get<0>(m.rnn(x))
            : m.lstm ? std::get<0>(m.lstm(x))
                     : std::get<0>(m.gru(x));
        break;
      case Op::kLayerNorm:
        // Over the channels of maps: as ConvNeXt's eager code, a layer norm
        // of the channels-last view (no copy where the maps are laid out
        // channels-last, as inference lays them on a CPU), viewed back.
        y = l.axis == 1 && x.dim() == 4
                ? m.layer_norm(x.permute({0, 2, 3, 1})).permute({0, 3, 1, 2})
                : m.layer_norm(x);
        break;
      case Op::kLayerScale:
        y = x * m.positional.view({1, l.units, 1, 1});
        break;
      case Op::kInstanceNorm:
        // torchaudio's: GroupNorm with a group per channel.
        y = torch::group_norm(x, l.units, m.weight_u, m.bias, l.epsilon);
        break;
      case Op::kResize:
        y = torch::nn::functional::interpolate(
            x.dim() == 2 ? x.view({x.size(0), x.size(1), 1, 1}) : x,
            torch::nn::functional::InterpolateFuncOptions()
                .size(std::vector<int64_t>{l.shape[2], l.shape[3]})
                .mode(torch::kBilinear)
                .align_corners(false));
        break;
      case Op::kGelu:
        y = torch::gelu(x);
        // LibTorch 1.13's CPU gelu_backward misreads an output gradient
        // that is not contiguous (values of 1e34): a sequence's view of the
        // maps after it, Wav2Vec2's feature encoder's, gives it one.
        if (y.requires_grad()) {
          y.register_hook([](torch::Tensor g) { return g.contiguous(); });
        }
        break;
      case Op::kPositional:
        y = x + m.positional.unsqueeze(1);
        break;
      case Op::kAttention:
        y = Attention(x, values_[l.inputs[1]], values_[l.inputs[2]], l,
                      m.causal_mask);
        break;
      case Op::kSoftmaxCrossEntropy:
        logits = x;
        if (loss != nullptr) *loss = CrossEntropy(x, labels);
        break;
      case Op::kMeanLoss:
        // Its gradient is constant: the runner passes it to backward.
        logits = x;
        break;
      case Op::kRmsNorm:
        y = x * torch::rsqrt(x.pow(2).mean(-1, true).add_(kRmsNormEpsilon)) *
            m.positional;
        break;
      case Op::kRope:
        y = Rope(x, l, m);
        break;
      case Op::kSwiGlu:
        y = torch::silu(x) * values_[l.inputs[1]];
        break;
      case Op::kCachedAttention:
        y = CachedAttention(x, values_[l.inputs[1]], values_[l.inputs[2]], l,
                            m);
        break;
      case Op::kLastPosition:
        y = x.narrow(0, x.size(0) - 1, 1);
        break;
      case Op::kEmbeddingBag:
        // [hotness, batch] ids: a bag per column.
        y = m.bag(x.t().contiguous());
        break;
      case Op::kConcat: {
        std::vector<torch::Tensor> parts;
        for (int in : l.inputs) parts.push_back(values_[in]);
        y = torch::cat(parts, l.axis);
        break;
      }
      case Op::kCross: {
        const torch::Tensor& xl = values_[l.inputs[1]];
        const torch::Tensor wx =
            l.rank > 0 ? torch::linear(torch::linear(xl, m.weight_v),
                                       m.weight_u, m.bias)
                       : torch::linear(xl, m.weight_u, m.bias);
        y = x * wx + xl;
        break;
      }
      case Op::kAvgPool:
        y = torch::avg_pool2d(x, l.kernel, l.stride, l.pad, /*ceil_mode=*/false,
                              l.count_pad);
        break;
      case Op::kFlatten:
        y = x.flatten(1);
        break;
      case Op::kSigmoid:
        y = torch::sigmoid(x);
        break;
      case Op::kSilu:
        y = torch::silu(x);
        break;
      case Op::kRelu6:
        // PyTorch's ReLU6 is hardtanh(x, 0, 6), whose backward LibTorch
        // 1.13 has no bf16 kernel for on CPUs; there clamp, the same values
        // (but a gradient of 1, not 0, at exactly 0 and 6), whose backward
        // is several kernels (MobileNetV2's fp32 training step took 1.2x
        // eager's with it).
        y = x.scalar_type() == torch::kBFloat16 ? torch::clamp(x, 0, 6)
                                                : torch::hardtanh(x, 0, 6);
        break;
      case Op::kHardSwish:
        y = torch::hardswish(x);
        break;
      case Op::kHardSigmoid:
        y = torch::hardsigmoid(x);
        break;
      case Op::kChannelMul:
        y = x * values_[l.inputs[1]].unsqueeze(-1).unsqueeze(-1);
        break;
      case Op::kSequence:
        // A view; the class token's concat after it copies, as eager's.
        y = x.flatten(2).permute({2, 0, 1});
        break;
      case Op::kMaps:
        // Eager's transpose of [N, L, C] to [N, C, L] before a convolution
        // is a view; the convolution reads it as it lies.
        y = x.permute({1, 2, 0}).unflatten(2, {l.shape[2], l.shape[3]});
        break;
      case Op::kClassToken:
        y = torch::cat(
            {m.positional.view({1, 1, l.units}).expand({1, x.size(1), l.units}),
             x});
        break;
      case Op::kFirstToken:
        y = x.select(0, 0);
        break;
    }
    // Drop each activation after its last reader, as eager Python frees
    // them; autograd keeps what backward needs.
    for (int in : l.inputs) {
      if (last_use_[in] == i) values_[in].reset();
    }
    if (scope.isActive()) {
      sequences_.push_back({first, at::sequence_number::peek(), i});
    }
  }
  if (!logits.defined()) logits = values_.back();
  values_.back().reset();
  return logits;
}

torch::Tensor TorchModel::Attention(const torch::Tensor& q,
                                    const torch::Tensor& k,
                                    const torch::Tensor& v, const Layer& l,
                                    const torch::Tensor& causal_mask) {
  const int64_t length = q.size(0), batch = q.size(1), units = q.size(2);
  const int64_t dh = units / l.heads;
  // [length, batch, units] -> [batch * heads, length, dh]
  auto split = [&](const torch::Tensor& t) {
    return t.view({length, batch * l.heads, dh}).transpose(0, 1);
  };
  torch::Tensor scores = torch::bmm(split(q), split(k).transpose(1, 2))
                             .mul_(1.0 / std::sqrt(static_cast<double>(dh)));
  if (causal_mask.defined()) {
    scores.masked_fill_(causal_mask, -std::numeric_limits<float>::infinity());
  }
  return torch::bmm(torch::softmax(scores, -1), split(v))
      .transpose(0, 1)
      .reshape({length, batch, units});
}

torch::Tensor TorchModel::Rope(const torch::Tensor& x, const Layer& l,
                               const LayerModules& m) {
  const int64_t length = x.size(0), batch = x.size(1);
  const int64_t half = l.units / l.heads / 2;
  const torch::Tensor h = x.view({length, batch, l.heads, 2 * half});
  const torch::Tensor a = h.narrow(3, 0, half), b = h.narrow(3, half, half);
  return torch::cat(
             {a * m.rope_cos - b * m.rope_sin, b * m.rope_cos + a * m.rope_sin},
             3)
      .view({length, batch, l.units});
}

torch::Tensor TorchModel::CachedAttention(const torch::Tensor& q,
                                          const torch::Tensor& k,
                                          const torch::Tensor& v,
                                          const Layer& l, LayerModules& m) {
  const int64_t length = q.size(0), batch = q.size(1);
  const int64_t dh = l.units / l.heads, group = l.heads / l.kv_heads;
  const int64_t first = l.context - length;
  // [length, batch, kv_heads x dh] -> [batch, kv_heads, length, dh]
  auto heads = [&](const torch::Tensor& t) {
    return t.view({length, batch, l.kv_heads, dh}).permute({1, 2, 0, 3});
  };
  m.keys.narrow(2, first, length).copy_(heads(k));
  m.values.narrow(2, first, length).copy_(heads(v));
  // [length, batch, kv_heads x group x dh] -> [batch, kv_heads, group x
  // length, dh]: query head kv x group + g reads key/value head kv.
  const torch::Tensor queries =
      q.view({length, batch, l.kv_heads, group, dh})
          .permute({1, 2, 3, 0, 4})
          .reshape({batch, l.kv_heads, group * length, dh});
  torch::Tensor scores = torch::matmul(queries, m.keys.transpose(2, 3))
                             .mul_(1.0 / std::sqrt(static_cast<double>(dh)));
  if (m.cache_mask.defined()) {
    scores.masked_fill_(m.cache_mask, -std::numeric_limits<float>::infinity());
  }
  return torch::matmul(torch::softmax(scores, -1), m.values)
      .view({batch, l.kv_heads, group, length, dh})
      .permute({3, 0, 1, 2, 4})
      .reshape({length, batch, l.units});
}

torch::Tensor TorchModel::CrossEntropy(const torch::Tensor& logits,
                                       const torch::Tensor& labels) {
  // A class per pixel: [N, C, H, W] against [N, H, W], PyTorch's own form.
  if (labels.dim() > 1) {
    return torch::nn::functional::cross_entropy(logits, labels);
  }
  return torch::nn::functional::cross_entropy(
      logits.reshape({-1, logits.size(-1)}), labels);
}

void TorchModel::AddRecurrent(const std::string& name, const Layer& l,
                              int64_t in, LayerModules& m) {
  switch (l.cell) {
    case Cell::kRnn:
      m.rnn = register_module(
          name,
          torch::nn::RNN(
              torch::nn::RNNOptions(in, l.units).nonlinearity(torch::kTanh)));
      m.base = m.rnn.get();
      break;
    case Cell::kLstm:
      m.lstm = register_module(
          name, torch::nn::LSTM(torch::nn::LSTMOptions(in, l.units)));
      m.base = m.lstm.get();
      break;
    case Cell::kGru:
      m.gru = register_module(
          name, torch::nn::GRU(torch::nn::GRUOptions(in, l.units)));
      m.base = m.gru.get();
      break;
  }
}

}  // namespace paradnn
