// The oneDNN runner: one primitive per layer of the graph, created once in
// Prepare with the memory formats oneDNN chooses ("any"), reorders only where
// a primitive wants another format than its producer's, and a timed step
// that only executes the list. The layers are built in one file per kind
// (dense, convolution, normalization, elementwise, attention, recurrent),
// as benchdnn keeps a driver per primitive; runner.cpp holds the rest.
#pragma once

#include <omp.h>
#include <oneapi/dnnl/dnnl_debug.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>

#include "backends/backend.h"
#include "backends/onednn/compat.h"
#include "distributed/world.h"
#include "generators/check.h"
#include "generators/fusion.h"
#include "generators/init.h"

namespace paradnn::onednn {

using Tag = memory::format_tag;
using Dt = memory::data_type;

// Whether oneDNN picked its reference implementation for a primitive: the
// generic loops it falls back on where no optimized kernel takes the
// shapes, formats and types asked for, tens of times slower.
inline bool IsReference(const dnnl::primitive_desc_base& pd) {
  return std::string(pd.impl_info_str()).rfind("ref", 0) == 0;
}

inline float Bf16ToFloat(uint16_t v) {
  uint32_t bits = static_cast<uint32_t>(v) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

inline uint16_t FloatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  // Round to nearest even, as oneDNN and LibTorch do.
  bits += 0x7fff + ((bits >> 16) & 1);
  return static_cast<uint16_t>(bits >> 16);
}

// Reads element i of a plain f32 or bf16 buffer as float.
inline float Load(const void* data, Dt dt, int64_t i) {
  return dt == Dt::f32 ? static_cast<const float*>(data)[i]
                       : Bf16ToFloat(static_cast<const uint16_t*>(data)[i]);
}

inline void Store(void* data, Dt dt, int64_t i, float v) {
  if (dt == Dt::f32) {
    static_cast<float*>(data)[i] = v;
  } else {
    static_cast<uint16_t*>(data)[i] = FloatToBf16(v);
  }
}

// For every id k in order, body(k, from, to) on columns [from, to) of row
// ids[k] of a table `units` wide: threads split the columns, so no two
// touch one element where ids repeat, and each row's updates keep the ids'
// order.
template <typename Body>
void ForEachIdColumns(const std::vector<int64_t>& ids, int64_t units,
                      int threads, Body body) {
  const int64_t n = static_cast<int64_t>(ids.size());
  constexpr int64_t kBlock = 16;
#pragma omp parallel for num_threads(threads)
  for (int64_t from = 0; from < units; from += kBlock) {
    const int64_t to = std::min(units, from + kBlock);
    for (int64_t k = 0; k < n; ++k) body(k, from, to);
  }
}

// LibTorch orders GRU gates (r, z, n); oneDNN orders them (u = z, r, o = n).
// The same permutation maps both ways.
constexpr int kGruGate[3] = {1, 0, 2};

// One eltwise algorithm with its alpha and beta as oneDNN reads them.
struct EltwiseStep {
  dnnl::algorithm alg;
  float alpha = 0.f, beta = 0.f;
};

// The eltwise steps that compute activation `op` (FusibleActivation): one,
// but for oneDNN 2's hard sigmoid, which has none (a line, then a clip).
std::vector<EltwiseStep> ActivationSteps(Op op);

// A trainable tensor: its memory in the primitive's format, its gradient,
// and how to move values to and from LibTorch's layout.
struct Weight {
  memory value;
  memory grad;
  // Plain f32 in LibTorch's layout (gates permuted for GRU): values pass
  // through a buffer of this layout only while they are written or read,
  // so the model does not hold its weights twice.
  memory::desc user;
  bool gru = false;
  int64_t gate_rows = 0;  // rows per gate block, for the GRU permutation
};

class OnednnRunner : public Runner {
 public:
  OnednnRunner(const Job& job, const RunOptions& opt);

  void Step() override { RunStep(nullptr); }

  StepProfile Profile(int steps) override;

  void Cool() override;

  double Loss() override;

  std::vector<float> Output() override;

  std::vector<float> Param(int index) override;

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
    // "convolution backward (brg:avx512_core)": a primitive's with the
    // implementation oneDNN chose, "embedding forward" for a loop of ours.
    std::string name;
    std::function<void()> run;
    int layer = -1;  // the graph layer it is part of
    Pass pass = Pass::kForward;
  };
  using Actions = std::vector<Action>;

