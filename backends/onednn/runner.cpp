// oneDNN backend. The runner: preparation, the step, memory and parameters, the
// loss.
#include "backends/onednn/runner.h"

#include "backends/onednn/padded_reorder.h"
#include "machine/caches.h"

namespace paradnn::onednn {

OnednnRunner::OnednnRunner(const Job& job, const RunOptions& opt)
    : graph_(job.graph),
      train_(job.mode == Mode::kTrain),
      plan_(PlanFusion(job.graph, job.mode,
                       opt.fuse ? Fusion::kFull : Fusion::kNone)),
      dt_(job.dtype == DType::kBf16 ? Dt::bf16 : Dt::f32),
      engine_(dnnl::engine::kind::cpu, 0),
      stream_(engine_),
      seed_(opt.seed),
      first_example_(opt.first_example),
      comm_(job.mode == Mode::kTrain ? opt.comm : nullptr),
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
  tokens_.resize(g.size());
  for (int i = 0; i < g.size(); ++i) Build(i);
  for (size_t p = 0; p < specs.size(); ++p) {
    Weight& param = params_[p];
    if (!param.value) continue;  // recurrent biases live in bias_masters_
    WriteParam(param, specs[p], static_cast<int>(p));
    // An embedding bag's table is updated by its own loop (no gradient).
    building_ = specs[p].layer;
    if (train_ && param.grad) AddUpdate(param);
  }
  for (const FusedGroup& group : plan_.groups) {
    if (group.batch_norm >= 0) FoldBatchNorm(group);
  }
  for (RecurrentBias& b : biases_) {
    b.ih = InitParam(graph_, opt.seed, b.ih_index);
    b.hh = InitParam(graph_, opt.seed, b.hh_index);
    b.Combine();
  }
  labels_ = InitLabels(graph_, opt.seed, first_example_);
  if (comm_ != nullptr) PlaceGradients();
  threads_ = opt.threads;
  l3_bytes_ = opt.l3_bytes;
  softmax_scratch_.resize(
      threads_ * static_cast<size_t>(
                     graph_.layer(graph_.logits()).shape[graph_.class_axis()]));
  for (int i = 0; i < opt.warmup; ++i) Step();
}

StepProfile OnednnRunner::Profile(int steps) {
  StepProfile profile;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i) RunStep(&profile);
  profile.SetWall(Seconds(start), steps);
  return profile;
}

double OnednnRunner::Loss() {
  if (mean_loss_) {
    const std::vector<float> out = Output();
    double sum = 0;
    for (float v : out) sum += v;
    return sum / out.size();
  }
  return train_ ? loss_ : CrossEntropy(PlainLogits(dt_), nullptr);
}

memory OnednnRunner::PlainLogits(Dt dt) {
  const memory& logits = out_[graph_.logits()];
  const Dims dims = DimsOf(logits.get_desc());
  memory plain = Staging(memory::desc(dims, dt, PlainTag(dims.size())));
  RunNow(logits, plain);
  return plain;
}

std::vector<float> OnednnRunner::Output() {
  const memory plain = PlainLogits(Dt::f32);
  const float* p = static_cast<const float*>(plain.get_data_handle());
  return std::vector<float>(p, p + plain.get_desc().get_size() / sizeof(float));
}

std::vector<float> OnednnRunner::Param(int index) {
  // Inference never changes a parameter (and a folded batch norm's live
  // in its convolution's weights).
  if (!train_) return InitParam(graph_, seed_, index);
  for (const RecurrentBias& b : biases_) {
    if (b.ih_index == index) return b.ih;
    if (b.hh_index == index) return b.hh;
  }
  return ReadParam(params_.at(index));
}

double OnednnRunner::Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since)
      .count();
}

// With a profile, times every action; the CPU stream executes each
// primitive before returning, so the times are the primitives' own.
void OnednnRunner::RunActions(const Actions& list, StepProfile* profile) {
  for (const Action& a : list) {
    if (profile == nullptr) {
      a.run();
      continue;
    }
    const auto start = std::chrono::steady_clock::now();
    a.run();
    stream_.wait();
    profile->Add(a.cls, a.name, Seconds(start), a.layer, a.pass);
  }
}

