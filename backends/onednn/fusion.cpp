// oneDNN backend. Fused inference: a group of layers (generators/fusion.h)
// as one convolution, inner product or batch norm whose post-ops apply the
// group's activations and sum its shortcut as the output is written, with a
// batch norm folded into the convolution's weights and bias, as inference
// engines run them (oneDNN's own examples and ONNX Runtime's oneDNN and CPU
// providers among them).
#include "backends/onednn/runner.h"

namespace paradnn::onednn {

dnnl::primitive_attr OnednnRunner::FusedAttr(const FusedGroup& g) const {
  dnnl::post_ops ops;
  auto activations = [&](const std::vector<int>& layers) {
    for (int a : layers) {
      for (const EltwiseStep& s : ActivationSteps(graph_.layer(a).op)) {
        AppendEltwise(ops, s.alg, s.alpha, s.beta);
      }
    }
  };
  activations(g.before_sum);
  if (g.add >= 0) ops.append_sum(1.f);
  activations(g.after_sum);
  dnnl::primitive_attr attr;
  attr.set_post_ops(ops);
  return attr;
}

memory OnednnRunner::FusedOutput(const FusedGroup& g, const memory::desc& md) {
  memory dst;
  if (g.add < 0) {
    dst = Make(md);
  } else {
    const int s = g.shortcut;
    // The shortcut in the product's format: its own buffer, or one a
    // reorder fills in the step (which nothing else reads).
    dst = Input(s, md);
    bool in_place = dst.get_data_handle() != out_[s].get_data_handle();
    if (!in_place) {
      // Its own buffer is overwritten where the step writes it (not data
      // fed to the graph, written once) and no layer that runs from the
      // group's product on reads it (the product itself among them).
      in_place = graph_.layer(s).op != Op::kInput;
      for (int r = g.anchor; r < graph_.size() && in_place; ++r) {
        if (r == g.add) continue;
        for (int in : graph_.layer(r).inputs) in_place &= in != s;
      }
    }
    if (!in_place) {
      memory copy = Make(md);
      Reorder(forward_, dst, copy, false);
      dst = copy;
    }
  }
  out_[g.anchor] = dst;
  for (int m : g.Members()) out_[m] = dst;
  return dst;
}

// y = gamma (conv(x) + b - mean) / sqrt(var + eps) + beta is a convolution
// with weights W gamma / sqrt(var + eps) per output channel and bias
// (b - mean) gamma / sqrt(var + eps) + beta, with the statistics
// BuildBatchNorm uses (InitRunningStatistics).
void OnednnRunner::FoldBatchNorm(const FusedGroup& g) {
  const Layer& conv = graph_.layer(g.anchor);
  const Layer& bn = graph_.layer(g.batch_norm);
  const int64_t c = conv.units;
  const std::vector<float> gamma =
      InitParam(graph_, seed_, param_index_.at({g.batch_norm, "weight"}));
  const std::vector<float> beta =
      InitParam(graph_, seed_, param_index_.at({g.batch_norm, "bias"}));
  const RunningStatistics stats = InitRunningStatistics(bn);
  std::vector<double> scale(c);
  for (int64_t k = 0; k < c; ++k) {
    scale[k] = gamma[k] /
               std::sqrt(static_cast<double>(stats.variance[k]) + bn.epsilon);
  }
  // LibTorch's layout, [out, in / groups, h, w] (or [groups, out / groups,
  // ...]): each output channel's weights are one run of the buffer.
  Weight& w = ParamOf(g.anchor, "weight");
  memory user = Staging(w.user);
  RunNow(w.value, user);
  float* v = static_cast<float*>(user.get_data_handle());
  const int64_t per =
      static_cast<int64_t>(w.user.get_size() / sizeof(float)) / c;
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t j = 0; j < per; ++j) {
      v[k * per + j] = static_cast<float>(v[k * per + j] * scale[k]);
    }
  }
  RunNow(user, w.value);
  std::vector<float> b(c, 0.f);
  if (conv.bias)
    b = InitParam(graph_, seed_, param_index_.at({g.anchor, "bias"}));
  memory bias =
      conv.bias ? ParamOf(g.anchor, "bias").value : folded_bias_.at(g.anchor);
  memory user_bias = Staging(memory::desc({c}, Dt::f32, Tag::x));
  float* ub = static_cast<float*>(user_bias.get_data_handle());
  for (int64_t k = 0; k < c; ++k) {
    ub[k] = static_cast<float>((b[k] - stats.mean[k]) * scale[k] + beta[k]);
  }
  RunNow(user_bias, bias);
}

}  // namespace paradnn::onednn