  static double Seconds(std::chrono::steady_clock::time_point since);

  // With a profile, times every action; the CPU stream executes each
  // primitive before returning, so the times are the primitives' own.
  void RunActions(const Actions& list, StepProfile* profile);

  void RunStep(StepProfile* profile);

  // Reads the gradient the loss hands the layer back into the caches.
  void ReadLossGradient();
  // Reads one buffer into the caches.
  void ReadIn(const memory& m);

  // The list being built: forward, a layer's backward, or the update.
  const char* Phase(const Actions& list) const;

  static OpClass ClassOf(dnnl::primitive::kind kind);

  void Push(Actions& list, OpClass cls, const std::string& what,
            std::function<void()> run);

  // A buffer the step uses (Cool() flushes it).
  memory Make(const memory::desc& md) {
    held_.push_back(memory(md, engine_));
    return held_.back();
  }
  // A buffer used outside the step only: values on their way in or out.
  memory Staging(const memory::desc& md) { return memory(md, engine_); }
  // A parameter's gradient memory: its own buffer, or (data-parallel) one
  // PlaceGradients puts in a shared buffer.
  memory MakeGrad(const memory::desc& md);
  void PlaceGradients();

  static Tag PlainTag(size_t rank);

  void Run(Actions& list, dnnl::primitive p, Args args);

  // Copies src into dst's format; with accumulate, adds to dst instead.
  void Reorder(Actions& list, const memory& src, const memory& dst,
               bool accumulate, float scale = 1.f);

  // Layer x's output in the format `want`, reordered in the forward pass
  // when its producer wrote another.
  memory Input(int x, const memory::desc& want);

  // `m` as layer i's backward pass reads it in the format `want`: `m`
  // itself, or a buffer a reorder fills in that pass.
  memory InBackward(int i, const memory& m, const memory::desc& want);

  // Where a reader of layer x writes x's gradient: x's own gradient memory
  // when this reader is the first to write it (the last reader, since
  // backward runs in reverse) and the format matches; else a scratch.
  memory GradTarget(int x, int reader, const memory::desc& md);

  // Moves a gradient a reader computed into layer x's gradient, adding it
  // to what later readers already wrote.
  void Deliver(int x, int reader, const memory& grad);

  bool Grad(int x) const { return train_ && needs_grad_[x]; }

  dnnl::prop_kind Forward() const;

  // Sets out_[i] and, in training, its gradient memory of the same format.
  void SetOut(int i, const memory::desc& md);

  Weight& ParamOf(int layer, const std::string& role);

  // A parameter stored in `md`, initialized from LibTorch's layout `user`.
  void AddParam(int layer, const std::string& role, const memory::desc& md,
                const memory::desc& user, const memory::desc& grad_md);

  void WriteParam(Weight& p, const ParamTensor& spec, int index);

  // A reorder outside the step, at preparation or to read results.
  void RunNow(memory from, memory to);

  std::vector<float> ReadParam(Weight& p);

  static void PermuteGates(const float* from, float* to, int64_t gate_rows,
                           int64_t n);

  // SGD: w += -lr * grad, one scaled add (Reorder).
  void AddUpdate(Weight& p);

  void Build(int i);

  // The format a convolution producing `dims` in this runner's mode would
  // write (training and inference pick different ones): images fed to
  // the graph (a layer's input when it runs on its own) arrive as they
  // would from the convolution before it, not in plain NCHW, where batch
  // norm, pooling and eltwise primitives run several times slower.
  memory::desc ConvolutionOutput(const Dims& dims);

  // A [length, batch, features] output (and its gradient) becomes a matrix
  // of length x batch rows, through views on the same buffers.
  void Flatten(int x);
  // The other way: layer x's output (and gradient) viewed with `dims`, of
  // another rank and as many elements (a dense layer's [rows, units] read
  // as [length, batch, units]); their layout must be plain.
  void Reshape(int x, const Dims& dims);

  void BuildDense(int i, const Layer& l);