void OnednnRunner::RunStep(StepProfile* profile) {
  RunActions(forward_, profile);
  if (train_) {
    // A mean loss's gradient is constant, set in Prepare; its value is
    // computed when asked for.
    if (!mean_loss_) {
      const auto start = std::chrono::steady_clock::now();
      loss_ = CrossEntropy(logits_, &logits_grad_);
      if (profile) {
        // The loss layer's, forward and its gradient together.
        profile->Add(OpClass::kElementwise, "softmax cross-entropy",
                     Seconds(start), graph_.size() - 1);
      }
    }
    // From the loss down to the first layer.
    for (auto it = backward_.rbegin(); it != backward_.rend(); ++it) {
      RunActions(*it, profile);
    }
    if (comm_ != nullptr) {
      const auto start = std::chrono::steady_clock::now();
      comm_->AverageGradients(grads_);
      if (profile) {
        profile->Add(OpClass::kCommunication, "gradient all-reduce",
                     Seconds(start));
      }
    }
    RunActions(update_, profile);
  }
  stream_.wait();
}

void OnednnRunner::Cool() {
  for (const memory& m : held_) {
    FlushFromCaches(m.get_data_handle(), m.get_desc().get_size(), threads_);
  }
  // Inside a model the layers before left the caches full of their
  // outputs, modified: this layer's first writes into its own buffer
  // write them back (its ReLUs, adds and pools ran 2-4x longer in the model
  // than after a flush that left the caches clean).
  FillCachesWithOtherData(l3_bytes_, threads_);
  // What the layers before would have just written: the data (not a
  // shortcut an add reads), and the gradient a mean loss hands back (the
  // next layer's, inside a model; a cross-entropy's is written later).
  const std::vector<bool> written = graph_.InputsJustWritten();
  for (int i = 0; i < graph_.size(); ++i) {
    const Layer& l = graph_.layer(i);
    if (l.op == Op::kInput && written[i]) ReadIn(out_[i]);
    if (l.op == Op::kTokens) {
      ReadIntoCaches(tokens_[i].data(), tokens_[i].size() * sizeof(int64_t),
                     threads_);
    }
  }
  if (train_ && mean_loss_) ReadLossGradient();
}

void OnednnRunner::ReadIn(const memory& m) {
  ReadIntoCaches(m.get_data_handle(), m.get_desc().get_size(), threads_);
}

// The next layer's backward just wrote it, inside a model; a mean loss's
// is constant, the cross-entropy's written by the step.
void OnednnRunner::ReadLossGradient() {
  for (int i = 0; i < graph_.size(); ++i) {
    const Layer& l = graph_.layer(i);
    const bool loss = l.op == Op::kMeanLoss || l.op == Op::kSoftmaxCrossEntropy;
    if (loss && Grad(l.inputs[0])) ReadIn(diff_[l.inputs[0]]);
  }
}

// The list being built: forward, a layer's backward, or the update.
const char* OnednnRunner::Phase(const Actions& list) const {
  return &list == &forward_  ? "forward"
         : &list == &update_ ? "update"
                             : "backward";
}

