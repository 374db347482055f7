#include "backends/torch/runner.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "backends/torch/model.h"
#include "backends/torch/profiler.h"
#include "backends/torch/runtime.h"
#include "backends/torch/step_allocator.h"
#include "distributed/world.h"
#include "generators/check.h"
#include "generators/init.h"
#include "machine/caches.h"

namespace paradnn {
namespace {

class TorchRunner : public Runner {
 public:
  TorchRunner(const Job& job, const RunOptions& opt, torch::Device device)
      : graph_(job.graph),
        train_(job.mode == Mode::kTrain),
        device_(device),
        threads_(opt.threads),
        seed_(opt.seed) {
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
        param_layers_.push_back(specs[i].layer);
        torch::Tensor values = torch::empty(specs[i].shape, torch::kFloat);
        InitParam(specs[i], opt.seed, static_cast<int>(i),
                  values.data_ptr<float>());
        params_[i].copy_(values);
      }
    }
    model_->to(device_, dtype);
    model_->MoveMasks(device_, dtype);
    model_->FillCaches(opt.seed, device_, dtype);
    model_->train(train_);
    // PyTorch's inference guidance: on a CPU, a CNN's images and weights
    // channels-last, which its oneDNN convolves without reorders (and its
    // own convolution, where the backend turned oneDNN off, with copies).
    const bool channels_last = !train_ && opt.fuse && !device_.is_cuda() &&
                               graph_.Has(Op::kConv2d) &&
                               at::globalContext().userEnabledMkldnn();
    if (!train_ && opt.fuse) {
      model_->PrepareInference(
          PlanFusion(graph_, job.mode, Fusion::kFoldBatchNorm), channels_last);
    }
    params_ = model_->OrderedParams();

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
        // Images channels-last too, as the convolutions' weights are.
        if (channels_last && l.shape.size() == 4) {
          inputs_[i] = inputs_[i].contiguous(torch::MemoryFormat::ChannelsLast);
        }
      }
    }
    const std::vector<int64_t> labels =
        InitLabels(graph_, opt.seed, opt.first_example);
    labels_ = FromVector(labels, LabelShape(graph_)).to(device_);
    if (train_) comm_ = opt.comm;
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
      const std::vector<LayerSequence> sequences = model_->TakeSequences();
      for (const auto& events : lists) {
        AddSelfTimes(events, sequences, &profile);
      }
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
      Update();
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
    // Inference never changes a parameter (and a folded batch norm's live
    // in its convolution's weights).
    if (!train_) return InitParam(graph_, seed_, index);
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

  // SGD as LibTorch's (without momentum or decay): one scaled add per
  // parameter, under the profiler in a scope per layer, whose update it is.
  void Update() {
    RECORD_USER_SCOPE(kOptimizerScope);
    torch::NoGradGuard no_grad;
    for (size_t k = 0; k < params_.size();) {
      const int layer = param_layers_[k];
      at::RecordFunction scope(at::RecordScope::USER_SCOPE);
      if (scope.isActive()) scope.before(LayerScope(layer));
      for (; k < params_.size() && param_layers_[k] == layer; ++k) {
        const torch::Tensor& g = params_[k].grad();
        if (g.defined()) params_[k].add_(g, -kLearningRate);
      }
    }
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
  const uint64_t seed_;
  Communicator* comm_ = nullptr;
  std::vector<GradBuffer> grads_;
  std::shared_ptr<TorchModel> model_;
  std::vector<torch::Tensor> params_;
  std::vector<int> param_layers_;      // each parameter's layer
  std::vector<torch::Tensor> inputs_;  // per input layer
  torch::Tensor labels_, logits_, loss_;
  torch::Tensor mean_grad_;  // d mean / d output, for a mean loss
};

}  // namespace

std::unique_ptr<Runner> MakeTorchRunner(const Job& job, const RunOptions& opt,
                                        torch::Device device) {
  return std::make_unique<TorchRunner>(job, opt, device);
}

}  // namespace paradnn