  void BuildConv(int i, const Layer& l);
  // A weight-normed convolution's parameters v and g, and the weights made
  // from them in the convolution's format `md`: that memory and, in
  // training, the weights' gradient's (in `grad_md`).
  std::pair<memory, memory> WeightNormed(int i, const Layer& l,
                                         const memory::desc& plain,
                                         const memory::desc& md,
                                         const memory::desc& grad_md);
  // The gradients of v and g from the weights'.
  void WeightNormBackward(int i, const Layer& l, const memory::desc& plain,
                          const memory& w_grad);

  void BuildBatchNorm(int i, const Layer& l);
  void BuildInstanceNorm(int i, const Layer& l);
  // A normalization's mean and variance, which training's forward pass
  // writes into `args` for backward to read; none in inference, which
  // computes them on the fly.
  std::pair<memory, memory> TrainingStatistics(const memory::desc& mean_md,
                                               const memory::desc& variance_md,
                                               Args* args);

  // alpha and beta as the algorithm reads them (EltwisePd).
  void BuildEltwise(int i, const Layer& l, dnnl::algorithm alg,
                    float alpha = 0.f, float beta = 0.f);
  // An activation layer (ActivationSteps).
  void BuildActivation(int i, const Layer& l);

  // Fused inference (fusion.cpp). The post-ops of group g's product: its
  // activations, the sum of its shortcut, the activations after it.
  dnnl::primitive_attr FusedAttr(const FusedGroup& g) const;
  // The buffer group g's product writes in format `md`, the output of
  // every layer of the group; with a sum, holding the shortcut's values
  // when the product runs: the shortcut's own buffer where nothing reads
  // it later, else a copy made in the step.
  memory FusedOutput(const FusedGroup& g, const memory::desc& md);
  // The batch norm's scale and shift folded into the convolution's
  // weights and bias, once the weights are written.
  void FoldBatchNorm(const FusedGroup& g);

  // relu6(x + 3) / 6 where oneDNN has no hard sigmoid (2): x / 6 + 1/2,
  // then clipped to [0, 1], forward and backward.
  void BuildHardSigmoid(int i, const Layer& l);

  // [N, C, H, W] -> [N, C x H x W] in LibTorch's order.
  void BuildFlatten(int i, const Layer& l);

  // x [N, C, H, W] times s [N, C] broadcast over H and W.
  void BuildChannelMul(int i, const Layer& l);
  // ShuffleNet's channel shuffle: oneDNN's shuffle primitive.
  void BuildChannelShuffle(int i, const Layer& l);
  // A buffer of ones in `md` (its data type), filled once.
  memory Ones(const memory::desc& md);
  // x [N, C, H, W] times a trainable factor per channel.
  void BuildLayerScale(int i, const Layer& l);
  void BuildResize(int i, const Layer& l);
  memory ScaleMaps(int i, const memory::desc& md,
                   const dnnl::binary::primitive_desc& pd,
                   const memory& factors, bool factor_grad);

  // kernels: the window along each axis after [N, C].
  void BuildPool(int i, const Layer& l, dnnl::algorithm alg,
                 const Dims& kernels, int64_t stride, int64_t pad);

  void BuildAdd(int i, const Layer& l);

  // Batch and layer normalization's backward take the same arguments (the
  // shift among them where `shift_in`): layer i's input `src` as forward
  // read it, the gradient of its output `diff_dst`, the input's `grad`.
  Args NormalizationBackward(int i, const memory& src, const memory& diff_dst,
                             const memory& mean, const memory& variance,
                             const memory& grad, bool shift_in);

  void BuildLayerNorm(int i, const Layer& l);

  // A vision transformer's token layers (tokens.cpp).
  void BuildSequence(int i, const Layer& l);
  void BuildMaps(int i, const Layer& l);
  void BuildClassToken(int i, const Layer& l);
  void BuildFirstToken(int i, const Layer& l);

  // x + a [length, units] table broadcast over the batch; the table's
  // gradient is the output's summed over the batch.
  void BuildPositional(int i, const Layer& l);

  // Multi-head attention with matmuls on strided views: head j of [length,
  // batch, units] is the 4-D [batch, heads, length, dh] view with strides
  // (units, dh, batch * units, 1), so no reorder splits or merges heads.
  void BuildAttention(int i, const Layer& l);

  void BuildEmbedding(int i, const Layer& l);

