// oneDNN backend: one primitive per layer of the graph, created once in
// Prepare with the memory formats oneDNN chooses ("any"), reorders only where
// a primitive wants another format than its producer's, and a timed step
// that only executes the list.
#include "backends/onednn/onednn_backend.h"

#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>
#include <oneapi/dnnl/dnnl_version.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <oneapi/dnnl/dnnl.hpp>
#include <stdexcept>
#include <unordered_map>

#include "generators/check.h"
#include "generators/init.h"

namespace paradnn {
namespace {

using dnnl::memory;
using Dims = memory::dims;
using Tag = memory::format_tag;
using Dt = memory::data_type;
using Args = std::unordered_map<int, memory>;

constexpr float kLearningRate = 0.01f;
constexpr float kBatchNormEpsilon = 1e-5f;  // LibTorch's default
constexpr float kLayerNormEpsilon = 1e-5f;  // LibTorch's default

float Bf16ToFloat(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  // Round to nearest even, as oneDNN and LibTorch do.
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Reads element i of a plain f32 or bf16 buffer as float.
float Load(const void* data, Dt dt, int64_t i) {
  return dt == Dt::f32 ? static_cast<const float*>(data)[i]
                       : Bf16ToFloat(static_cast<const uint16_t*>(data)[i]);
}

void Store(void* data, Dt dt, int64_t i, float v) {
  if (dt == Dt::f32) {
    static_cast<float*>(data)[i] = v;
  } else {
    static_cast<uint16_t*>(data)[i] = FloatToBf16(v);
  }
}

// LibTorch orders GRU gates (r, z, n); oneDNN orders them (u = z, r, o = n).
// The same permutation maps both ways.
constexpr int kGruGate[3] = {1, 0, 2};

// A trainable tensor: its memory in the primitive's format, its gradient,
// and how to move values to and from LibTorch's layout.
struct Weight {
  memory value;
  memory grad;
  memory user;  // plain f32 in LibTorch's layout (gates permuted for GRU)
  bool gru = false;
  int64_t gate_rows = 0;  // rows per gate block, for the GRU permutation
};

class OnednnRunner : public Runner {
 public:
  OnednnRunner(const Job& job, const RunOptions& opt)
      : graph_(job.graph),
        train_(job.mode == Mode::kTrain),
        dt_(job.dtype == DType::kBf16 ? Dt::bf16 : Dt::f32),
        engine_(dnnl::engine::kind::cpu, 0),
        stream_(engine_),
        seed_(opt.seed),
        needs_grad_(job.graph.NeedsGrad()),
        out_(job.graph.size()),
        diff_(job.graph.size()),
        last_reader_(job.graph.size(), -1),
        readers_(job.graph.size(), 0),
        params_(job.graph.Params().size()),
        backward_(job.graph.size()) {
    omp_set_num_threads(opt.threads);
    const Graph& g = graph_;
    for (int i = 0; i < g.size(); ++i) {
      for (int in : g.layer(i).inputs) {
        last_reader_[in] = i;
        ++readers_[in];
      }
    }
    const std::vector<ParamTensor> specs = g.Params();
    for (size_t p = 0; p < specs.size(); ++p) {
      param_index_[{specs[p].layer, specs[p].role}] = static_cast<int>(p);
    }
    for (int i = 0; i < g.size(); ++i) Build(i);
    for (size_t p = 0; p < specs.size(); ++p) {
      Weight& param = params_[p];
      if (!param.value) continue;  // recurrent biases live in bias_masters_
      WriteParam(param, InitParam(graph_, opt.seed, static_cast<int>(p)));
      if (train_) AddUpdate(param);
    }
    for (RecurrentBias& b : biases_) {
      b.ih = InitParam(graph_, opt.seed, b.ih_index);
      b.hh = InitParam(graph_, opt.seed, b.hh_index);
      b.Combine();
    }
    labels_ = InitLabels(graph_, opt.seed);
    for (int i = 0; i < opt.warmup; ++i) Step();
  }

  void Step() override { RunStep(nullptr); }

  StepProfile Profile(int steps) override {
    StepProfile profile;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) RunStep(&profile);
    profile.SetWall(Seconds(start), steps);
    return profile;
  }

  double Loss() override {
    if (mean_loss_) {
      const std::vector<float> out = Output();
      double sum = 0;
      for (float v : out) sum += v;
      return sum / out.size();
    }
    return train_ ? loss_ : CrossEntropy(false);
  }

  std::vector<float> Output() override {
    const memory& logits = out_[graph_.logits()];
    const Dims dims = logits.get_desc().dims();
    memory plain = Make(memory::desc(dims, Dt::f32, PlainTag(dims.size())));
    RunNow(logits, plain);
    const float* p = static_cast<const float*>(plain.get_data_handle());
    return std::vector<float>(p,
                              p + plain.get_desc().get_size() / sizeof(float));
  }

  std::vector<float> Param(int index) override {
    for (const RecurrentBias& b : biases_) {
      if (b.ih_index == index) return b.ih;
      if (b.hh_index == index) return b.hh;
    }
    return ReadParam(params_.at(index));
  }

 private:
  // The two LibTorch bias vectors of a recurrent layer, kept as LibTorch
  // holds them, and oneDNN's single bias computed from them.
  struct RecurrentBias {
    int ih_index = 0, hh_index = 0;
    std::vector<float> ih, hh;
    memory combined;  // f32 ldgo: G (or 4 for GRU) x hidden
    memory grad;
    Cell cell = Cell::kRnn;
    int64_t hidden = 0;

    void Combine() {
      float* b = static_cast<float*>(combined.get_data_handle());
      const int64_t h = hidden;
      if (cell != Cell::kGru) {
        for (size_t k = 0; k < ih.size(); ++k) b[k] = ih[k] + hh[k];
        return;
      }
      // oneDNN's linear-before-reset GRU: u and r take both biases, the
      // candidate takes b_in, and b_hn sits inside the reset product.
      for (int g = 0; g < 2; ++g) {
        const int t = kGruGate[g];
        for (int64_t k = 0; k < h; ++k) {
          b[g * h + k] = ih[t * h + k] + hh[t * h + k];
        }
      }
      for (int64_t k = 0; k < h; ++k) {
        b[2 * h + k] = ih[2 * h + k];
        b[3 * h + k] = hh[2 * h + k];
      }
    }

    // SGD on both LibTorch vectors from oneDNN's gradient.
    void Update() {
      const float* d = static_cast<const float*>(grad.get_data_handle());
      const int64_t h = hidden;
      if (cell != Cell::kGru) {
        for (size_t k = 0; k < ih.size(); ++k) {
          ih[k] -= kLearningRate * d[k];
          hh[k] -= kLearningRate * d[k];
        }
      } else {
        for (int g = 0; g < 2; ++g) {
          const int t = kGruGate[g];
          for (int64_t k = 0; k < h; ++k) {
            ih[t * h + k] -= kLearningRate * d[g * h + k];
            hh[t * h + k] -= kLearningRate * d[g * h + k];
          }
        }
        for (int64_t k = 0; k < h; ++k) {
          ih[2 * h + k] -= kLearningRate * d[2 * h + k];
          hh[2 * h + k] -= kLearningRate * d[3 * h + k];
        }
      }
      Combine();
    }
  };

  // One entry of a step: a primitive's execution or a loop of our own.
  struct Action {
    OpClass cls;
    std::string name;  // "convolution backward", "embedding forward"
    std::function<void()> run;
  };
  using Actions = std::vector<Action>;

  static double Seconds(std::chrono::steady_clock::time_point since) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         since)
        .count();
  }

