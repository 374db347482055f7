// LibTorch backend: torch::nn modules built from the layer graph, run by
// interpreting the graph in order.
#include "backends/torch/torch_backend.h"

#include <dlfcn.h>
#include <torch/csrc/autograd/profiler_legacy.h>
#include <torch/torch.h>
#include <torch/version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>

#include "machine/blas.h"
#include "machine/caches.h"
#include "backends/torch/cuda_driver.h"
#include "backends/torch/step_allocator.h"
#include "distributed/world.h"
#include "generators/check.h"
#include "generators/init.h"

namespace paradnn {
namespace {

constexpr double kLayerNormEpsilon = 1e-5;

torch::ScalarType TorchType(DType d) {
  switch (d) {
    case DType::kBf16:
      return torch::kBFloat16;
    case DType::kFp16:
      return torch::kHalf;
    case DType::kFp32:
      break;
  }
  return torch::kFloat;
}

// The modules of one layer; at most one is set.
struct LayerModules {
  torch::nn::Linear linear{nullptr};
  torch::nn::Conv2d conv{nullptr};
  torch::nn::BatchNorm2d bn{nullptr};
  torch::nn::Embedding embedding{nullptr};
  torch::nn::EmbeddingBag bag{nullptr};
  torch::nn::RNN rnn{nullptr};
  torch::nn::LSTM lstm{nullptr};
  torch::nn::GRU gru{nullptr};
  torch::nn::LayerNorm layer_norm{nullptr};
  // A positional table's or an RMSNorm scale's holder, and the tensor.
  std::shared_ptr<torch::nn::Module> table;
  torch::Tensor positional;
  // A cross layer's tensors in `table`: V and U, or W (in weight_u), and b.
  torch::Tensor weight_v, weight_u, bias;
  torch::nn::Module* base = nullptr;  // whichever of the above is set
  torch::Tensor causal_mask;          // attention: true above the diagonal
  // Cached attention: keys and values [batch, kv_heads, context, dh] each
  // (views of one tensor), and true where the mask hides a key from a query
  // of [heads / kv_heads x length] (prefill only).
  torch::Tensor keys, values, cache_mask;
  torch::Tensor rope_cos, rope_sin;  // rotary: [length, 1, 1, dh / 2]
};

class TorchModel : public torch::nn::Module {
 public:
  explicit TorchModel(const Graph& g)
      : graph_(g), layers_(g.size()), last_use_(g.size(), -1) {
    for (int i = 0; i < g.size(); ++i) {
      const Layer& l = g.layer(i);
      for (int in : l.inputs) last_use_[in] = i;
      const std::string name = "layer" + std::to_string(i);
      const int64_t in =
          l.inputs.empty() ? 0 : g.layer(l.inputs[0]).shape.back();
      LayerModules& m = layers_[i];
      switch (l.op) {
        case Op::kDense:
          m.linear = register_module(
              name, torch::nn::Linear(
                        torch::nn::LinearOptions(in, l.units).bias(l.bias)));
          m.base = m.linear.get();
          break;
        case Op::kConv2d:
          m.conv = register_module(
              name, torch::nn::Conv2d(
                        torch::nn::Conv2dOptions(g.layer(l.inputs[0]).shape[1],
                                                 l.units, l.kernel)
                            .stride(l.stride)
                            .padding(l.pad)
                            .bias(false)));
          m.base = m.conv.get();
          break;
        case Op::kBatchNorm:
          m.bn = register_module(name, torch::nn::BatchNorm2d(l.units));
          m.base = m.bn.get();
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
              name,
              torch::nn::LayerNorm(torch::nn::LayerNormOptions({l.units}).eps(
                  kLayerNormEpsilon)));
          m.base = m.layer_norm.get();
          break;
        case Op::kPositional:
          m.table =
              register_module(name, std::make_shared<torch::nn::Module>());
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
          m.table =
              register_module(name, std::make_shared<torch::nn::Module>());
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
        case Op::kRmsNorm:
          m.table =
              register_module(name, std::make_shared<torch::nn::Module>());
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

  // The caches' first contents (InitCache), in the model's data type.
  void FillCaches(uint64_t seed, const torch::Device& device,
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

  // Parameters in the order of Graph::Params().
  // Causal masks stay boolean (Module::to would make a buffer the model's
  // data type): moved to the device once, not every step.
  void MoveMasks(const torch::Device& device, torch::ScalarType dtype) {
    for (LayerModules& m : layers_) {
      if (m.causal_mask.defined()) m.causal_mask = m.causal_mask.to(device);
      if (m.cache_mask.defined()) m.cache_mask = m.cache_mask.to(device);
      if (m.rope_cos.defined()) {
        m.rope_cos = m.rope_cos.to(device, dtype);
        m.rope_sin = m.rope_sin.to(device, dtype);
      }
    }
  }

  std::vector<torch::Tensor> OrderedParams() {
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

  // Returns the logits (the last output of a graph without loss); in
  // training also sets `loss`. inputs[i] feeds input layer i.
  torch::Tensor Forward(const std::vector<torch::Tensor>& inputs,
                        const torch::Tensor& labels, torch::Tensor* loss) {
    values_.resize(graph_.size());
    torch::Tensor logits;
    for (int i = 0; i < graph_.size(); ++i) {
      const Layer& l = graph_.layer(i);
      LayerModules& m = layers_[i];
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
          y = m.conv(x);
          break;
        case Op::kBatchNorm:
          y = m.bn(x);
          break;
        case Op::kReLU:
          y = torch::relu(x);
          break;
        case Op::kMaxPool:
          y = torch::max_pool2d(x, l.kernel, l.stride, l.pad);
          break;
        case Op::kAdd:
          y = x + values_[l.inputs[1]];
          break;
        case Op::kGlobalAvgPool:
          y = x.mean({2, 3});
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
          y = m.layer_norm(x);
          break;
        case Op::kGelu:
          y = torch::gelu(x);
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
          y = torch::cat(parts, -1);
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
      }
      // Drop each activation after its last reader, as eager Python frees
      // them; autograd keeps what backward needs.
      for (int in : l.inputs) {
        if (last_use_[in] == i) values_[in].reset();
      }
    }
    if (!logits.defined()) logits = values_.back();
    values_.back().reset();
    return logits;
  }

  // Heads split the units: head j of a position reads units [j dh, (j+1) dh).
  static torch::Tensor Attention(const torch::Tensor& q, const torch::Tensor& k,
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

  // Each head's pairs (i, i + dh/2) turned by its position's angles.
  static torch::Tensor Rope(const torch::Tensor& x, const Layer& l,
                            const LayerModules& m) {
    const int64_t length = x.size(0), batch = x.size(1);
    const int64_t half = l.units / l.heads / 2;
    const torch::Tensor h = x.view({length, batch, l.heads, 2 * half});
    const torch::Tensor a = h.narrow(3, 0, half), b = h.narrow(3, half, half);
    return torch::cat({a * m.rope_cos - b * m.rope_sin,
                       b * m.rope_cos + a * m.rope_sin},
                      3)
        .view({length, batch, l.units});
  }

  // The new keys and values into the cache's last positions, in place; then
  // each group of heads / kv_heads query heads against its key/value head's
  // cache, as one batch of products: no copy of the cache per query head.
  static torch::Tensor CachedAttention(const torch::Tensor& q,
                                       const torch::Tensor& k,
                                       const torch::Tensor& v, const Layer& l,
                                       LayerModules& m) {
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
      scores.masked_fill_(m.cache_mask,
                          -std::numeric_limits<float>::infinity());
    }
    return torch::matmul(torch::softmax(scores, -1), m.values)
        .view({batch, l.kv_heads, group, length, dh})
        .permute({3, 0, 1, 2, 4})
        .reshape({length, batch, l.units});
  }

  static torch::Tensor CrossEntropy(const torch::Tensor& logits,
                                    const torch::Tensor& labels) {
    return torch::nn::functional::cross_entropy(
        logits.reshape({-1, logits.size(-1)}), labels);
  }

 private:
  void AddRecurrent(const std::string& name, const Layer& l, int64_t in,
                    LayerModules& m) {
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

  const Graph& graph_;
  std::vector<LayerModules> layers_;
  std::vector<int> last_use_;  // the last layer reading each layer's output
  std::vector<torch::Tensor> values_;
};

// A tensor that owns a copy of the values.
template <typename T>
torch::Tensor FromVector(const std::vector<T>& v, const Shape& shape) {
  return torch::from_blob(const_cast<T*>(v.data()), shape,
                          c10::CppTypeToScalarType<T>::value)
      .clone();
}

std::vector<float> ToVector(const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU, torch::kFloat).contiguous();
  return std::vector<float>(c.data_ptr<float>(),
                            c.data_ptr<float>() + c.numel());
}

// LibTorch's messages carry a backtrace; the reason is the part before it.
template <typename F>
auto Translated(F f) -> decltype(f()) {
  try {
    return f();
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

// The profiler's scopes around the parameter update and, data-parallel,
// the gradients' all-reduce: everything inside is of their class.
constexpr char kOptimizerScope[] = "paradnn::optimizer";
constexpr char kAllReduceScope[] = "paradnn::allreduce";

std::optional<OpClass> ScopeClass(const std::string& name) {
  if (name == kOptimizerScope) return OpClass::kOptimizer;
  if (name == kAllReduceScope) return OpClass::kCommunication;
  return std::nullopt;
}

bool HasAny(const std::string& name, std::initializer_list<const char*> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](const char* p) {
    return name.find(p) != std::string::npos;
  });
}

// The class of an ATen operation or autograd node, by its name.
OpClass ClassOf(std::string name) {
  std::transform(name.begin(), name.end(), name.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  if (name.rfind("aten::", 0) == 0) name = name.substr(6);
  if (HasAny(name, {"mm", "conv", "linear", "matmul", "lstm", "gru", "rnn",
                    "_cell", "attention", "einsum", "dot"})) {
    return OpClass::kGemm;
  }
  if (name == "t" ||
      HasAny(name,
             {"copy",      "clone",   "contiguous", "cat",           "stack",
              "embedding", "index",   "gather",     "scatter",       "to_",
              "_to",       "permute", "transpose",  "view",          "reshape",
              "expand",    "select",  "slice",      "narrow",        "squeeze",
              "split",     "chunk",   "unbind",     "as_strided",    "flatten",
              "detach",    "empty",   "resize",     "accumulategrad"})) {
    return OpClass::kMovement;
  }
  return OpClass::kElementwise;
}

// Self time (own time minus nested operations') of every range of one
// thread's events; everything inside a scope of ours is of its class.
void AddSelfTimes(
    const std::vector<torch::autograd::profiler::LegacyEvent>& events,
    StepProfile* profile) {
  using torch::autograd::profiler::EventKind;
  using torch::autograd::profiler::LegacyEvent;
  struct Open {
    const LegacyEvent* push;
    double children_us = 0;
    std::optional<OpClass> scope;
  };
  std::vector<Open> stack;
  for (const LegacyEvent& e : events) {
    if (e.kind() == EventKind::PushRange) {
      std::optional<OpClass> scope =
          stack.empty() ? std::nullopt : stack.back().scope;
      if (!scope) scope = ScopeClass(e.name());
      stack.push_back({&e, 0, scope});
    } else if (e.kind() == EventKind::PopRange && !stack.empty()) {
      const Open open = stack.back();
      stack.pop_back();
      const double us = open.push->hasCuda() ? open.push->cudaElapsedUs(e)
                                             : open.push->cpuElapsedUs(e);
      if (!stack.empty()) stack.back().children_us += us;
      const std::string name = open.push->name();
      profile->Add(open.scope ? *open.scope : ClassOf(name), name,
                   (us - open.children_us) / 1e6);
    }
  }
}

// LibTorch's set_num_threads rebuilds its pthreadpool on every call, to
// the same count too, and the new worker spins for about 20 ms of a core
// before it sleeps (21-25 ms each, LibTorch 1.13 here). Called as each case
// was prepared, it took a core from the first steps after: in a bricks run,
// which times a brick in one or two steps right after preparing it, a third
// of the small LibTorch bricks' steps came out about 4 ms (a scheduler
// tick) longer (docs/bricks.md at 23ff8d0, "A thread pool built again").
void UseThreads(int threads) {
  if (torch::get_num_threads() != threads) torch::set_num_threads(threads);
}

class TorchRunner : public Runner {
 public:
  TorchRunner(const Job& job, const RunOptions& opt, torch::Device device)
      : graph_(job.graph),
        train_(job.mode == Mode::kTrain),
        device_(device),
        threads_(opt.threads) {
    UseThreads(opt.threads);
    const auto dtype = TorchType(job.dtype);
    {
      // Parameters made in the case's data type from the start: a model of
      // 8 billion bf16 parameters never holds them in fp32 too (32 GB).
      const caffe2::TypeMeta before = torch::get_default_dtype();
      torch::set_default_dtype(c10::scalarTypeToTypeMeta(dtype));
      model_ = std::make_shared<TorchModel>(graph_);
      torch::set_default_dtype(before);
    }
    params_ = model_->OrderedParams();
    {
      torch::NoGradGuard no_grad;
      const std::vector<ParamTensor> specs = graph_.Params();
      // Made in one fp32 tensor at a time, converted by the copy.
      for (size_t i = 0; i < specs.size(); ++i) {
        torch::Tensor values = torch::empty(specs[i].shape, torch::kFloat);
        InitParam(specs[i], opt.seed, static_cast<int>(i),
                  values.data_ptr<float>());
        params_[i].copy_(values);
      }
    }
    model_->to(device_, dtype);
    model_->MoveMasks(device_, dtype);
    model_->FillCaches(opt.seed, device_, dtype);
    params_ = model_->OrderedParams();
    model_->train(train_);

    inputs_.resize(graph_.size());
    for (int i = 0; i < graph_.size(); ++i) {
      const Layer& l = graph_.layer(i);
      if (l.op == Op::kTokens) {
        inputs_[i] =
            FromVector(InitTokens(graph_, opt.seed, i, opt.first_example),
                       l.shape)
                .to(device_);
      } else if (l.op == Op::kInput) {
        inputs_[i] =
            FromVector(InitInput(graph_, opt.seed, i, opt.first_example),
                       l.shape)
                .to(device_, dtype)
                .requires_grad_(train_ && l.requires_grad);
      }
    }
    const std::vector<int64_t> labels =
        InitLabels(graph_, opt.seed, opt.first_example);
    labels_ =
        FromVector(labels, {static_cast<int64_t>(labels.size())}).to(device_);
    if (train_) {
      optimizer_ = std::make_unique<torch::optim::SGD>(
          params_, torch::optim::SGDOptions(0.01));
      comm_ = opt.comm;
    }
    for (int i = 0; i < opt.warmup; ++i) TimedStep();
  }

  void Step() override {
    Translated([this] { TimedStep(); });
  }

  StepProfile Profile(int steps) override {
    return Translated([&] {
      namespace prof = torch::autograd::profiler;
      using torch::profiler::impl::ProfilerConfig;
      using torch::profiler::impl::ProfilerState;
      prof::enableProfilerLegacy(ProfilerConfig(
          device_.is_cuda() ? ProfilerState::CUDA : ProfilerState::CPU));
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < steps; ++i) TimedStep();
      const std::chrono::duration<double> wall =
          std::chrono::steady_clock::now() - start;
      const prof::thread_event_lists lists = prof::disableProfilerLegacy();
      StepProfile profile;
      profile.SetWall(wall.count(), steps);
      for (const auto& events : lists) AddSelfTimes(events, &profile);
      return profile;
    });
  }

  void TimedStep() {
    if (train_) {
      // Gradients are released, not filled with zeros (LibTorch 1.13's
      // zero_grad()): backward then writes each one fresh instead of adding
      // to zeros. Inputs that take a gradient (a brick's) likewise, as a
      // layer's input does inside its model.
      for (torch::Tensor& p : params_) p.mutable_grad().reset();
      for (torch::Tensor& in : inputs_) {
        if (in.defined() && in.requires_grad()) in.mutable_grad().reset();
      }
      torch::Tensor loss;
      logits_ = model_->Forward(inputs_, labels_, &loss);
      if (loss.defined()) {
        loss.backward();
        loss_ = loss.detach();
      } else {
        // A mean loss: the layer gets the constant dense gradient 1/n, as in
        // the oneDNN backend, not the expanded view mean's backward makes.
        if (!mean_grad_.defined()) {
          mean_grad_ = torch::full_like(logits_, 1.0 / logits_.numel());
        }
        // Nothing to do where nothing takes a gradient: the brick of a
        // gradient sum (an add of inputs that take none) is its forward.
        if (logits_.requires_grad()) logits_.backward(mean_grad_);
        loss_ = torch::Tensor();
      }
      if (comm_ != nullptr) AverageGradients();
      RECORD_USER_SCOPE(kOptimizerScope);
      optimizer_->step();
    } else {
      c10::InferenceMode guard;
      logits_ = model_->Forward(inputs_, labels_, nullptr);
    }
    if (device_.is_cuda()) torch::cuda::synchronize();
  }

  double Loss() override {
    return Translated([this] { return ComputeLoss(); });
  }

  // Every tensor came from the step allocator; a device's memory is no
  // CPU cache's. Nothing fills the caches (a layer inside the model writes
  // into blocks just freed), but other pages' translations replace the
  // step's, as oneDNN's fill replaces them: without, cold bricks put
  // LibTorch's CNN models at 0.92-0.93 of their measured step on a virtual
  // EPYC, with it 0.99-1.06 (docs/bricks.md at 23ff8d0, "Where the kernel does
  // not say").
  void Cool() override {
    if (device_.is_cuda()) return;
    DropTranslations(threads_);
    allocator_.FlushAll(threads_);
    const std::vector<bool> written = graph_.InputsJustWritten();
    for (int i = 0; i < graph_.size(); ++i) {
      if (written[i]) ReadIntoCaches(inputs_[i]);
    }
    ReadIntoCaches(mean_grad_);
  }

  std::vector<float> Output() override {
    return Translated([this] { return ToVector(logits_); });
  }

  std::vector<float> Param(int index) override {
    return Translated([&] { return ToVector(params_.at(index)); });
  }

 private:
  double ComputeLoss() {
    if (!logits_.defined()) return std::nan("");
    if (train_) {
      return loss_.defined() ? loss_.item<double>()
                             : logits_.detach().mean().item<double>();
    }
    c10::InferenceMode guard;
    return TorchModel::CrossEntropy(logits_.to(torch::kFloat), labels_)
        .item<double>();
  }

  void ReadIntoCaches(const torch::Tensor& t) const {
    if (t.defined())
      paradnn::ReadIntoCaches(t.data_ptr(), t.nbytes(), threads_);
  }

  // Data-parallel: every rank's gradients averaged in place, in the order
  // of Graph::Params() on every rank.
  void AverageGradients() {
    RECORD_USER_SCOPE(kAllReduceScope);
    grads_.clear();
    for (torch::Tensor& p : params_) {
      const torch::Tensor& g = p.grad();
      TORCH_CHECK(g.defined() && g.is_contiguous(),
                  "data-parallel training needs contiguous gradients");
      grads_.push_back({g.data_ptr(), g.numel(),
                        g.scalar_type() == torch::kBFloat16 ? DType::kBf16
                        : g.scalar_type() == torch::kHalf   ? DType::kFp16
                                                            : DType::kFp32,
                        g.is_cuda()});
    }
    comm_->AverageGradients(grads_);
  }

  // First: every tensor below is allocated while it is installed.
  StepAllocatorScope allocator_;
  const Graph graph_;
  const bool train_;
  const torch::Device device_;
  const int threads_;
  Communicator* comm_ = nullptr;
  std::vector<GradBuffer> grads_;
  std::shared_ptr<TorchModel> model_;
  std::vector<torch::Tensor> params_;
  std::vector<torch::Tensor> inputs_;  // per input layer
  torch::Tensor labels_, logits_, loss_;
  torch::Tensor mean_grad_;  // d mean / d output, for a mean loss
  std::unique_ptr<torch::optim::SGD> optimizer_;
};

// The BLAS library LibTorch loaded, as the dynamic linker resolved it.
std::string LoadedBlas() {
  const std::string path = LoadedBlasLibrary();
  if (!path.empty()) return path;
  // PyTorch's own builds link MKL into libtorch_cpu.
  return at::hasMKL() ? "MKL (linked into LibTorch)" : "none loaded";
}

class TorchBackend : public Backend {
 public:
  // Before any of its products runs: the kernels they run on.
  explicit TorchBackend(bool cuda) : cuda_(cuda) { ReplacedBlasCore(); }

  std::string name() const override { return cuda_ ? "torch_cuda" : "torch"; }

  std::string Unsupported(const Job& job) const override {
    if (cuda_ && !TorchHasCuda()) {
      return "torch_cuda: this LibTorch has no CUDA or no GPU is present";
    }
    // LibTorch's CPU has no fp16 GEMM of its BLAS: fp16 is the GPUs'.
    if (!cuda_ && job.dtype == DType::kFp16) {
      return "torch: fp16 runs on GPUs (torch_cuda); on the CPU, bf16";
    }
#if TORCH_VERSION_MAJOR < 2
    if (!cuda_ && job.dtype == DType::kBf16 &&
        job.graph.Has(Op::kEmbeddingBag)) {
      return std::string("torch: LibTorch ") + TORCH_VERSION +
             "'s embedding_bag has no bf16 on the CPU";
    }
#endif
    return "";
  }

  std::unique_ptr<Runner> Prepare(const Job& job,
                                  const RunOptions& opt) const override {
    return Translated([&] {
      if (cuda_) UseCudaMath(/*tf32=*/false);
      return std::make_unique<TorchRunner>(
          job, opt, cuda_ ? torch::Device(torch::kCUDA, 0) : torch::kCPU);
    });
  }

  std::string Describe() const override {
    return std::string("LibTorch ") + TORCH_VERSION + ", BLAS " + LoadedBlas() +
           BlasCore() +
           (cuda_ ? ", CUDA device 0 (fp32 without TF32, cuDNN autotuned)"
                  : ", CPU");
  }

  std::string Device() const override { return cuda_ ? "gpu" : "cpu"; }

  // The step allocator hands a tensor the block of its size freed last.
  bool RecyclesWithinStep() const override { return true; }
  bool ActivationsJoinProducer() const override { return true; }

  // torch::mm, which LibTorch hands to its BLAS on the CPU, to cuBLAS on a
  // GPU.
  double GemmFlops(int64_t m, int64_t n, int64_t k, DType dtype, int threads,
                   bool tf32) const override {
    if (!cuda_ && (tf32 || dtype == DType::kFp16)) return 0;
    if (cuda_ && !TorchHasCuda()) return 0;
    return Translated([&] {
      UseThreads(threads);
      if (cuda_) UseCudaMath(tf32 && dtype == DType::kFp32);
      const torch::TensorOptions options =
          torch::TensorOptions().dtype(TorchType(dtype)).device(TheDevice());
      torch::NoGradGuard no_grad;
      const torch::Tensor a = torch::rand({m, k}, options);
      const torch::Tensor b = torch::rand({k, n}, options);
      torch::Tensor c = torch::empty({m, n}, options);
      const double seconds = BestSeconds([&] {
        torch::mm_out(c, a, b);
        if (cuda_) torch::cuda::synchronize();
      });
      if (cuda_) UseCudaMath(/*tf32=*/false);
      return 2.0 * m * n * k / seconds;
    });
  }

  // The triad over three arrays of 512 MiB, each many times any GPU's L2
  // (an H200's is 60 MB), so every byte comes from device memory.
  double MemoryBandwidth() const override {
    if (!cuda_ || !TorchHasCuda()) return 0;
    return Translated([&] {
      const int64_t n = int64_t{1} << 27;
      const torch::TensorOptions options =
          torch::TensorOptions().dtype(torch::kFloat).device(TheDevice());
      torch::NoGradGuard no_grad;
      const torch::Tensor b = torch::full({n}, 1.0, options);
      const torch::Tensor c = torch::full({n}, 2.0, options);
      torch::Tensor a = torch::empty({n}, options);
      const double seconds = BestSeconds(
          [&] {
            torch::add_out(a, b, c, 3.0);
            torch::cuda::synchronize();
          },
          100);
      if (a[n / 2].item<double>() != 7.0) {
        throw std::logic_error("the device's triad computed wrongly");
      }
      return 3.0 * n * sizeof(float) / seconds;
    });
  }

  int64_t DeviceMemoryFree() const override {
    return cuda_ && TorchHasCuda() ? cuda_driver::Memory(0).free : 0;
  }

  std::string DeviceName() const override {
    if (!cuda_ || !TorchHasCuda()) return "";
    const std::string name = cuda_driver::DeviceName(0);
    const double gib = cuda_driver::Memory(0).total / double(int64_t{1} << 30);
    char size[32];
    std::snprintf(size, sizeof(size), ", %.1f GiB", gib);
    return name.empty() ? "CUDA device 0" : name + (gib > 0 ? size : "");
  }

 private:
  torch::Device TheDevice() const {
    return cuda_ ? torch::Device(torch::kCUDA, 0) : torch::kCPU;
  }

  // fp32 cases multiply in fp32: PyTorch lets cuDNN's convolutions round
  // fp32 to TF32 unless told not to, and a user comparing fp32 across
  // platforms compares IEEE fp32; TF32 is its own calibrated peak. cuDNN
  // times its algorithms for each new shape in the warm-up step and keeps
  // the fastest, as training scripts ask it to (torch.backends.cudnn.
  // benchmark).
  static void UseCudaMath(bool tf32) {
    at::globalContext().setFloat32MatmulPrecision(tf32 ? "high" : "highest");
    at::globalContext().setAllowTF32CuDNN(tf32);
    at::globalContext().setBenchmarkCuDNN(true);
  }

  bool cuda_;
};

}  // namespace

std::unique_ptr<Backend> MakeTorchBackend(bool cuda) {
  return std::make_unique<TorchBackend>(cuda);
}

int64_t TorchModuleParameterCount(const Graph& g) {
  TorchModel model(g);
  int64_t n = 0;
  for (const torch::Tensor& p : model.parameters()) n += p.numel();
  return n;
}

int TorchThreads() { return torch::get_num_threads(); }

bool TorchHasCuda() { return torch::cuda::is_available(); }

}  // namespace paradnn
