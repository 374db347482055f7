// oneDNN backend. Multi-head attention.
#include "backends/onednn/runner.h"

namespace paradnn::onednn {

// A [length, batch, features] output (and its gradient) becomes a matrix
// of length x batch rows, through views on the same buffers.
void OnednnRunner::Flatten(int x) {
  const Dims dims = DimsOf(out_[x].get_desc());
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

void OnednnRunner::Reshape(int x, const Dims& dims) {
  owners_.push_back(out_[x]);
  if (Grad(x)) owners_.push_back(diff_[x]);
  out_[x] = memory(out_[x].get_desc().reshape(dims), engine_,
                   out_[x].get_data_handle());
  if (Grad(x)) {
    diff_[x] = memory(diff_[x].get_desc().reshape(dims), engine_,
                      diff_[x].get_data_handle());
  }
}

// Multi-head attention with matmuls on strided views: head j of [length,
// batch, units] is the 4-D [batch, heads, length, dh] view with strides
// (units, dh, batch * units, 1), so no reorder splits or merges heads.
void OnednnRunner::BuildAttention(int i, const Layer& l) {
  const int64_t length = l.shape[0], batch = l.shape[1], units = l.shape[2];
  const int64_t heads = l.heads, dh = units / heads;
  const float scale = 1.f / std::sqrt(static_cast<float>(dh));
  const memory::desc plain({length * batch, units}, dt_, Tag::ab);
  const Dims head_dims = {batch, heads, length, dh};
  const Dims head_strides = {units, dh, batch * units, 1};
  const memory::desc head_md(head_dims, dt_, head_strides);
  const memory::desc head_t_md({batch, heads, dh, length}, dt_,
                               Dims{units, dh, 1, batch * units});
  const memory::desc scores_md({batch, heads, length, length}, dt_, Tag::abcd);
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
    return dnnl::matmul(MatmulPd(engine_, a, b, c, attr));
  };
  // Scores: scale Q K^T.
  dnnl::primitive_attr scaled;
  ScaleOutput(scaled, scale);
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
    Run(forward_,
        dnnl::binary(BinaryPd(engine_, dnnl::algorithm::binary_add, scores_md,
                              mask_md, scores_md)),
        {{DNNL_ARG_SRC_0, scores},
         {DNNL_ARG_SRC_1, mask},
         {DNNL_ARG_DST, scores}});
  }
  const auto softmax_pd = SoftmaxPd(engine_, Forward(), scores_md, 3);
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
  Run(backward_[i],
      dnnl::softmax_backward(
          SoftmaxBackwardPd(engine_, scores_md, scores_md, 3, softmax_pd)),
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

}  // namespace paradnn::onednn