  // With a profile, times every action; the CPU stream executes each
  // primitive before returning, so the times are the primitives' own.
  void RunActions(const Actions& list, StepProfile* profile) {
    for (const Action& a : list) {
      if (profile == nullptr) {
        a.run();
        continue;
      }
      const auto start = std::chrono::steady_clock::now();
      a.run();
      stream_.wait();
      profile->Add(a.cls, a.name, Seconds(start));
    }
  }

  void RunStep(StepProfile* profile) {
    RunActions(forward_, profile);
    if (train_) {
      // A mean loss's gradient is constant, set in Prepare; its value is
      // computed when asked for.
      if (!mean_loss_) {
        const auto start = std::chrono::steady_clock::now();
        loss_ = CrossEntropy(true);
        if (profile) {
          profile->Add(OpClass::kElementwise, "softmax cross-entropy",
                       Seconds(start));
        }
      }
      // From the loss down to the first layer.
      for (auto it = backward_.rbegin(); it != backward_.rend(); ++it) {
        RunActions(*it, profile);
      }
      RunActions(update_, profile);
    }
    stream_.wait();
  }

  // The list being built: forward, a layer's backward, or the update.
  const char* Phase(const Actions& list) const {
    return &list == &forward_  ? "forward"
           : &list == &update_ ? "update"
                               : "backward";
  }

  static OpClass ClassOf(dnnl::primitive::kind kind) {
    using K = dnnl::primitive::kind;
    switch (kind) {
      case K::convolution:
      case K::deconvolution:
      case K::inner_product:
      case K::rnn:
      case K::matmul:
        return OpClass::kGemm;
      case K::reorder:
      case K::concat:
      case K::sum:
      case K::shuffle:
        return OpClass::kMovement;
      default:
        return OpClass::kElementwise;
    }
  }

  void Push(Actions& list, OpClass cls, const std::string& what,
            std::function<void()> run) {
    list.push_back({&list == &update_ ? OpClass::kOptimizer : cls,
                    what + " " + Phase(list), std::move(run)});
  }

  memory Make(const memory::desc& md) { return memory(md, engine_); }

  static Tag PlainTag(size_t rank) {
    static const Tag kPlain[] = {Tag::undef, Tag::a, Tag::ab, Tag::abc,
                                 Tag::abcd};
    return kPlain[rank];
  }

  void Run(Actions& list, dnnl::primitive p, Args args) {
    const int layer = building_;
    Push(list, ClassOf(p.get_kind()),
         dnnl_prim_kind2str(static_cast<dnnl_primitive_kind_t>(p.get_kind())),
         [this, p, args, layer] {
           try {
             p.execute(stream_, args);
           } catch (const dnnl::error& e) {
             throw std::runtime_error(
                 std::string(e.what()) + " (" +
                 dnnl_prim_kind2str(
                     static_cast<dnnl_primitive_kind_t>(p.get_kind())) +
                 " of layer " + std::to_string(layer) + ", " +
                 ToString(graph_.layer(layer).op) + ")");
           }
         });
  }