OpClass OnednnRunner::ClassOf(dnnl::primitive::kind kind) {
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

void OnednnRunner::Push(Actions& list, OpClass cls, const std::string& what,
                        std::function<void()> run) {
  const bool update = &list == &update_;
  list.push_back({update ? OpClass::kOptimizer : cls, what + " " + Phase(list),
                  std::move(run), building_,
                  update               ? Pass::kUpdate
                  : &list == &forward_ ? Pass::kForward
                                       : Pass::kBackward});
}

Tag OnednnRunner::PlainTag(size_t rank) {
  static const Tag kPlain[] = {Tag::undef, Tag::a,    Tag::ab,
                               Tag::abc,   Tag::abcd, Tag::abcde};
  PARADNN_CHECK(rank < std::size(kPlain),
                "a plain tensor of more than 5 dimensions");
  return kPlain[rank];
}

void OnednnRunner::Run(Actions& list, dnnl::primitive p, Args args) {
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
  const std::string impl = ImplementationOf(p);
  if (!impl.empty()) list.back().name += " (" + impl + ")";
}

// Copies src into dst's format; with accumulate, adds to dst instead.
// An add between tensors of one format and type is a binary add (its
// second input scaled): a reorder with a sum runs oneDNN's generic
// `simple:any` code there, several times slower (docs/architecture.md);
// FC/layers:4/nodes:512/input:2000/output:200/batch:64/onednn/fp32/train
// took 2.66 ms a step with its updates reordered, 2.12 ms with them added.
void OnednnRunner::Reorder(Actions& list, const memory& src, const memory& dst,
                           bool accumulate, float scale) {
  const memory::desc& d = dst.get_desc();
  if (accumulate && src.get_desc() == d) {
    dnnl::primitive_attr attr;
    Args args = {
        {DNNL_ARG_SRC_0, dst}, {DNNL_ARG_SRC_1, src}, {DNNL_ARG_DST, dst}};
    if (scale != 1.f) {
      args.merge(ScaleInput(attr, DNNL_ARG_SRC_1, scale, engine_, false));
    }
    const auto pd =
        BinaryPd(engine_, dnnl::algorithm::binary_add, d, d, d, attr);
    if (!IsReference(pd)) {
      Run(list, dnnl::binary(pd), args);
      return;
    }
  }
  if (!PaddedReordersExact() &&
      (Padded(src.get_desc()) || Padded(dst.get_desc()))) {
    Push(list, OpClass::kMovement, "reorder (element by element, padded)",
         [src, dst, accumulate, scale] {
           CopyElements(src, dst, accumulate, scale);
         });
    return;
  }
  dnnl::primitive_attr attr;
  Args args = {{DNNL_ARG_FROM, src}, {DNNL_ARG_TO, dst}};
  if (scale != 1.f) {
    args.merge(ScaleInput(attr, DNNL_ARG_FROM, scale, engine_, true));
  }
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
  }
  dnnl::reorder::primitive_desc pd(engine_, src.get_desc(), engine_,
                                   dst.get_desc(), attr);
  Run(list, dnnl::reorder(pd), args);
}

memory OnednnRunner::InBackward(int i, const memory& m,
                                const memory::desc& want) {
  if (m.get_desc() == want) return m;
  memory copy = Make(want);
  Reorder(backward_[i], m, copy, false);
  return copy;
}

