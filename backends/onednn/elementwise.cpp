// oneDNN backend. Elementwise layers: activations, residual adds, the
// positional table.
#include "backends/onednn/runner.h"

namespace paradnn::onednn {

namespace {
// Hard sigmoid, relu6(x + 3) / 6: a line of this slope and offset clipped
// to [0, 1].
constexpr float kHardSigmoidSlope = 1.f / 6.f, kHardSigmoidOffset = 0.5f;
}  // namespace

std::vector<EltwiseStep> ActivationSteps(Op op) {
  using A = dnnl::algorithm;
  switch (op) {
    case Op::kReLU:
      return {{A::eltwise_relu}};
    case Op::kGelu:
      return {{A::eltwise_gelu_erf}};
    case Op::kSigmoid:
      return {{A::eltwise_logistic}};
    case Op::kSilu:
      return {{A::eltwise_swish, 1.f}};
    case Op::kRelu6:
      return {{A::eltwise_clip, 0.f, 6.f}};
    case Op::kHardSwish:
      return {{A::eltwise_hardswish, kHardSwishAlpha, kHardSwishBeta}};
    case Op::kHardSigmoid:
#if PARADNN_DNNL3
      return {{A::eltwise_hardsigmoid, kHardSigmoidSlope, kHardSigmoidOffset}};
#else
      return {{A::eltwise_linear, kHardSigmoidSlope, kHardSigmoidOffset},
              {A::eltwise_clip, 0.f, 1.f}};
#endif
    default:
      throw std::logic_error(std::string(ToString(op)) +
                             " is not an activation");
  }
}

void OnednnRunner::BuildActivation(int i, const Layer& l) {
  const std::vector<EltwiseStep> steps = ActivationSteps(l.op);
  if (steps.size() == 1) {
    BuildEltwise(i, l, steps[0].alg, steps[0].alpha, steps[0].beta);
  } else {
    BuildHardSigmoid(i, l);
  }
}

void OnednnRunner::BuildEltwise(int i, const Layer& l, dnnl::algorithm alg,
                                float alpha, float beta) {
  const int x = l.inputs[0];
  const memory::desc md = out_[x].get_desc();
  const auto pd = EltwisePd(engine_, Forward(), alg, md, alpha, beta);
  SetOut(i, pd.dst_desc());
  Run(forward_, dnnl::eltwise_forward(pd),
      {{DNNL_ARG_SRC, out_[x]}, {DNNL_ARG_DST, out_[i]}});
  if (!Grad(x)) return;
  const auto bpd =
      EltwiseBackwardPd(engine_, alg, pd.dst_desc(), md, pd, alpha, beta);
  memory grad = GradTarget(x, i, bpd.diff_src_desc());
  Run(backward_[i], dnnl::eltwise_backward(bpd),
      {{DNNL_ARG_SRC, out_[x]},
       {DNNL_ARG_DIFF_DST, diff_[i]},
       {DNNL_ARG_DIFF_SRC, grad}});
  Deliver(x, i, grad);
}

void OnednnRunner::BuildAdd(int i, const Layer& l) {
  const int a = l.inputs[0], b = l.inputs[1];
  const memory::desc md = out_[a].get_desc();
  const auto pd = BinaryPd(engine_, dnnl::algorithm::binary_add, md, md, md);
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

void OnednnRunner::BuildHardSigmoid(int i, const Layer& l) {
  constexpr float kSlope = kHardSigmoidSlope, kOffset = kHardSigmoidOffset;
  const int x = l.inputs[0];
  const memory::desc md = out_[x].get_desc();
  const auto line = EltwisePd(
      engine_, Forward(), dnnl::algorithm::eltwise_linear, md, kSlope, kOffset);
  const auto clip = EltwisePd(engine_, Forward(), dnnl::algorithm::eltwise_clip,
                              md, 0.f, 1.f);
  memory linear = Make(md);
  SetOut(i, md);
  Run(forward_, dnnl::eltwise_forward(line),
      {{DNNL_ARG_SRC, out_[x]}, {DNNL_ARG_DST, linear}});
  Run(forward_, dnnl::eltwise_forward(clip),
      {{DNNL_ARG_SRC, linear}, {DNNL_ARG_DST, out_[i]}});
  if (!Grad(x)) return;
  const auto clip_back = EltwiseBackwardPd(
      engine_, dnnl::algorithm::eltwise_clip, md, md, clip, 0.f, 1.f);
  const auto line_back = EltwiseBackwardPd(
      engine_, dnnl::algorithm::eltwise_linear, md, md, line, kSlope, kOffset);
  memory inner = Make(md);
  Run(backward_[i], dnnl::eltwise_backward(clip_back),
      {{DNNL_ARG_SRC, linear},
       {DNNL_ARG_DIFF_DST, diff_[i]},
       {DNNL_ARG_DIFF_SRC, inner}});
  memory grad = GradTarget(x, i, md);
  Run(backward_[i], dnnl::eltwise_backward(line_back),
      {{DNNL_ARG_SRC, out_[x]},
       {DNNL_ARG_DIFF_DST, inner},
       {DNNL_ARG_DIFF_SRC, grad}});
  Deliver(x, i, grad);
}

// oneDNN's shuffle sees the axis as [C / G][G] and transposes it: the
// graph's groups rows of C / groups are its group size G = C / groups.
void OnednnRunner::BuildChannelShuffle(int i, const Layer& l) {
  const int x = l.inputs[0];
  const int64_t group_size = l.shape[1] / l.groups;
  const auto pd =
      ShufflePd(engine_, Forward(), out_[x].get_desc(), 1, group_size);
  SetOut(i, pd.dst_desc());
  Run(forward_, dnnl::shuffle_forward(pd),
      {{DNNL_ARG_SRC, out_[x]}, {DNNL_ARG_DST, out_[i]}});
  if (!Grad(x)) return;
  const auto bpd = ShuffleBackwardPd(engine_, pd.dst_desc(), 1, group_size, pd);
  memory grad = GradTarget(x, i, bpd.diff_src_desc());
  Run(backward_[i], dnnl::shuffle_backward(bpd),
      {{DNNL_ARG_DIFF_DST, diff_[i]}, {DNNL_ARG_DIFF_SRC, grad}});
  Deliver(x, i, grad);
}

// Layer i's output: its input maps, read as `md`, times `factors`
// broadcast over them (the binary `pd`); backward, the maps' gradient is
// the output's times the factors. Where `factor_grad`, also the output's
// gradient times the maps, what the factors' gradient sums.
memory OnednnRunner::ScaleMaps(int i, const memory::desc& md,
                               const dnnl::binary::primitive_desc& pd,
                               const memory& factors, bool factor_grad) {
  const int x = graph_.layer(i).inputs[0];
  const memory maps = Input(x, md);
  SetOut(i, md);
  Run(forward_, dnnl::binary(pd),
      {{DNNL_ARG_SRC_0, maps},
       {DNNL_ARG_SRC_1, factors},
       {DNNL_ARG_DST, out_[i]}});
  if (!train_) return memory();
  if (Grad(x)) {
    memory grad = GradTarget(x, i, md);
    Run(backward_[i], dnnl::binary(pd),
        {{DNNL_ARG_SRC_0, diff_[i]},
         {DNNL_ARG_SRC_1, factors},
         {DNNL_ARG_DST, grad}});
    Deliver(x, i, grad);
  }
  if (!factor_grad) return memory();
  memory product = Make(md);
  const auto ppd = BinaryPd(engine_, dnnl::algorithm::binary_mul, md, md, md);
  Run(backward_[i], dnnl::binary(ppd),
      {{DNNL_ARG_SRC_0, diff_[i]},
       {DNNL_ARG_SRC_1, maps},
       {DNNL_ARG_DST, product}});
  return product;
}

// x [N, C, H, W] times s [N, C] broadcast over H and W. Backward: x's
// gradient is the output's times s; s's is the sum over H and W of the
// output's gradient times x, an average pool of their product scaled by
// H x W (oneDNN's pooling has jit kernels for the blocked formats a
// convolution writes; its reduction falls back to reference code there).
void OnednnRunner::BuildChannelMul(int i, const Layer& l) {
  const int x = l.inputs[0], s = l.inputs[1];
  const Dims dims = DimsOf(out_[x].get_desc());
  const Dims window = {dims[2], dims[3]}, ones = {1, 1}, none = {0, 0};
  const memory::desc factors({dims[0], dims[1], 1, 1}, dt_, Tag::any);
  // The factors in the format a global pool of the maps writes, the maps'
  // own (channels in blocks after a convolution): oneDNN's jit kernels
  // broadcast them there; from plain [N, C, 1, 1] into blocked maps it
  // runs its reference code, 30-40x slower. In blocks of 8 (channels that
  // 16 does not divide) it has no jit kernel either: there the maps are
  // read channels-last, where it has (a reorder, 10x less than the
  // reference code took in RegNetY's layers).
  auto pool = [&](const memory::desc& maps) {
    return PoolingPd(engine_, dnnl::prop_kind::forward_inference,
                     dnnl::algorithm::pooling_avg_exclude_padding, maps,
                     factors, ones, window, none, none);
  };
  memory::desc md = out_[x].get_desc();
  auto pool_pd = pool(md);
  auto pd = BinaryPd(engine_, dnnl::algorithm::binary_mul, md,
                     pool_pd.dst_desc(), md);
  if (IsReference(pd)) {
    md = memory::desc(dims, dt_, Tag::acdb);
    pool_pd = pool(md);
    pd = BinaryPd(engine_, dnnl::algorithm::binary_mul, md, pool_pd.dst_desc(),
                  md);
  }
  const memory::desc scale_md = pool_pd.dst_desc();
  const memory scale = Input(s, scale_md);
  const memory product = ScaleMaps(i, md, pd, scale, Grad(s));
  if (!Grad(s)) return;
  memory mean = Make(scale_md);
  Run(backward_[i], dnnl::pooling_forward(pool_pd),
      {{DNNL_ARG_SRC, product}, {DNNL_ARG_DST, mean}});
  memory grad = GradTarget(s, i, diff_[s].get_desc());
  Reorder(backward_[i], mean, grad, false,
          static_cast<float>(dims[2] * dims[3]));
  Deliver(s, i, grad);
}

// x [N, C, H, W] times w [C]. Backward: x's gradient is the output's
// times w; w's the sum over N, H and W of the output's gradient times x,
// summed as ones [1, N x H x W] times that product read channels-last
// [N x H x W, C] (a matrix product: oneDNN's reduction runs reference code
// over blocked maps).
void OnednnRunner::BuildLayerScale(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims& d = l.shape;
  // [1, C]: what the product summing its gradient writes; the same
  // bytes as [1, C, 1, 1], as the binary broadcasts it.
  const memory::desc c_md({1, l.units}, Dt::f32, Tag::ab);
  AddParam(i, "weight", c_md, c_md, c_md);
  Weight& w = ParamOf(i, "weight");
  const memory factors(memory::desc({1, d[1], 1, 1}, Dt::f32, Tag::abcd),
                       engine_, w.value.get_data_handle());
  // The maps as their writer laid them out, channels-last where oneDNN has
  // no jit kernel for that layout (blocks of 8).
  memory::desc md = out_[x].get_desc();
  auto pd = BinaryPd(engine_, dnnl::algorithm::binary_mul, md,
                     factors.get_desc(), md);
  if (IsReference(pd)) {
    md = memory::desc(d, dt_, Tag::acdb);
    pd = BinaryPd(engine_, dnnl::algorithm::binary_mul, md, factors.get_desc(),
                  md);
  }
  const memory product = ScaleMaps(i, md, pd, factors, train_);
  if (!train_) return;
  const memory::desc last(d, dt_, Tag::acdb);
  const memory rows = InBackward(i, product, last);
  const int64_t positions = d[0] * d[2] * d[3];
  const memory::desc ones_md({1, positions}, dt_, Tag::ab);
  const memory ones = Ones(ones_md);
  const memory::desc rows_md({positions, d[1]}, dt_, Tag::ab);
  const auto mpd = MatmulPd(engine_, ones_md, rows_md, c_md);
  Run(backward_[i], dnnl::matmul(mpd),
      {{DNNL_ARG_SRC, ones},
       {DNNL_ARG_WEIGHTS, memory(rows_md, engine_, rows.get_data_handle())},
       {DNNL_ARG_DST, w.grad}});
}

// x + a [length, units] table broadcast over the batch; the table's
// gradient is the output's summed over the batch.
void OnednnRunner::BuildPositional(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims dims = l.shape;  // [length, batch, units]
  const memory::desc md(dims, dt_, Tag::abc);
  const Dims table_dims = {dims[0], 1, dims[2]};
  AddParam(i, "weight", memory::desc(table_dims, dt_, Tag::abc),
           memory::desc(table_dims, Dt::f32, Tag::abc),
           memory::desc(table_dims, Dt::f32, Tag::abc));
  SetOut(i, md);
  Weight& table = ParamOf(i, "weight");
  const auto pd = BinaryPd(engine_, dnnl::algorithm::binary_add, md,
                           table.value.get_desc(), md);
  Run(forward_, dnnl::binary(pd),
      {{DNNL_ARG_SRC_0, Input(x, md)},
       {DNNL_ARG_SRC_1, table.value},
       {DNNL_ARG_DST, out_[i]}});
  if (!train_) return;
  // Per position, ones[1, batch] x dOut[batch, units]: a batched matmul
  // (oneDNN's reduction over the middle dimension is reference code).
  const memory::desc ones_md({1, 1, dims[1]}, dt_, Tag::abc);
  const memory ones = Ones(ones_md);
  const auto rpd = MatmulPd(engine_, ones_md, md, table.grad.get_desc());
  Run(backward_[i], dnnl::matmul(rpd),
      {{DNNL_ARG_SRC, ones},
       {DNNL_ARG_WEIGHTS, diff_[i]},
       {DNNL_ARG_DST, table.grad}});
  if (Grad(x)) Deliver(x, i, diff_[i]);
}

}  // namespace paradnn::onednn