  // Each example's rows summed; training updates the rows looked up only,
  // in the update (a sparse gradient: the table has no gradient buffer).
  void BuildEmbeddingBag(int i, const Layer& l);

  // Plain rows of each input copied side by side; backward hands each
  // input its columns of the gradient.
  void BuildConcat(int i, const Layer& l);
  // Along another dimension than the last (a CNN's channels): oneDNN's
  // concat, in the format it picks; backward reorders each input's part
  // of the gradient out of it.
  void BuildConcatAlong(int i, const Layer& l);
  // The loss's logits row-major (CrossEntropy).
  void BuildSoftmaxCrossEntropy(int i, const Layer& l);
  // A range of indices along one dimension, copied from its input's plain
  // layout.
  void BuildSlice(int i, const Layer& l);

  // x0 * (W x + b) + x as inner products (V, then U with the bias, or W)
  // and binary primitives, on plain [batch, units].
  void BuildCross(int i, const Layer& l);

  // The decoder's layers (decoder.cpp), inference only.
  memory PlainRows(int x);
  void BuildRmsNorm(int i, const Layer& l);
  void BuildRope(int i, const Layer& l);
  void BuildSwiGlu(int i, const Layer& l);
  void BuildLastPosition(int i, const Layer& l);
  // Grouped-query attention over a key/value cache, read in place.
  void BuildCachedAttention(int i, const Layer& l);
  char* AttentionScratch();
  memory CausalMask(int64_t from, int64_t span, int64_t group, int64_t keys);

  void BuildRecurrent(int i, const Layer& l);

  // Mean softmax cross-entropy over the rows of `logits` (row-major);
  // where `grad` is given, also writes the logits' gradient there.
  double CrossEntropy(const memory& logits, const memory* grad);
  // A row-major copy of the logits, in `dt`, made outside the step.
  memory PlainLogits(Dt dt);

  struct PairHash {
    size_t operator()(const std::pair<int, std::string>& k) const {
      return std::hash<std::string>()(k.second) ^ (k.first * 0x9e3779b9u);
    }
  };

  const Graph graph_;
  const bool train_;
  // Inference's fused groups; none in training or without RunOptions::fuse.
  const FusionPlan plan_;
  // The bias a folded batch norm gives a convolution that had none.
  std::unordered_map<int, memory> folded_bias_;
  // A weight-normed convolution's norms |v|, from its forward pass.
  std::unordered_map<int, memory> norms_;
  const Dt dt_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  const uint64_t seed_;
  const int64_t first_example_;
  // Data-parallel training: the communicator, and the buffers holding the
  // gradients it averages after backward, before the update.
  Communicator* const comm_;
  std::vector<std::unique_ptr<char, decltype(&std::free)>> grad_arenas_;
  std::vector<GradBuffer> grads_;
  const std::vector<bool> needs_grad_;
  std::vector<memory> out_, diff_;
  std::vector<int> last_reader_;
  std::vector<int> readers_;  // how many layers read each layer's output
  std::vector<Weight> params_;
  std::unordered_map<std::pair<int, std::string>, int, PairHash> param_index_;
  std::deque<RecurrentBias> biases_;  // stable addresses for the closures
  // Rotary layers' cos and sin tables, for their closures.
  std::deque<std::pair<std::vector<float>, std::vector<float>>> tables_;
  memory attention_scratch_;   // every cached attention's, shared
  std::vector<memory> masks_;  // causal masks, one per shape
  std::vector<std::vector<int64_t>> tokens_;  // of each kTokens layer
  std::vector<int64_t> labels_;
  // The softmax cross-entropy's logits and their gradient, row-major, in
  // training.
  memory logits_, logits_grad_;
  Actions forward_, update_;
  std::vector<Actions> backward_;  // per layer
  double loss_ = std::nan("");
  int building_ = 0;            // the layer whose steps are being built
  std::vector<memory> owners_;  // buffers behind reshaped views
  std::vector<memory> held_;    // every buffer the runner made
  bool mean_loss_ = false;
  int threads_ = 1;
  int64_t l3_bytes_ = 0;                // RunOptions::l3_bytes
  std::vector<float> softmax_scratch_;  // a row of logits per thread
};

}  // namespace paradnn::onednn