  // Copies src into dst's format; with accumulate, adds to dst instead.
  void Reorder(Actions& list, const memory& src, const memory& dst,
               bool accumulate, float scale = 1.f) {
    dnnl::primitive_attr attr;
    if (scale != 1.f) attr.set_output_scales(0, {scale});
    if (accumulate) {
      dnnl::post_ops ops;
      ops.append_sum(1.f);
      attr.set_post_ops(ops);
    }
    dnnl::reorder::primitive_desc pd(engine_, src.get_desc(), engine_,
                                     dst.get_desc(), attr);
    Run(list, dnnl::reorder(pd), {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}});
  }

  // Layer x's output in the format `want`, reordered in the forward pass
  // when its producer wrote another.
  memory Input(int x, const memory::desc& want) {
    if (out_[x].get_desc() == want) return out_[x];
    if (graph_.layer(x).op == Op::kInput && readers_[x] == 1) {
      // Data fed to the graph is the same every step: hand it to its only
      // reader in the reader's format once, as a producer layer would,
      // rather than reorder it (and its gradient) in every step.
      memory m = Make(want);
      RunNow(out_[x], m);
      out_[x] = m;
      if (Grad(x)) diff_[x] = Make(want);
      return m;
    }
    memory m = Make(want);
    Reorder(forward_, out_[x], m, false);
    return m;
  }

  // Where a reader of layer x writes x's gradient: x's own gradient memory
  // when this reader is the first to write it (the last reader, since
  // backward runs in reverse) and the format matches; else a scratch.
  memory GradTarget(int x, int reader, const memory::desc& md) {
    if (last_reader_[x] == reader && diff_[x].get_desc() == md) return diff_[x];
    return Make(md);
  }

  // Moves a gradient a reader computed into layer x's gradient, adding it
  // to what later readers already wrote.
  void Deliver(int x, int reader, const memory& grad) {
    if (grad.get() == diff_[x].get()) return;
    Reorder(backward_[reader], grad, diff_[x], last_reader_[x] != reader);
  }

  bool Grad(int x) const { return train_ && needs_grad_[x]; }

  dnnl::prop_kind Forward() const {
    return train_ ? dnnl::prop_kind::forward_training
                  : dnnl::prop_kind::forward_inference;
  }

  // Sets out_[i] and, in training, its gradient memory of the same format.
  void SetOut(int i, const memory::desc& md) {
    out_[i] = Make(md);
    if (Grad(i)) diff_[i] = Make(md);
  }

  Weight& ParamOf(int layer, const std::string& role) {
    return params_[param_index_.at({layer, role})];
  }

  // A parameter stored in `md`, initialized from LibTorch's layout `user`.
  void AddParam(int layer, const std::string& role, const memory::desc& md,
                const memory::desc& user, const memory::desc& grad_md) {
    Weight& p = ParamOf(layer, role);
    p.value = Make(md);
    p.user = Make(user);
    if (train_) p.grad = Make(grad_md);
  }

  void WriteParam(Weight& p, const std::vector<float>& values) {
    float* u = static_cast<float*>(p.user.get_data_handle());
    if (p.gru) {
      PermuteGates(values.data(), u, p.gate_rows, values.size());
    } else {
      std::copy(values.begin(), values.end(), u);
    }
    RunNow(p.user, p.value);
  }

  // A reorder outside the step, at preparation or to read results.
  void RunNow(memory from, memory to) {
    dnnl::reorder(from, to).execute(stream_, from, to);
    stream_.wait();
  }

  std::vector<float> ReadParam(Weight& p) {
    RunNow(p.value, p.user);
    const int64_t n = p.user.get_desc().get_size() / sizeof(float);
    const float* u = static_cast<const float*>(p.user.get_data_handle());
    std::vector<float> out(n);
    if (p.gru) {
      PermuteGates(u, out.data(), p.gate_rows, n);
    } else {
      std::copy(u, u + n, out.begin());
    }
    return out;
  }

  static void PermuteGates(const float* from, float* to, int64_t gate_rows,
                           int64_t n) {
    const int64_t block = n / 3;
    PARADNN_CHECK(block == gate_rows * (n / 3 / gate_rows), "GRU gate blocks");
    for (int g = 0; g < 3; ++g) {
      std::memcpy(to + g * block, from + kGruGate[g] * block,
                  block * sizeof(float));
    }
  }

  // SGD: w += -lr * grad, as one reorder with a scale and a sum.
  void AddUpdate(Weight& p) {
    Reorder(update_, p.grad, p.value, true, -kLearningRate);
  }

  void Build(int i) {
    building_ = i;
    const Layer& l = graph_.layer(i);
    switch (l.op) {
      case Op::kInput: {
        const Tag tag = PlainTag(l.shape.size());
        SetOut(i, l.shape.size() == 4 ? ConvolutionOutput(l.shape)
                                      : memory::desc(l.shape, dt_, tag));
        memory user = Make(memory::desc(l.shape, Dt::f32, tag));
        const std::vector<float> data = InitInput(graph_, seed_, i);
        std::copy(data.begin(), data.end(),
                  static_cast<float*>(user.get_data_handle()));
        RunNow(user, out_[i]);
        break;
      }
      case Op::kTokens:
        tokens_ = InitTokens(graph_, seed_);
        break;
      case Op::kDense:
        BuildDense(i, l);
        break;
      case Op::kConv2d:
        BuildConv(i, l);
        break;
      case Op::kBatchNorm:
        BuildBatchNorm(i, l);
        break;
      case Op::kReLU:
        BuildEltwise(i, l, dnnl::algorithm::eltwise_relu);
        break;
      case Op::kGelu:
        BuildEltwise(i, l, dnnl::algorithm::eltwise_gelu_erf);
        break;
      case Op::kLayerNorm:
        BuildLayerNorm(i, l);
        break;
      case Op::kPositional:
        BuildPositional(i, l);
        break;
      case Op::kAttention:
        BuildAttention(i, l);
        break;
      case Op::kMaxPool:
        BuildPool(i, l, dnnl::algorithm::pooling_max, l.kernel, l.stride,
                  l.pad);
        break;
      case Op::kGlobalAvgPool: {
        const Dims in = out_[l.inputs[0]].get_desc().dims();
        BuildPool(i, l, dnnl::algorithm::pooling_avg_exclude_padding, in[2], 1,
                  0);
        break;
      }
      case Op::kAdd:
        BuildAdd(i, l);
        break;
      case Op::kEmbedding:
        BuildEmbedding(i, l);
        break;
      case Op::kRecurrent:
        BuildRecurrent(i, l);
        break;
      case Op::kSoftmaxCrossEntropy:
        break;
      case Op::kMeanLoss:
        mean_loss_ = true;
        if (train_) {
          // d mean / d x = 1/n everywhere, the same every step.
          const int x = l.inputs[0];
          const memory::desc md = out_[x].get_desc();
          const Dims dims = md.dims();
          memory user =
              Make(memory::desc(dims, Dt::f32, PlainTag(dims.size())));
          const int64_t n = Elements(graph_.layer(x).shape);
          std::fill_n(static_cast<float*>(user.get_data_handle()), n, 1.f / n);
          RunNow(user, diff_[x]);
        }
        break;
    }
  }

  // The format a convolution producing `dims` would write: images fed to
  // the graph (a layer's input when it runs on its own) arrive as they
  // would from the convolution before it, not in plain NCHW, where batch
  // norm, pooling and eltwise primitives run several times slower.
  memory::desc ConvolutionOutput(const Dims& dims) {
    const memory::desc any(dims, dt_, Tag::any);
    dnnl::convolution_forward::primitive_desc pd(
        {dnnl::prop_kind::forward_inference,
         dnnl::algorithm::convolution_direct,
         any,
         memory::desc({dims[1], dims[1], 3, 3}, dt_, Tag::any),
         any,
         {1, 1},
         {1, 1},
         {1, 1}},
        engine_);
    return pd.dst_desc();
  }

  // A [length, batch, features] output (and its gradient) becomes a matrix
  // of length x batch rows, through views on the same buffers.
  void Flatten(int x) {
    const Dims dims = out_[x].get_desc().dims();
    if (dims.size() != 3) return;
    // Views without a buffer of their own: keep the owners alive.
    owners_.push_back(out_[x]);
    if (Grad(x)) owners_.push_back(diff_[x]);
    const Dims flat = {dims[0] * dims[1], dims[2]};
    out_[x] = memory(out_[x].get_desc().reshape(flat), engine_,
                     out_[x].get_data_handle());
    if (Grad(x)) {
      diff_[x] = memory(diff_[x].get_desc().reshape(flat), engine_,
                        diff_[x].get_data_handle());
    }
  }

  void BuildDense(int i, const Layer& l) {
    const int x = l.inputs[0];
    Flatten(x);
    const memory src = out_[x];
    const Dims src_dims = src.get_desc().dims();
    Dims w_dims = {l.units, src_dims[1]};
    Tag w_tag = Tag::oi;
    if (src_dims.size() == 4) {  // after the global pool: [N, C, 1, 1]
      w_dims = {l.units, src_dims[1], 1, 1};
      w_tag = Tag::oihw;
    }
    const Dims dst_dims = {src_dims[0], l.units};
    // The logits stay plain for the loss.
    const bool logits = i == graph_.logits();
    memory::desc src_md(src_dims, dt_, Tag::any);
    memory::desc w_md(w_dims, dt_, Tag::any);
    memory::desc b_md({l.units}, dt_, Tag::x);
    memory::desc dst_md(dst_dims, dt_, logits ? Tag::nc : Tag::any);
    dnnl::inner_product_forward::primitive_desc pd(
        {Forward(), src_md, w_md, b_md, dst_md}, engine_);
    AddParam(i, "weight", pd.weights_desc(),
             memory::desc(w_dims, Dt::f32, w_tag), pd.weights_desc());
    AddParam(i, "bias", pd.bias_desc(),
             memory::desc({l.units}, Dt::f32, Tag::x), pd.bias_desc());
    SetOut(i, pd.dst_desc());
    const memory in = Input(x, pd.src_desc());
    Weight& w = ParamOf(i, "weight");
    Weight& b = ParamOf(i, "bias");
    Run(forward_, dnnl::inner_product_forward(pd),
        {{DNNL_ARG_SRC, in},
         {DNNL_ARG_WEIGHTS, w.value},
         {DNNL_ARG_BIAS, b.value},
         {DNNL_ARG_DST, out_[i]}});
    if (!train_) return;
    dnnl::inner_product_backward_weights::primitive_desc wpd(
        {pd.src_desc(), pd.weights_desc(), pd.bias_desc(), pd.dst_desc()},
        engine_, pd);
    Run(backward_[i], dnnl::inner_product_backward_weights(wpd),
        {{DNNL_ARG_SRC, in},
         {DNNL_ARG_DIFF_DST, diff_[i]},
         {DNNL_ARG_DIFF_WEIGHTS, w.grad},
         {DNNL_ARG_DIFF_BIAS, b.grad}});
    if (Grad(x)) {
      dnnl::inner_product_backward_data::primitive_desc dpd(
          {pd.src_desc(), pd.weights_desc(), pd.dst_desc()}, engine_, pd);
      memory grad = GradTarget(x, i, dpd.diff_src_desc());
      Run(backward_[i], dnnl::inner_product_backward_data(dpd),
          {{DNNL_ARG_DIFF_DST, diff_[i]},
           {DNNL_ARG_WEIGHTS, w.value},
           {DNNL_ARG_DIFF_SRC, grad}});
      Deliver(x, i, grad);
    }
  }

  void BuildConv(int i, const Layer& l) {
    const int x = l.inputs[0];
    const Dims src_dims = out_[x].get_desc().dims();
    const Dims w_dims = {l.units, src_dims[1], l.kernel, l.kernel};
    const Dims dst_dims = l.shape;
    const Dims strides = {l.stride, l.stride}, pad = {l.pad, l.pad};
    memory::desc src_md(src_dims, dt_, Tag::any);
    memory::desc w_md(w_dims, dt_, Tag::any);
    memory::desc dst_md(dst_dims, dt_, Tag::any);
    dnnl::convolution_forward::primitive_desc pd(
        {Forward(), dnnl::algorithm::convolution_direct, src_md, w_md, dst_md,
         strides, pad, pad},
        engine_);
    AddParam(i, "weight", pd.weights_desc(),
             memory::desc(w_dims, Dt::f32, Tag::oihw), pd.weights_desc());
    SetOut(i, pd.dst_desc());
    const memory in = Input(x, pd.src_desc());
    Weight& w = ParamOf(i, "weight");
    Run(forward_, dnnl::convolution_forward(pd),
        {{DNNL_ARG_SRC, in},
         {DNNL_ARG_WEIGHTS, w.value},
         {DNNL_ARG_DST, out_[i]}});
    if (!train_) return;
    dnnl::convolution_backward_weights::primitive_desc wpd(
        {dnnl::algorithm::convolution_direct, pd.src_desc(), pd.weights_desc(),
         pd.dst_desc(), strides, pad, pad},
        engine_, pd);
    // Gradients in the weights' own format keep the SGD update a plain sum.
    if (wpd.diff_weights_desc() != pd.weights_desc()) {
      throw std::runtime_error(
          "oneDNN chose different formats for convolution weights and their "
          "gradient");
    }
    Run(backward_[i], dnnl::convolution_backward_weights(wpd),
        {{DNNL_ARG_SRC, in},
         {DNNL_ARG_DIFF_DST, diff_[i]},
         {DNNL_ARG_DIFF_WEIGHTS, w.grad}});
    if (Grad(x)) {
      // Backward data has kernels of its own for its own weight format;
      // given the forward one it falls back to the reference code.
      dnnl::convolution_backward_data::primitive_desc dpd(
          {dnnl::algorithm::convolution_direct, pd.src_desc(),
           memory::desc(w_dims, dt_, Tag::any), pd.dst_desc(), strides, pad,
           pad},
          engine_, pd);
      memory weights = w.value;
      if (dpd.weights_desc() != pd.weights_desc()) {
        weights = Make(dpd.weights_desc());
        Reorder(backward_[i], w.value, weights, false);
      }
      memory grad = GradTarget(x, i, dpd.diff_src_desc());
      Run(backward_[i], dnnl::convolution_backward_data(dpd),
          {{DNNL_ARG_DIFF_DST, diff_[i]},
           {DNNL_ARG_WEIGHTS, weights},
           {DNNL_ARG_DIFF_SRC, grad}});
      Deliver(x, i, grad);
    }
  }

  void BuildBatchNorm(int i, const Layer& l) {
    const int x = l.inputs[0];
    const memory::desc data_md = out_[x].get_desc();
    auto flags = dnnl::normalization_flags::use_scale |
                 dnnl::normalization_flags::use_shift;
    if (!train_) flags = flags | dnnl::normalization_flags::use_global_stats;
    dnnl::batch_normalization_forward::primitive_desc pd(
        {Forward(), data_md, kBatchNormEpsilon, flags}, engine_);
    const memory::desc c_md({l.units}, Dt::f32, Tag::x);
    AddParam(i, "weight", c_md, c_md, c_md);
    AddParam(i, "bias", c_md, c_md, c_md);
    SetOut(i, pd.dst_desc());
    memory mean = Make(c_md), variance = Make(c_md);
    // Inference uses the running statistics of a fresh model: 0 and 1.
    std::fill_n(static_cast<float*>(mean.get_data_handle()), l.units, 0.f);
    std::fill_n(static_cast<float*>(variance.get_data_handle()), l.units, 1.f);
    Weight& scale = ParamOf(i, "weight");
    Weight& shift = ParamOf(i, "bias");
    Run(forward_, dnnl::batch_normalization_forward(pd),
        {{DNNL_ARG_SRC, out_[x]},
         {DNNL_ARG_DST, out_[i]},
         {DNNL_ARG_SCALE, scale.value},
         {DNNL_ARG_SHIFT, shift.value},
         {DNNL_ARG_MEAN, mean},
         {DNNL_ARG_VARIANCE, variance}});
    if (!train_) return;
    dnnl::batch_normalization_backward::primitive_desc bpd(
        {dnnl::prop_kind::backward, pd.dst_desc(), data_md, kBatchNormEpsilon,
         flags},
        engine_, pd);
    memory grad = GradTarget(x, i, bpd.diff_src_desc());
    Run(backward_[i], dnnl::batch_normalization_backward(bpd),
        NormalizationBackward(x, i, mean, variance, grad));
    Deliver(x, i, grad);
  }

  void BuildEltwise(int i, const Layer& l, dnnl::algorithm alg) {
    const int x = l.inputs[0];
    const memory::desc md = out_[x].get_desc();
    dnnl::eltwise_forward::primitive_desc pd({Forward(), alg, md, 0.f},
                                             engine_);
    SetOut(i, pd.dst_desc());
    Run(forward_, dnnl::eltwise_forward(pd),
        {{DNNL_ARG_SRC, out_[x]}, {DNNL_ARG_DST, out_[i]}});
    if (!Grad(x)) return;
    dnnl::eltwise_backward::primitive_desc bpd({alg, pd.dst_desc(), md, 0.f},
                                               engine_, pd);
    memory grad = GradTarget(x, i, bpd.diff_src_desc());
    Run(backward_[i], dnnl::eltwise_backward(bpd),
        {{DNNL_ARG_SRC, out_[x]},
         {DNNL_ARG_DIFF_DST, diff_[i]},
         {DNNL_ARG_DIFF_SRC, grad}});
    Deliver(x, i, grad);
  }

  void BuildPool(int i, const Layer& l, dnnl::algorithm alg, int64_t kernel,
                 int64_t stride, int64_t pad) {
    const int x = l.inputs[0];
    const memory::desc src_md = out_[x].get_desc();
    const Dims src_dims = src_md.dims();
    const Dims dst_dims = {src_dims[0], src_dims[1],
                           (src_dims[2] + 2 * pad - kernel) / stride + 1,
                           (src_dims[3] + 2 * pad - kernel) / stride + 1};
    const Dims strides = {stride, stride}, kernels = {kernel, kernel},
               pads = {pad, pad};
    dnnl::pooling_forward::primitive_desc pd(
        {Forward(), alg, src_md, memory::desc(dst_dims, dt_, Tag::any), strides,
         kernels, pads, pads},
        engine_);
    SetOut(i, pd.dst_desc());
    Args args = {{DNNL_ARG_SRC, out_[x]}, {DNNL_ARG_DST, out_[i]}};
    memory workspace;
    if (train_ && pd.workspace_desc().get_size() > 0) {
      workspace = Make(pd.workspace_desc());
      args[DNNL_ARG_WORKSPACE] = workspace;
    }
    Run(forward_, dnnl::pooling_forward(pd), args);
    if (!Grad(x)) return;
    dnnl::pooling_backward::primitive_desc bpd(
        {alg, src_md, pd.dst_desc(), strides, kernels, pads, pads}, engine_,
        pd);
    memory grad = GradTarget(x, i, bpd.diff_src_desc());
    Args bargs = {{DNNL_ARG_DIFF_DST, diff_[i]}, {DNNL_ARG_DIFF_SRC, grad}};
    if (workspace) bargs[DNNL_ARG_WORKSPACE] = workspace;
    Run(backward_[i], dnnl::pooling_backward(bpd), bargs);
    Deliver(x, i, grad);
  }

  void BuildAdd(int i, const Layer& l) {
    const int a = l.inputs[0], b = l.inputs[1];
    const memory::desc md = out_[a].get_desc();
    dnnl::binary::primitive_desc pd({dnnl::algorithm::binary_add, md, md, md},
                                    engine_);
    SetOut(i, md);
    const memory other = Input(b, md);
    Run(forward_, dnnl::binary(pd),
        {{DNNL_ARG_SRC_0, out_[a]},
         {DNNL_ARG_SRC_1, other},
         {DNNL_ARG_DST, out_[i]}});
    if (!train_) return;
    // The sum passes its gradient to both inputs unchanged.
    for (int x : {a, b}) {
      if (Grad(x)) Deliver(x, i, diff_[i]);
    }
  }

  // Batch and layer normalization's backward take the same arguments.
  Args NormalizationBackward(int x, int i, const memory& mean,
                             const memory& variance, const memory& grad) {
    Weight& scale = ParamOf(i, "weight");
    Weight& shift = ParamOf(i, "bias");
    return {{DNNL_ARG_SRC, out_[x]},          {DNNL_ARG_MEAN, mean},
            {DNNL_ARG_VARIANCE, variance},    {DNNL_ARG_DIFF_DST, diff_[i]},
            {DNNL_ARG_SCALE, scale.value},    {DNNL_ARG_SHIFT, shift.value},
            {DNNL_ARG_DIFF_SRC, grad},        {DNNL_ARG_DIFF_SCALE, scale.grad},
            {DNNL_ARG_DIFF_SHIFT, shift.grad}};
  }

  void BuildLayerNorm(int i, const Layer& l) {
    const int x = l.inputs[0];
    const memory::desc data_md = out_[x].get_desc();
    const auto flags = dnnl::normalization_flags::use_scale |
                       dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward::primitive_desc pd(
        {Forward(), data_md, kLayerNormEpsilon, flags}, engine_);
    const memory::desc c_md({l.units}, Dt::f32, Tag::x);
    AddParam(i, "weight", c_md, c_md, c_md);
    AddParam(i, "bias", c_md, c_md, c_md);
    SetOut(i, pd.dst_desc());
    Weight& scale = ParamOf(i, "weight");
    Weight& shift = ParamOf(i, "bias");
    Args args = {{DNNL_ARG_SRC, out_[x]},
                 {DNNL_ARG_DST, out_[i]},
                 {DNNL_ARG_SCALE, scale.value},
                 {DNNL_ARG_SHIFT, shift.value}};
    memory mean, variance;
    if (train_) {
      mean = Make(pd.mean_desc());
      variance = Make(pd.variance_desc());
      args[DNNL_ARG_MEAN] = mean;
      args[DNNL_ARG_VARIANCE] = variance;
    }
    Run(forward_, dnnl::layer_normalization_forward(pd), args);
    if (!train_) return;
    dnnl::layer_normalization_backward::primitive_desc bpd(
        {dnnl::prop_kind::backward, pd.dst_desc(), data_md, kLayerNormEpsilon,
         flags},
        engine_, pd);
    memory grad = GradTarget(x, i, bpd.diff_src_desc());
    Run(backward_[i], dnnl::layer_normalization_backward(bpd),
        NormalizationBackward(x, i, mean, variance, grad));
    if (Grad(x)) Deliver(x, i, grad);
  }

  // x + a [length, units] table broadcast over the batch; the table's
  // gradient is the output's summed over the batch.
  void BuildPositional(int i, const Layer& l) {
    const int x = l.inputs[0];
    const Dims dims = l.shape;  // [length, batch, units]
    const memory::desc md(dims, dt_, Tag::abc);
    const Dims table_dims = {dims[0], 1, dims[2]};
    AddParam(i, "weight", memory::desc(table_dims, dt_, Tag::abc),
             memory::desc(table_dims, Dt::f32, Tag::abc),
             memory::desc(table_dims, Dt::f32, Tag::abc));
    SetOut(i, md);
    Weight& table = ParamOf(i, "weight");
    dnnl::binary::primitive_desc pd(
        {dnnl::algorithm::binary_add, md, table.value.get_desc(), md}, engine_);
    Run(forward_, dnnl::binary(pd),
        {{DNNL_ARG_SRC_0, Input(x, md)},
         {DNNL_ARG_SRC_1, table.value},
         {DNNL_ARG_DST, out_[i]}});
    if (!train_) return;
    // Per position, ones[1, batch] x dOut[batch, units]: a batched matmul
    // (oneDNN's reduction over the middle dimension is reference code).
    const memory::desc ones_md({1, 1, dims[1]}, dt_, Tag::abc);
    memory ones = Make(ones_md);
    memory user_ones = Make(memory::desc({1, 1, dims[1]}, Dt::f32, Tag::abc));
    std::fill_n(static_cast<float*>(user_ones.get_data_handle()), dims[1], 1.f);
    RunNow(user_ones, ones);
    dnnl::matmul::primitive_desc rpd({ones_md, md, table.grad.get_desc()},
                                     engine_);
    Run(backward_[i], dnnl::matmul(rpd),
        {{DNNL_ARG_SRC, ones},
         {DNNL_ARG_WEIGHTS, diff_[i]},
         {DNNL_ARG_DST, table.grad}});
    if (Grad(x)) Deliver(x, i, diff_[i]);
  }

  // Multi-head attention with matmuls on strided views: head j of [length,
  // batch, units] is the 4-D [batch, heads, length, dh] view with strides
  // (units, dh, batch * units, 1), so no reorder splits or merges heads.
  void BuildAttention(int i, const Layer& l) {
    const int64_t length = l.shape[0], batch = l.shape[1], units = l.shape[2];
    const int64_t heads = l.heads, dh = units / heads;
    const float scale = 1.f / std::sqrt(static_cast<float>(dh));
    const memory::desc plain({length * batch, units}, dt_, Tag::ab);
    const Dims head_dims = {batch, heads, length, dh};
    const Dims head_strides = {units, dh, batch * units, 1};
    const memory::desc head_md(head_dims, dt_, head_strides);
    const memory::desc head_t_md({batch, heads, dh, length}, dt_,
                                 Dims{units, dh, 1, batch * units});
    const memory::desc scores_md({batch, heads, length, length}, dt_,
                                 Tag::abcd);
    const memory::desc scores_t_md(
        {batch, heads, length, length}, dt_,
        Dims{heads * length * length, length * length, 1, length});
    auto view = [&](const memory& m, const memory::desc& md) {
      owners_.push_back(m);
      return memory(md, engine_, m.get_data_handle());
    };
    for (int x : l.inputs) Flatten(x);
    memory q = Input(l.inputs[0], plain), k = Input(l.inputs[1], plain),
           v = Input(l.inputs[2], plain);
    SetOut(i, memory::desc(l.shape, dt_, Tag::abc));
    memory scores = Make(scores_md), probs = Make(scores_md);
    auto matmul = [&](const memory::desc& a, const memory::desc& b,
                      const memory::desc& c, const dnnl::primitive_attr& attr) {
      return dnnl::matmul(
          dnnl::matmul::primitive_desc({a, b, c}, attr, engine_));
    };
    // Scores: scale Q K^T.
    dnnl::primitive_attr scaled;
    scaled.set_output_scales(0, {scale});
    Run(forward_, matmul(head_md, head_t_md, scores_md, scaled),
        {{DNNL_ARG_SRC, view(q, head_md)},
         {DNNL_ARG_WEIGHTS, view(k, head_t_md)},
         {DNNL_ARG_DST, scores}});
    if (l.causal) {
      // -inf above the diagonal, added in place. (As a post-op of the
      // matmul it would send that to oneDNN's reference code.)
      const memory::desc mask_md({1, 1, length, length}, Dt::f32, Tag::abcd);
      memory mask = Make(mask_md);
      float* m = static_cast<float*>(mask.get_data_handle());
      for (int64_t r = 0; r < length; ++r) {
        for (int64_t c = 0; c < length; ++c) {
          m[r * length + c] =
              c > r ? -std::numeric_limits<float>::infinity() : 0.f;
        }
      }
      dnnl::binary::primitive_desc mask_pd(
          {dnnl::algorithm::binary_add, scores_md, mask_md, scores_md},
          engine_);
      Run(forward_, dnnl::binary(mask_pd),
          {{DNNL_ARG_SRC_0, scores},
           {DNNL_ARG_SRC_1, mask},
           {DNNL_ARG_DST, scores}});
    }
    dnnl::softmax_forward::primitive_desc softmax_pd({Forward(), scores_md, 3},
                                                     engine_);
    Run(forward_, dnnl::softmax_forward(softmax_pd),
        {{DNNL_ARG_SRC, scores}, {DNNL_ARG_DST, probs}});
    // Out = P V, written into [length, batch, units] through the head view.
    const memory out2d = view(out_[i], plain);
    Run(forward_, matmul(scores_md, head_md, head_md, {}),
        {{DNNL_ARG_SRC, probs},
         {DNNL_ARG_WEIGHTS, view(v, head_md)},
         {DNNL_ARG_DST, view(out2d, head_md)}});
    if (!train_) return;
    const memory d_out = view(diff_[i], head_md);
    memory d_probs = Make(scores_md), d_scores = Make(scores_md);
    // dP = dOut V^T; dV = P^T dOut.
    Run(backward_[i], matmul(head_md, head_t_md, scores_md, {}),
        {{DNNL_ARG_SRC, d_out},
         {DNNL_ARG_WEIGHTS, view(v, head_t_md)},
         {DNNL_ARG_DST, d_probs}});
    memory grad_v = GradTarget(l.inputs[2], i, plain);
    Run(backward_[i], matmul(scores_t_md, head_md, head_md, {}),
        {{DNNL_ARG_SRC, view(probs, scores_t_md)},
         {DNNL_ARG_WEIGHTS, d_out},
         {DNNL_ARG_DST, view(grad_v, head_md)}});
    Deliver(l.inputs[2], i, grad_v);
    dnnl::softmax_backward::primitive_desc softmax_bpd(
        {scores_md, scores_md, 3}, engine_, softmax_pd);
    Run(backward_[i], dnnl::softmax_backward(softmax_bpd),
        {{DNNL_ARG_DST, probs},
         {DNNL_ARG_DIFF_DST, d_probs},
         {DNNL_ARG_DIFF_SRC, d_scores}});
    // dQ = scale dS K; dK = scale dS^T Q.
    memory grad_q = GradTarget(l.inputs[0], i, plain);
    Run(backward_[i], matmul(scores_md, head_md, head_md, scaled),
        {{DNNL_ARG_SRC, d_scores},
         {DNNL_ARG_WEIGHTS, view(k, head_md)},
         {DNNL_ARG_DST, view(grad_q, head_md)}});
    Deliver(l.inputs[0], i, grad_q);
    memory grad_k = GradTarget(l.inputs[1], i, plain);
    Run(backward_[i], matmul(scores_t_md, head_md, head_md, scaled),
        {{DNNL_ARG_SRC, view(d_scores, scores_t_md)},
         {DNNL_ARG_WEIGHTS, view(q, head_md)},
         {DNNL_ARG_DST, view(grad_k, head_md)}});
    Deliver(l.inputs[1], i, grad_k);
  }

  void BuildEmbedding(int i, const Layer& l) {
    const memory::desc table_md({l.vocab, l.units}, dt_, Tag::ab);
    AddParam(i, "weight", table_md,
             memory::desc({l.vocab, l.units}, Dt::f32, Tag::ab),
             memory::desc({l.vocab, l.units}, Dt::f32, Tag::ab));
    SetOut(i, memory::desc(l.shape, dt_, Tag::tnc));
    Weight& table = ParamOf(i, "weight");
    const int64_t width = l.units * (dt_ == Dt::f32 ? 4 : 2);
    Push(forward_, OpClass::kMovement, "embedding", [this, i, &table, width] {
      const char* t = static_cast<const char*>(table.value.get_data_handle());
      char* o = static_cast<char*>(out_[i].get_data_handle());
      const int64_t n = static_cast<int64_t>(tokens_.size());
#pragma omp parallel for
      for (int64_t k = 0; k < n; ++k) {
        std::memcpy(o + k * width, t + tokens_[k] * width, width);
      }
    });
    if (!train_) return;
    const int64_t units = l.units;
    Push(backward_[i], OpClass::kMovement, "embedding",
         [this, i, &table, units] {
           float* g = static_cast<float*>(table.grad.get_data_handle());
           std::memset(g, 0, table.grad.get_desc().get_size());
           const void* d = diff_[i].get_data_handle();
           // Rows of one token add up; a serial pass keeps that race-free.
           for (size_t k = 0; k < tokens_.size(); ++k) {
             float* row = g + tokens_[k] * units;
             for (int64_t e = 0; e < units; ++e) {
               row[e] += Load(d, dt_, static_cast<int64_t>(k) * units + e);
             }
           }
         });
  }

  void BuildRecurrent(int i, const Layer& l) {
    const int x = l.inputs[0];
    const Dims in_dims = out_[x].get_desc().dims();
    const int64_t T = in_dims[0], N = in_dims[1], C = in_dims[2];
    const int64_t H = l.units;
    const int64_t G = Gates(l.cell);
    const int64_t bias_gates = l.cell == Cell::kGru ? 4 : G;
    const memory::desc src_md({T, N, C}, dt_, Tag::tnc);
    const memory::desc dst_md({T, N, H}, dt_, Tag::tnc);
    const memory::desc wl_any({1, 1, C, G, H}, dt_, Tag::any);
    const memory::desc wi_any({1, 1, H, G, H}, dt_, Tag::any);
    const memory::desc bias_md({1, 1, bias_gates, H}, Dt::f32, Tag::ldgo);
    const memory::desc none;  // zero initial state, no final state
    const auto dir = dnnl::rnn_direction::unidirectional_left2right;
    if (out_[x].get_desc() != src_md) {
      throw std::runtime_error("recurrent input is not in tnc format");
    }

    // Backward wants its own weight formats (oneDNN picks ldgoi there).
    const memory::desc dwl_any({1, 1, C, G, H}, Dt::f32, Tag::any);
    const memory::desc dwi_any({1, 1, H, G, H}, Dt::f32, Tag::any);
    const auto back = dnnl::prop_kind::backward;
    // oneDNN 2.6's RNN and LSTM backward take h_t for h_(t-1) in the
    // recurrent weights' gradient when the initial state is omitted (a zero
    // md); an explicit zero state gives the right one. bf16 has no backward
    // with one, so bf16 (inference only, see Unsupported()) omits it.
    const bool explicit_state = dt_ == Dt::f32;
    const memory::desc iter_md =
        explicit_state ? memory::desc({1, 1, N, H}, dt_, Tag::ldnc) : none;
    const memory::desc iter_c_md = iter_md;
    const memory::desc diff_iter_md = iter_md;
    memory zero_state, zero_cell;
    if (explicit_state) {
      zero_state = Make(iter_md);
      zero_cell = Make(iter_c_md);
      std::memset(zero_state.get_data_handle(), 0, iter_md.get_size());
      std::memset(zero_cell.get_data_handle(), 0, iter_c_md.get_size());
    }
    dnnl::primitive fwd, bwd;
    dnnl::rnn_primitive_desc_base fpd, bpd;
    switch (l.cell) {
      case Cell::kRnn: {
        const auto tanh = dnnl::algorithm::eltwise_tanh;
        dnnl::vanilla_rnn_forward::primitive_desc pd(
            {Forward(), tanh, dir, src_md, iter_md, wl_any, wi_any, bias_md,
             dst_md, none},
            engine_);
        fpd = pd;
        fwd = dnnl::vanilla_rnn_forward(pd);
        if (!train_) break;
        dnnl::vanilla_rnn_backward::primitive_desc b(
            {back, tanh, dir, src_md, iter_md, wl_any, wi_any, bias_md, dst_md,
             none, src_md, diff_iter_md, dwl_any, dwi_any, bias_md, dst_md,
             none},
            engine_, pd);
        bpd = b;
        bwd = dnnl::vanilla_rnn_backward(b);
        break;
      }
      case Cell::kLstm: {
        dnnl::lstm_forward::primitive_desc pd(
            {Forward(), dir, src_md, iter_md, iter_c_md, wl_any, wi_any,
             bias_md, dst_md, none, none},
            engine_);
        fpd = pd;
        fwd = dnnl::lstm_forward(pd);
        if (!train_) break;
        dnnl::lstm_backward::primitive_desc b(
            {back,    dir,     src_md,       iter_md,   iter_c_md,
             wl_any,  wi_any,  bias_md,      dst_md,    none,
             none,    src_md,  diff_iter_md, iter_c_md, dwl_any,
             dwi_any, bias_md, dst_md,       none,      none},
            engine_, pd);
        bpd = b;
        bwd = dnnl::lstm_backward(b);
        break;
      }
      case Cell::kGru: {
        dnnl::lbr_gru_forward::primitive_desc pd(
            {Forward(), dir, src_md, iter_md, wl_any, wi_any, bias_md, dst_md,
             none},
            engine_);
        fpd = pd;
        fwd = dnnl::lbr_gru_forward(pd);
        if (!train_) break;
        dnnl::lbr_gru_backward::primitive_desc b(
            {back, dir, src_md, iter_md, wl_any, wi_any, bias_md, dst_md, none,
             src_md, diff_iter_md, dwl_any, dwi_any, bias_md, dst_md, none},
            engine_, pd);
        bpd = b;
        bwd = dnnl::lbr_gru_backward(b);
        break;
      }
    }
    const memory::desc wl_md = fpd.weights_layer_desc();
    const memory::desc wi_md = fpd.weights_iter_desc();
    const memory::desc dwl_md = train_ ? bpd.diff_weights_layer_desc() : wl_md;
    const memory::desc dwi_md = train_ ? bpd.diff_weights_iter_desc() : wi_md;
    const memory::desc db_md = bias_md;
    // LibTorch's [gates x hidden, in] matrices are oneDNN's ldgoi layout.
    AddParam(i, "weight_ih", wl_md,
             memory::desc({1, 1, C, G, H}, Dt::f32, Tag::ldgoi), dwl_md);
    AddParam(i, "weight_hh", wi_md,
             memory::desc({1, 1, H, G, H}, Dt::f32, Tag::ldgoi), dwi_md);
    for (const char* role : {"weight_ih", "weight_hh"}) {
      Weight& p = ParamOf(i, role);
      p.gru = l.cell == Cell::kGru;
      p.gate_rows = H;
    }
    RecurrentBias bias;
    bias.ih_index = param_index_.at({i, "bias_ih"});
    bias.hh_index = param_index_.at({i, "bias_hh"});
    bias.cell = l.cell;
    bias.hidden = H;
    bias.combined = Make(bias_md);
    if (train_) bias.grad = Make(db_md);
    biases_.push_back(bias);
    RecurrentBias& b = biases_.back();

    SetOut(i, dst_md);
    Weight& wl = ParamOf(i, "weight_ih");
    Weight& wi = ParamOf(i, "weight_hh");
    Args args = {{DNNL_ARG_SRC_LAYER, out_[x]},
                 {DNNL_ARG_WEIGHTS_LAYER, wl.value},
                 {DNNL_ARG_WEIGHTS_ITER, wi.value},
                 {DNNL_ARG_BIAS, b.combined},
                 {DNNL_ARG_DST_LAYER, out_[i]}};
    if (explicit_state) {
      args[DNNL_ARG_SRC_ITER] = zero_state;
      if (l.cell == Cell::kLstm) args[DNNL_ARG_SRC_ITER_C] = zero_cell;
    }
    if (train_) args[DNNL_ARG_WORKSPACE] = Make(fpd.workspace_desc());
    Run(forward_, fwd, args);
    if (!train_) return;
    memory grad = Grad(x) ? GradTarget(x, i, src_md) : Make(src_md);
    Args bargs = args;
    // The weights as backward reads them, copied after every update.
    for (auto [arg, weight] : {std::pair{DNNL_ARG_WEIGHTS_LAYER, &wl},
                               std::pair{DNNL_ARG_WEIGHTS_ITER, &wi}}) {
      const memory::desc want = bpd.query_md(dnnl::query::exec_arg_md, arg);
      if (want != weight->value.get_desc()) {
        bargs[arg] = Make(want);
        Reorder(backward_[i], weight->value, bargs[arg], false);
      }
    }
    bargs[DNNL_ARG_DIFF_DST_LAYER] = diff_[i];
    bargs[DNNL_ARG_DIFF_SRC_LAYER] = grad;
    bargs[DNNL_ARG_DIFF_WEIGHTS_LAYER] = wl.grad;
    bargs[DNNL_ARG_DIFF_WEIGHTS_ITER] = wi.grad;
    bargs[DNNL_ARG_DIFF_BIAS] = b.grad;
    if (explicit_state) {
      bargs[DNNL_ARG_DIFF_SRC_ITER] = Make(diff_iter_md);
      if (l.cell == Cell::kLstm) {
        bargs[DNNL_ARG_DIFF_SRC_ITER_C] = Make(iter_c_md);
      }
    }
    // oneDNN adds the weight gradients to what the buffers hold.
    Push(backward_[i], OpClass::kMovement, "clear rnn gradients",
         [&wl, &wi, &b] {
           for (const memory* m : {&wl.grad, &wi.grad, &b.grad}) {
             std::memset(m->get_data_handle(), 0, m->get_desc().get_size());
           }
         });
    Run(backward_[i], bwd, bargs);
    if (Grad(x)) Deliver(x, i, grad);
    Push(update_, OpClass::kOptimizer, "rnn bias", [&b] { b.Update(); });
  }

  // Mean softmax cross-entropy over the rows of the logits; in training
  // also writes the logits' gradient.
  double CrossEntropy(bool write_grad) {
    stream_.wait();
    const int logits = graph_.logits();
    const int64_t classes = graph_.layer(logits).shape.back();
    const int64_t rows = static_cast<int64_t>(labels_.size());
    const void* x = out_[logits].get_data_handle();
    void* d = write_grad ? diff_[logits].get_data_handle() : nullptr;
    double total = 0;
#pragma omp parallel for reduction(+ : total)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = r * classes;
      float max = Load(x, dt_, base);
      for (int64_t c = 1; c < classes; ++c) {
        max = std::max(max, Load(x, dt_, base + c));
      }
      double sum = 0;
      for (int64_t c = 0; c < classes; ++c) {
        sum += std::exp(static_cast<double>(Load(x, dt_, base + c)) - max);
      }
      total += std::log(sum) + max - Load(x, dt_, base + labels_[r]);
      if (d == nullptr) continue;
      for (int64_t c = 0; c < classes; ++c) {
        const double p =
            std::exp(static_cast<double>(Load(x, dt_, base + c)) - max) / sum;
        Store(d, dt_, base + c,
              static_cast<float>((p - (c == labels_[r])) / rows));
      }
    }
    return total / rows;
  }

  struct PairHash {
    size_t operator()(const std::pair<int, std::string>& k) const {
      return std::hash<std::string>()(k.second) ^ (k.first * 0x9e3779b9u);
    }
  };

  const Graph graph_;
  const bool train_;
  const Dt dt_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  const uint64_t seed_;
  const std::vector<bool> needs_grad_;
  std::vector<memory> out_, diff_;
  std::vector<int> last_reader_;
  std::vector<int> readers_;  // how many layers read each layer's output
  std::vector<Weight> params_;
  std::unordered_map<std::pair<int, std::string>, int, PairHash> param_index_;
  std::deque<RecurrentBias> biases_;  // stable addresses for the closures
  std::vector<int64_t> tokens_, labels_;
  Actions forward_, update_;
  std::vector<Actions> backward_;  // per layer
  double loss_ = std::nan("");
  int building_ = 0;            // the layer whose steps are being built
  std::vector<memory> owners_;  // buffers behind reshaped views
  bool mean_loss_ = false;
};