// Layer x's output in the format `want`, reordered in the forward pass
// when its producer wrote another.
memory OnednnRunner::Input(int x, const memory::desc& want) {
  if (DimsOf(out_[x].get_desc()).size() != DimsOf(want).size()) {
    Reshape(x, DimsOf(want));
  }
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
memory OnednnRunner::GradTarget(int x, int reader, const memory::desc& md) {
  if (last_reader_[x] == reader && diff_[x].get_desc() == md) return diff_[x];
  return Make(md);
}

// Moves a gradient a reader computed into layer x's gradient, adding it
// to what later readers already wrote.
void OnednnRunner::Deliver(int x, int reader, const memory& grad) {
  if (grad.get() == diff_[x].get()) return;
  Reorder(backward_[reader], grad, diff_[x], last_reader_[x] != reader);
}

dnnl::prop_kind OnednnRunner::Forward() const {
  return train_ ? dnnl::prop_kind::forward_training
                : dnnl::prop_kind::forward_inference;
}

// Sets out_[i] and, in training, its gradient memory of the same format.
void OnednnRunner::SetOut(int i, const memory::desc& md) {
  out_[i] = Make(md);
  if (Grad(i)) diff_[i] = Make(md);
}

Weight& OnednnRunner::ParamOf(int layer, const std::string& role) {
  return params_[param_index_.at({layer, role})];
}

// A parameter stored in `md`, initialized from LibTorch's layout `user`.
void OnednnRunner::AddParam(int layer, const std::string& role,
                            const memory::desc& md, const memory::desc& user,
                            const memory::desc& grad_md) {
  Weight& p = ParamOf(layer, role);
  p.value = Make(md);
  p.user = user;
  if (train_ && !grad_md.is_zero()) p.grad = MakeGrad(grad_md);
}

memory OnednnRunner::MakeGrad(const memory::desc& md) {
  // Data-parallel, PlaceGradients gives it its place once all are made.
  return comm_ != nullptr ? memory(md, engine_, DNNL_MEMORY_NONE) : Make(md);
}

// Data-parallel: every gradient in one buffer per data type, as its memory
// holds it (a blocked format's padding included: the same primitives on
// every rank lay them out alike), each at a 64-byte boundary, the gaps
// zero. The ranks then average each buffer with one all-reduce in place,
// with no copies into buckets and out again.
void OnednnRunner::PlaceGradients() {
  std::vector<memory*> grads;
  for (Weight& p : params_) {
    if (p.grad) grads.push_back(&p.grad);
  }
  for (RecurrentBias& b : biases_) grads.push_back(&b.grad);
  constexpr size_t kAlign = 64;
  auto aligned = [&](size_t bytes) {
    return (bytes + kAlign - 1) / kAlign * kAlign;
  };
  for (const Dt dt : {Dt::f32, Dt::bf16}) {
    size_t bytes = 0;
    for (const memory* g : grads) {
      if (TypeOf(g->get_desc()) == dt)
        bytes += aligned(g->get_desc().get_size());
    }
    if (bytes == 0) continue;
    grad_arenas_.emplace_back(
        static_cast<char*>(std::aligned_alloc(kAlign, bytes)), &std::free);
    char* at = grad_arenas_.back().get();
    std::memset(at, 0, bytes);
    const bool bf16 = dt == Dt::bf16;
    grads_.push_back({at, static_cast<int64_t>(bytes / (bf16 ? 2 : 4)),
                      bf16 ? DType::kBf16 : DType::kFp32});
    for (memory* g : grads) {
      if (TypeOf(g->get_desc()) != dt) continue;
      g->set_data_handle(at);
      at += aligned(g->get_desc().get_size());
    }
  }
}

// The values made in the staging buffer itself (GRU's through a copy that
// permutes its gates): one fp32 copy of one parameter at a time.
void OnednnRunner::WriteParam(Weight& p, const ParamTensor& spec, int index) {
  memory user = Staging(p.user);
  float* u = static_cast<float*>(user.get_data_handle());
  if (p.gru) {
    std::vector<float> values(Elements(spec.shape));
    InitParam(spec, seed_, index, values.data());
    PermuteGates(values.data(), u, p.gate_rows, values.size());
  } else {
    InitParam(spec, seed_, index, u);
  }
  RunNow(user, p.value);
}

// A reorder outside the step, at preparation or to read results.
void OnednnRunner::RunNow(memory from, memory to) {
  if (!PaddedReordersExact() &&
      (Padded(from.get_desc()) || Padded(to.get_desc()))) {
    CopyElements(from, to, false, 1.f);
    return;
  }
  dnnl::reorder(from, to).execute(stream_, from, to);
  stream_.wait();
}

memory OnednnRunner::Ones(const memory::desc& md) {
  const Dims dims = DimsOf(md);
  memory user = Staging(memory::desc(dims, Dt::f32, PlainTag(dims.size())));
  std::fill_n(static_cast<float*>(user.get_data_handle()),
              user.get_desc().get_size() / sizeof(float), 1.f);
  memory ones = Make(md);
  RunNow(user, ones);
  return ones;
}

std::vector<float> OnednnRunner::ReadParam(Weight& p) {
  memory user = Staging(p.user);
  RunNow(p.value, user);
  const int64_t n = p.user.get_size() / sizeof(float);
  const float* u = static_cast<const float*>(user.get_data_handle());
  std::vector<float> out(n);
  if (p.gru) {
    PermuteGates(u, out.data(), p.gate_rows, n);
  } else {
    std::copy(u, u + n, out.begin());
  }
  return out;
}

void OnednnRunner::PermuteGates(const float* from, float* to, int64_t gate_rows,
                                int64_t n) {
  const int64_t block = n / 3;
  PARADNN_CHECK(block == gate_rows * (n / 3 / gate_rows), "GRU gate blocks");
  for (int g = 0; g < 3; ++g) {
    std::memcpy(to + g * block, from + kGruGate[g] * block,
                block * sizeof(float));
  }
}

// SGD: w += -lr * grad, one scaled add (Reorder).
void OnednnRunner::AddUpdate(Weight& p) {
  Reorder(update_, p.grad, p.value, true, -kLearningRate);
}

void OnednnRunner::Build(int i) {
  building_ = i;
  const Layer& l = graph_.layer(i);
  // Its group's product computes it.
  if (plan_.Absorbed(i)) return;
  switch (l.op) {
    case Op::kInput: {
      const Tag tag = PlainTag(l.shape.size());
      SetOut(i, l.shape.size() == 4 ? ConvolutionOutput(l.shape)
                                    : memory::desc(l.shape, dt_, tag));
      memory user = Staging(memory::desc(l.shape, Dt::f32, tag));
      const std::vector<float> data =
          InitInput(graph_, seed_, i, first_example_);
      std::copy(data.begin(), data.end(),
                static_cast<float*>(user.get_data_handle()));
      RunNow(user, out_[i]);
      break;
    }
    case Op::kTokens:
      tokens_[i] = InitTokens(graph_, seed_, i, first_example_);
      break;
    case Op::kDense:
      BuildDense(i, l);
      break;
    case Op::kConv2d:
    case Op::kConv3d:
      BuildConv(i, l);
      break;
    case Op::kBatchNorm:
      BuildBatchNorm(i, l);
      break;
    case Op::kReLU:
    case Op::kGelu:
    case Op::kSigmoid:
    case Op::kSilu:
    case Op::kRelu6:
    case Op::kHardSwish:
    case Op::kHardSigmoid:
      BuildActivation(i, l);
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
      BuildPool(i, l, dnnl::algorithm::pooling_max, {l.kernel, l.kernel},
                l.stride, l.pad);
      break;
    case Op::kGlobalAvgPool: {
      const Dims in = DimsOf(out_[l.inputs[0]].get_desc());
      BuildPool(i, l, dnnl::algorithm::pooling_avg_exclude_padding,
                Dims(in.begin() + 2, in.end()), 1, 0);
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
      BuildSoftmaxCrossEntropy(i, l);
      break;
    case Op::kMeanLoss: {
      mean_loss_ = true;
      // d mean / d x = 1/n everywhere, the same every step; nothing where
      // nothing takes a gradient (the brick of a gradient sum).
      const int x = l.inputs[0];
      if (Grad(x)) {
        const memory::desc md = out_[x].get_desc();
        const Dims dims = DimsOf(md);
        memory user =
            Staging(memory::desc(dims, Dt::f32, PlainTag(dims.size())));
        const int64_t n = Elements(graph_.layer(x).shape);
        std::fill_n(static_cast<float*>(user.get_data_handle()), n, 1.f / n);
        RunNow(user, diff_[x]);
      }
      break;
    }
    case Op::kRmsNorm:
      BuildRmsNorm(i, l);
      break;
    case Op::kRope:
      BuildRope(i, l);
      break;
    case Op::kSwiGlu:
      BuildSwiGlu(i, l);
      break;
    case Op::kCachedAttention:
      BuildCachedAttention(i, l);
      break;
    case Op::kLastPosition:
      BuildLastPosition(i, l);
      break;
    case Op::kEmbeddingBag:
      BuildEmbeddingBag(i, l);
      break;
    case Op::kConcat:
      if (l.axis + 1 == static_cast<int64_t>(l.shape.size())) {
        BuildConcat(i, l);
      } else {
        BuildConcatAlong(i, l);
      }
      break;
    case Op::kAvgPool:
      BuildPool(i, l,
                l.count_pad ? dnnl::algorithm::pooling_avg_include_padding
                            : dnnl::algorithm::pooling_avg_exclude_padding,
                {l.kernel, l.kernel}, l.stride, l.pad);
      break;
    case Op::kFlatten:
      BuildFlatten(i, l);
      break;
    case Op::kChannelMul:
      BuildChannelMul(i, l);
      break;
    case Op::kChannelShuffle:
      BuildChannelShuffle(i, l);
      break;
    case Op::kSlice:
      BuildSlice(i, l);
      break;
    case Op::kCross:
      BuildCross(i, l);
      break;
    case Op::kSequence:
      BuildSequence(i, l);
      break;
    case Op::kClassToken:
      BuildClassToken(i, l);
      break;
    case Op::kFirstToken:
      BuildFirstToken(i, l);
      break;
    case Op::kLayerScale:
      BuildLayerScale(i, l);
      break;
    case Op::kResize:
      BuildResize(i, l);
      break;
    case Op::kInstanceNorm:
      BuildInstanceNorm(i, l);
      break;
    case Op::kMaps:
      BuildMaps(i, l);
      break;
  }
}

// The loss reads its logits row-major, [rows, classes], and writes their
// gradient so: logits a layer wrote in a blocked format (a global pool of
// a convolution's maps, where SqueezeNet's classifier ends: 1000 classes
// in blocks of 16, the second row starting at 1008) are reordered for it,
// and their gradient back. Inference computes no loss in its step: Loss()
// copies the logits when asked.
void OnednnRunner::BuildSoftmaxCrossEntropy(int i, const Layer& l) {
  if (!train_) return;
  const int x = l.inputs[0];
  const Dims dims = graph_.layer(x).shape;
  const memory::desc plain(dims, dt_, PlainTag(dims.size()));
  logits_ = Input(x, plain);
  if (!Grad(x)) return;
  logits_grad_ = GradTarget(x, i, plain);
  Deliver(x, i, logits_grad_);
}

// Mean softmax cross-entropy over the rows of the logits; in training
// also writes the logits' gradient, (softmax - one-hot) / rows. Rows in
// parallel, one exp per logit, kept in a per-thread row of scratch. A row's
// classes lie `inner` apart: 1 along the last dimension; a map's pixels
// where there is a class per pixel ([N, C, H, W], plain).
double OnednnRunner::CrossEntropy(const memory& logits, const memory* grad) {
  stream_.wait();
  const Shape& shape = graph_.layer(graph_.logits()).shape;
  const int64_t axis = graph_.class_axis();
  const int64_t classes = shape[axis];
  int64_t inner = 1;
  for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
  const int64_t rows = static_cast<int64_t>(labels_.size());
  const void* x = logits.get_data_handle();
  void* d = grad != nullptr ? grad->get_data_handle() : nullptr;
  const float scale = 1.f / static_cast<float>(rows);
  double total = 0;
#pragma omp parallel num_threads(threads_) reduction(+ : total)
  {
    float* e = softmax_scratch_.data() + omp_get_thread_num() * classes;
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t base = r / inner * classes * inner + r % inner;
      float max = -std::numeric_limits<float>::infinity();
      for (int64_t c = 0; c < classes; ++c) {
        max = std::max(max, Load(x, dt_, base + c * inner));
      }
      float sum = 0;
      for (int64_t c = 0; c < classes; ++c) {
        e[c] = std::exp(Load(x, dt_, base + c * inner) - max);
        sum += e[c];
      }
      const int64_t label = labels_[r];
      total += std::log(sum) + max - Load(x, dt_, base + label * inner);
      if (d == nullptr) continue;
      const float inv = scale / sum;
      for (int64_t c = 0; c < classes; ++c) {
        Store(d, dt_, base + c * inner, e[c] * inv);
      }
      Store(d, dt_, base + label * inner, e[label] * inv - scale);
    }
  }
  return total / rows;
}

}  // namespace paradnn::onednn
