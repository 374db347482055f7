// oneDNN backend. Batch and layer normalization.
#include <algorithm>

#include "backends/onednn/runner.h"

namespace paradnn::onednn {

void OnednnRunner::BuildBatchNorm(int i, const Layer& l) {
  const int x = l.inputs[0];
  const memory::desc data_md = out_[x].get_desc();
  auto flags = dnnl::normalization_flags::use_scale |
               dnnl::normalization_flags::use_shift;
  if (!train_) flags = flags | dnnl::normalization_flags::use_global_stats;
  // Inference may apply the ReLU after it as it writes (PlanFusion).
  const FusedGroup* group = plan_.AnchoredAt(i);
  if (group) flags = flags | dnnl::normalization_flags::fuse_norm_relu;
  const auto pd = NormalizationPd<dnnl::batch_normalization_forward>(
      engine_, Forward(), data_md, static_cast<float>(l.epsilon), flags);
  const memory::desc c_md({l.units}, Dt::f32, Tag::x);
  AddParam(i, "weight", c_md, c_md, c_md);
  AddParam(i, "bias", c_md, c_md, c_md);
  SetOut(i, pd.dst_desc());
  if (group) {
    for (int m : group->Members()) out_[m] = out_[i];
  }
  memory mean = Make(c_md), variance = Make(c_md);
  // Inference uses the running statistics a file gives, else those of a
  // fresh model: 0 and 1.
  const RunningStatistics stats = InitRunningStatistics(l);
  std::copy(stats.mean.begin(), stats.mean.end(),
            static_cast<float*>(mean.get_data_handle()));
  std::copy(stats.variance.begin(), stats.variance.end(),
            static_cast<float*>(variance.get_data_handle()));
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
  const auto bpd = NormalizationBackwardPd<dnnl::batch_normalization_backward>(
      engine_, pd.dst_desc(), data_md, static_cast<float>(l.epsilon), flags,
      pd);
  memory grad = GradTarget(x, i, bpd.diff_src_desc());
  Run(backward_[i], dnnl::batch_normalization_backward(bpd),
      NormalizationBackward(i, out_[x], diff_[i], mean, variance, grad,
                            kBatchNormBackwardTakesShift));
  Deliver(x, i, grad);
}

// Per example and channel: oneDNN's batch normalization of the maps read
// plain as [1, N x C, H, W], one channel per (example, channel), whose
// statistics are then each example's own. Its scale and shift per (n, c)
// are the layer's per c, copied across the batch before it runs; backward
// sums their gradients over the batch.
void OnednnRunner::BuildInstanceNorm(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims& d = l.shape;
  const int64_t n = d[0], c = d[1];
  const memory::desc maps(d, dt_, Tag::abcd);
  const memory::desc rows({1, n * c, d[2], d[3]}, dt_, Tag::abcd);
  auto as_rows = [&](const memory& m) {
    return memory(rows, engine_, m.get_data_handle());
  };
  const auto flags = dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  const auto pd = NormalizationPd<dnnl::batch_normalization_forward>(
      engine_, Forward(), rows, static_cast<float>(l.epsilon), flags);
  const memory::desc c_md({c}, Dt::f32, Tag::x);
  AddParam(i, "weight", c_md, c_md, c_md);
  AddParam(i, "bias", c_md, c_md, c_md);
  SetOut(i, maps);
  const memory src = Input(x, maps);
  const memory::desc nc_md({n * c}, Dt::f32, Tag::x);
  const memory scale = Make(nc_md), shift = Make(nc_md);
  Weight& w = ParamOf(i, "weight");
  Weight& b = ParamOf(i, "bias");
  Push(forward_, OpClass::kMovement, "instance norm scale",
       [=, wm = w.value, bm = b.value] {
         const float* pw = static_cast<const float*>(wm.get_data_handle());
         const float* pb = static_cast<const float*>(bm.get_data_handle());
         float* ps = static_cast<float*>(scale.get_data_handle());
         float* pt = static_cast<float*>(shift.get_data_handle());
         for (int64_t k = 0; k < n * c; ++k) {
           ps[k] = pw[k % c];
           pt[k] = pb[k % c];
         }
       });
  Args args = {{DNNL_ARG_SRC, as_rows(src)},
               {DNNL_ARG_DST, as_rows(out_[i])},
               {DNNL_ARG_SCALE, scale},
               {DNNL_ARG_SHIFT, shift}};
  const auto [mean, variance] =
      TrainingStatistics(pd.mean_desc(), pd.variance_desc(), &args);
  Run(forward_, dnnl::batch_normalization_forward(pd), args);
  if (!train_) return;
  const auto bpd = NormalizationBackwardPd<dnnl::batch_normalization_backward>(
      engine_, rows, rows, static_cast<float>(l.epsilon), flags, pd);
  const memory d_scale = Make(nc_md), d_shift = Make(nc_md);
  memory grad = GradTarget(x, i, maps);
  Args back = {{DNNL_ARG_SRC, as_rows(src)},
               {DNNL_ARG_MEAN, mean},
               {DNNL_ARG_VARIANCE, variance},
               {DNNL_ARG_DIFF_DST, as_rows(InBackward(i, diff_[i], maps))},
               {DNNL_ARG_SCALE, scale},
               {DNNL_ARG_DIFF_SRC, as_rows(grad)},
               {DNNL_ARG_DIFF_SCALE, d_scale},
               {DNNL_ARG_DIFF_SHIFT, d_shift}};
  if (kBatchNormBackwardTakesShift) back[DNNL_ARG_SHIFT] = shift;
  Run(backward_[i], dnnl::batch_normalization_backward(bpd), back);
  Push(backward_[i], OpClass::kElementwise, "instance norm scale",
       [=, dw = w.grad, db = b.grad] {
         const float* ps = static_cast<const float*>(d_scale.get_data_handle());
         const float* pt = static_cast<const float*>(d_shift.get_data_handle());
         float* pw = static_cast<float*>(dw.get_data_handle());
         float* pb = static_cast<float*>(db.get_data_handle());
         std::fill(pw, pw + c, 0.f);
         std::fill(pb, pb + c, 0.f);
         for (int64_t k = 0; k < n * c; ++k) {
           pw[k % c] += ps[k];
           pb[k % c] += pt[k];
         }
       });
  if (Grad(x)) Deliver(x, i, grad);
}

std::pair<memory, memory> OnednnRunner::TrainingStatistics(
    const memory::desc& mean_md, const memory::desc& variance_md, Args* args) {
  if (!train_) return {memory(), memory()};
  const memory mean = Make(mean_md), variance = Make(variance_md);
  (*args)[DNNL_ARG_MEAN] = mean;
  (*args)[DNNL_ARG_VARIANCE] = variance;
  return {mean, variance};
}

// Batch and layer normalization's backward take the same arguments, but
// for the shift (kBatchNormBackwardTakesShift).
Args OnednnRunner::NormalizationBackward(int i, const memory& src,
                                         const memory& diff_dst,
                                         const memory& mean,
                                         const memory& variance,
                                         const memory& grad, bool shift_in) {
  Weight& scale = ParamOf(i, "weight");
  Weight& shift = ParamOf(i, "bias");
  Args args = {{DNNL_ARG_SRC, src},
               {DNNL_ARG_MEAN, mean},
               {DNNL_ARG_VARIANCE, variance},
               {DNNL_ARG_DIFF_DST, diff_dst},
               {DNNL_ARG_SCALE, scale.value},
               {DNNL_ARG_DIFF_SRC, grad},
               {DNNL_ARG_DIFF_SCALE, scale.grad},
               {DNNL_ARG_DIFF_SHIFT, shift.grad}};
  if (shift_in) args[DNNL_ARG_SHIFT] = shift.value;
  return args;
}

// Over the last dimension as oneDNN normalizes; over the channels of
// [N, C, H, W] maps (ConvNeXt's), the maps read channels-last, each
// position's channels one of N x H x W rows (oneDNN's jit kernels normalize
// a densely laid out last dimension only), and written so.
void OnednnRunner::BuildLayerNorm(int i, const Layer& l) {
  const int x = l.inputs[0];
  const bool channels = l.axis == 1 && l.shape.size() == 4;
  const Dims& d = l.shape;
  const memory::desc maps =
      channels ? memory::desc(d, dt_, Tag::acdb) : memory::desc();
  // Over the last dimension of the graph's shape: a global pool's [N, C]
  // may be held as oneDNN's [N, C, 1, 1].
  const memory src = channels ? Input(x, maps)
                     : DimsOf(out_[x].get_desc()) == d
                         ? out_[x]
                         : Input(x, memory::desc(d, dt_, PlainTag(d.size())));
  auto rows = [&](const memory& m) {
    if (!channels) return m;
    return memory(memory::desc({d[0] * d[2] * d[3], d[1]}, dt_, Tag::ab),
                  engine_, m.get_data_handle());
  };
  const memory::desc data_md = rows(src).get_desc();
  const auto flags = dnnl::normalization_flags::use_scale |
                     dnnl::normalization_flags::use_shift;
  const auto pd = NormalizationPd<dnnl::layer_normalization_forward>(
      engine_, Forward(), data_md, static_cast<float>(l.epsilon), flags);
  const memory::desc c_md({l.units}, Dt::f32, Tag::x);
  AddParam(i, "weight", c_md, c_md, c_md);
  AddParam(i, "bias", c_md, c_md, c_md);
  SetOut(i, channels ? maps : pd.dst_desc());
  Weight& scale = ParamOf(i, "weight");
  Weight& shift = ParamOf(i, "bias");
  Args args = {{DNNL_ARG_SRC, rows(src)},
               {DNNL_ARG_DST, rows(out_[i])},
               {DNNL_ARG_SCALE, scale.value},
               {DNNL_ARG_SHIFT, shift.value}};
  const auto [mean, variance] =
      TrainingStatistics(pd.mean_desc(), pd.variance_desc(), &args);
  Run(forward_, dnnl::layer_normalization_forward(pd), args);
  if (!train_) return;
  const auto bpd = NormalizationBackwardPd<dnnl::layer_normalization_backward>(
      engine_, pd.dst_desc(), data_md, static_cast<float>(l.epsilon), flags,
      pd);
  memory grad = GradTarget(x, i, channels ? maps : bpd.diff_src_desc());
  Run(backward_[i], dnnl::layer_normalization_backward(bpd),
      NormalizationBackward(i, rows(src), rows(diff_[i]), mean, variance,
                            rows(grad), true));
  if (Grad(x)) Deliver(x, i, grad);
}

}  // namespace paradnn::onednn