class OnednnBackend : public Backend {
 public:
  std::string name() const override { return "onednn"; }

  std::string Unsupported(const Job& job) const override {
    if (job.dtype == DType::kBf16 &&
        dnnl::get_effective_cpu_isa() < dnnl::cpu_isa::avx512_core) {
      return "onednn: bf16 needs a CPU with AVX-512 (avx512_core) or newer";
    }
    if (job.dtype == DType::kBf16 && job.mode == Mode::kTrain) {
      for (const Layer& l : job.graph.layers()) {
        // GRU: no bf16 backward descriptor; RNN and LSTM: none with the
        // explicit initial state their correct gradients need (see
        // BuildRecurrent).
        if (l.op == Op::kRecurrent) {
          return "onednn: oneDNN " + Version() +
                 " has no correct bf16 backward for " + ToString(l.cell) +
                 " cells";
        }
      }
    }
    return "";
  }

  std::unique_ptr<Runner> Prepare(const Job& job,
                                  const RunOptions& opt) const override {
    try {
      return std::make_unique<OnednnRunner>(job, opt);
    } catch (const dnnl::error& e) {
      throw std::runtime_error(std::string("oneDNN: ") + e.what());
    }
  }

  std::string Describe() const override {
    return "oneDNN " + Version() + ", CPU runtime OpenMP, ISA " + IsaName();
  }

 private:
  static std::string Version() {
    const dnnl_version_t* v = dnnl_version();
    return std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
           std::to_string(v->patch);
  }

  static std::string IsaName() {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx512_core_amx:
        return "avx512_core_amx";
      case dnnl::cpu_isa::avx512_core_bf16:
        return "avx512_core_bf16";
      case dnnl::cpu_isa::avx512_core_vnni:
        return "avx512_core_vnni";
      case dnnl::cpu_isa::avx512_core:
        return "avx512_core";
      case dnnl::cpu_isa::avx2_vnni:
        return "avx2_vnni";
      case dnnl::cpu_isa::avx2:
        return "avx2";
      default:
        return "other";
    }
  }
};

}  // namespace

std::unique_ptr<Backend> MakeOnednnBackend() {
  return std::make_unique<OnednnBackend>();
}

}  // namespace paradnn
