// oneDNN backend. Convolutions, pooling, and what CNNs do with their
// feature maps besides: flatten them, join them along their channels.
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backends/onednn/runner.h"

namespace paradnn::onednn {

// The format a convolution producing `dims` would write: images fed to
// the graph (a layer's input when it runs on its own) arrive as they
// would from the convolution before it, not in plain NCHW, where batch
// norm, pooling and eltwise primitives run several times slower.
memory::desc OnednnRunner::ConvolutionOutput(const Dims& dims) {
  const memory::desc any(dims, dt_, Tag::any);
  return ConvolutionPd(engine_, Forward(), any,
                       memory::desc({dims[1], dims[1], 3, 3}, dt_, Tag::any),
                       nullptr, any, {1, 1}, {0, 0}, {1, 1})
      .dst_desc();
}

void OnednnRunner::BuildConv(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims src_dims = DimsOf(out_[x].get_desc());
  // Grouped: [groups, out per group, in per group, h, w], which is
  // LibTorch's [out, in per group, h, w] split along its first dimension.
  // A 3-D convolution's: [out, in, depth, h, w], one group.
  const int64_t g = l.groups;
  const bool video = l.op == Op::kConv3d;
  const Dims w_dims =
      video    ? Dims{l.units, src_dims[1], l.kernel_d, l.kernel, l.kernel_w}
      : g == 1 ? Dims{l.units, src_dims[1], l.kernel, l.kernel_w}
               : Dims{g, l.units / g, src_dims[1] / g, l.kernel, l.kernel_w};
  const Tag w_user = video ? Tag::oidhw : g == 1 ? Tag::oihw : Tag::goihw;
  const Dims dst_dims = l.shape;
  // oneDNN counts a dilation as the taps skipped between two.
  Dims strides = {l.stride, l.stride}, pad = {l.pad, l.pad_w},
       dilates = {l.dilation - 1, l.dilation - 1};
  if (video) {
    strides.insert(strides.begin(), l.stride_d);
    pad.insert(pad.begin(), l.pad_d);
    dilates.insert(dilates.begin(), 0);
  }
  memory::desc src_md(src_dims, dt_, Tag::any);
  memory::desc w_md(w_dims, dt_, Tag::any);
  memory::desc dst_md(dst_dims, dt_, Tag::any);
  // Inference may run it with the layers after it (FusedAttr), a batch
  // norm folded in giving it a bias.
  const FusedGroup* group = plan_.AnchoredAt(i);
  const bool folded = group != nullptr && group->batch_norm >= 0;
  const memory::desc b_md({l.units}, dt_, Tag::x);
  const memory::desc* bias = l.bias || folded ? &b_md : nullptr;
  const auto pd = ConvolutionPd(
      engine_, Forward(), src_md, w_md, bias, dst_md, strides, dilates, pad,
      group ? FusedAttr(*group) : dnnl::primitive_attr());
  // Backward weights has jit kernels for the gradient in f32 and in the
  // format it picks; asked for bf16 in the forward weights' blocked format
  // it falls back to the reference code (hundreds of times slower). The
  // SGD update reorders that gradient into the weights.
  const memory::desc b_grad_md({l.units}, Dt::f32, Tag::x);
  std::optional<dnnl::convolution_backward_weights::primitive_desc> wpd;
  if (train_) {
    // Its input in the format it picks as well: with few channels the
    // forward pass reads them plain, which has no jit kernel here.
    auto backward_weights = [&](const memory::desc& diff_dst) {
      wpd.emplace(ConvolutionWeightsPd(
          engine_, memory::desc(src_dims, dt_, Tag::any),
          memory::desc(w_dims, Dt::f32, Tag::any),
          l.bias ? &b_grad_md : nullptr, diff_dst, strides, dilates, pad, pd));
    };
    backward_weights(pd.dst_desc());
    // AVX2's jit kernel takes no image smaller than its kernel's reach
    // (3x3 over 1x1 or 2x2, deep in a CNN of small images); given the
    // output gradient in the forward pass's blocked format no other kernel
    // does, and the reference code runs (10-35 ms a call, against
    // microseconds). In the format oneDNN picks, its GEMM-based kernel
    // takes it, after a reorder of that gradient.
    if (IsReference(*wpd)) {
      backward_weights(memory::desc(dst_dims, dt_, Tag::any));
    }
  }
  const memory::desc w_plain(w_dims, Dt::f32, w_user);
  memory w_value, w_grad;
  if (l.weight_norm >= 0) {
    const auto [value, grad] =
        WeightNormed(i, l, w_plain, pd.weights_desc(),
                     wpd ? wpd->diff_weights_desc() : memory::desc());
    w_value = value;
    w_grad = grad;
  } else {
    AddParam(i, "weight", pd.weights_desc(), w_plain,
             wpd ? wpd->diff_weights_desc() : pd.weights_desc());
    w_value = ParamOf(i, "weight").value;
    w_grad = ParamOf(i, "weight").grad;
  }
  if (l.bias) {
    AddParam(i, "bias", pd.bias_desc(), b_grad_md,
             wpd ? wpd->diff_bias_desc() : pd.bias_desc());
  } else if (folded) {
    folded_bias_[i] = Make(pd.bias_desc());
  }
  if (group) {
    FusedOutput(*group, pd.dst_desc());
  } else {
    SetOut(i, pd.dst_desc());
  }
  const memory in = Input(x, pd.src_desc());
  Args args = {
      {DNNL_ARG_SRC, in}, {DNNL_ARG_WEIGHTS, w_value}, {DNNL_ARG_DST, out_[i]}};
  if (l.bias) args[DNNL_ARG_BIAS] = ParamOf(i, "bias").value;
  if (!l.bias && folded) args[DNNL_ARG_BIAS] = folded_bias_.at(i);
  Run(forward_, dnnl::convolution_forward(pd), args);
  if (!train_) return;
  Args grads = {
      {DNNL_ARG_SRC, Input(x, wpd->src_desc())},
      {DNNL_ARG_DIFF_DST, InBackward(i, diff_[i], wpd->diff_dst_desc())},
      {DNNL_ARG_DIFF_WEIGHTS, w_grad}};
  if (l.bias) grads[DNNL_ARG_DIFF_BIAS] = ParamOf(i, "bias").grad;
  Run(backward_[i], dnnl::convolution_backward_weights(*wpd), grads);
  if (l.weight_norm >= 0) WeightNormBackward(i, l, w_plain, w_grad);
  if (Grad(x)) {
    // Backward data has kernels of its own for its own weight format;
    // given the forward one it falls back to the reference code.
    // The input gradient in the format the kernel picks too: asked for a
    // plain one it falls back to the reference code.
    auto backward_data = [&](const memory::desc& diff_dst) {
      return ConvolutionDataPd(engine_, memory::desc(src_dims, dt_, Tag::any),
                               memory::desc(w_dims, dt_, Tag::any), diff_dst,
                               strides, dilates, pad, pd);
    };
    auto dpd = backward_data(pd.dst_desc());
    // A dilated depthwise convolution's jit kernel has no backward data;
    // given the output gradient in the forward pass's blocked format no
    // other kernel does, and the reference code runs (about 0.2 s a call
    // in LRASPP-MobileNetV3, two thirds of its step). In the format oneDNN
    // picks, its GEMM-based kernel takes it, after a reorder.
    if (IsReference(dpd))
      dpd = backward_data(memory::desc(dst_dims, dt_, Tag::any));
    memory grad = GradTarget(x, i, dpd.diff_src_desc());
    Run(backward_[i], dnnl::convolution_backward_data(dpd),
        {{DNNL_ARG_DIFF_DST, InBackward(i, diff_[i], dpd.diff_dst_desc())},
         {DNNL_ARG_WEIGHTS, InBackward(i, w_value, dpd.weights_desc())},
         {DNNL_ARG_DIFF_SRC, grad}});
    Deliver(x, i, grad);
  }
}

namespace {

// Weight norm's magnitudes run along one axis of [out, in, h, w]: element
// e of the plain weights has magnitude (e / inner) % size.
struct NormAxis {
  int64_t size = 1, inner = 1, count = 0;
  NormAxis(const Shape& w, int64_t axis) : count(Elements(w)) {
    size = w[axis];
    for (size_t k = axis + 1; k < w.size(); ++k) inner *= w[k];
  }
  int64_t Of(int64_t e) const { return e / inner % size; }
  // Per magnitude, the sum of a x b over the elements it scales.
  std::vector<double> Dots(const float* a, const float* b) const {
    std::vector<double> sums(size, 0.0);
    for (int64_t e = 0; e < count; ++e) sums[Of(e)] += double{a[e]} * b[e];
    return sums;
  }
};

}  // namespace

// w = g v / |v| (PyTorch's weight_norm), made in plain f32 each forward
// pass from the parameters v and g and reordered into the convolution's
// format; the norms are kept for backward.
std::pair<memory, memory> OnednnRunner::WeightNormed(
    int i, const Layer& l, const memory::desc& plain, const memory::desc& md,
    const memory::desc& grad_md) {
  const NormAxis axis(graph_.ConvWeights(i), l.weight_norm);
  const memory::desc g_md(graph_.WeightNormMagnitudes(i), Dt::f32, Tag::abcd);
  AddParam(i, "weight_v", plain, plain, plain);
  AddParam(i, "weight_g", g_md, g_md, g_md);
  const memory v = ParamOf(i, "weight_v").value;
  const memory g = ParamOf(i, "weight_g").value;
  const memory w = Make(plain), value = Make(md);
  const memory norms = Make(memory::desc({axis.size}, Dt::f32, Tag::a));
  Push(forward_, OpClass::kElementwise, "weight norm", [=] {
    const float* pv = static_cast<const float*>(v.get_data_handle());
    const float* pg = static_cast<const float*>(g.get_data_handle());
    float* pw = static_cast<float*>(w.get_data_handle());
    float* pn = static_cast<float*>(norms.get_data_handle());
    const std::vector<double> squares = axis.Dots(pv, pv);
    for (int64_t j = 0; j < axis.size; ++j) {
      pn[j] = static_cast<float>(std::sqrt(squares[j]));
    }
    for (int64_t e = 0; e < axis.count; ++e) {
      const int64_t j = axis.Of(e);
      pw[e] = pv[e] / pn[j] * pg[j];
    }
  });
  Reorder(forward_, w, value, false);
  if (!train_) return {value, memory()};
  norms_[i] = norms;
  return {value, Make(grad_md)};
}

// From the weights' gradient dw: dg = dw . v / |v| and
// dv = g / |v| (dw - dg v / |v|), per magnitude.
void OnednnRunner::WeightNormBackward(int i, const Layer& l,
                                      const memory::desc& plain,
                                      const memory& w_grad) {
  const NormAxis axis(graph_.ConvWeights(i), l.weight_norm);
  const memory dw = Make(plain);
  Reorder(backward_[i], w_grad, dw, false);
  Weight& v = ParamOf(i, "weight_v");
  Weight& g = ParamOf(i, "weight_g");
  const memory norms = norms_.at(i);
  Push(backward_[i], OpClass::kElementwise, "weight norm",
       [=, vm = v.value, dvm = v.grad, gm = g.value, dgm = g.grad] {
         const float* pv = static_cast<const float*>(vm.get_data_handle());
         const float* pg = static_cast<const float*>(gm.get_data_handle());
         const float* pdw = static_cast<const float*>(dw.get_data_handle());
         const float* pn = static_cast<const float*>(norms.get_data_handle());
         float* pdv = static_cast<float*>(dvm.get_data_handle());
         float* pdg = static_cast<float*>(dgm.get_data_handle());
         const std::vector<double> dots = axis.Dots(pdw, pv);
         for (int64_t j = 0; j < axis.size; ++j) {
           pdg[j] = static_cast<float>(dots[j] / pn[j]);
         }
         for (int64_t e = 0; e < axis.count; ++e) {
           const int64_t j = axis.Of(e);
           pdv[e] = pg[j] / pn[j] * (pdw[e] - pdg[j] * pv[e] / pn[j]);
         }
       });
}

void OnednnRunner::BuildPool(int i, const Layer& l, dnnl::algorithm alg,
                             const Dims& kernels, int64_t stride, int64_t pad) {
  const int x = l.inputs[0];
  const memory::desc src_md = out_[x].get_desc();
  const Dims src_dims = DimsOf(src_md);
  // The graph's output (a global pool's [N, C] as 1x1 maps, or 1x1x1 of
  // [N, C, D, H, W]). In ceil mode the last window may hang past the input:
  // the padding after it is what that window needs.
  const size_t axes = kernels.size();
  const bool maps = l.shape.size() == src_dims.size();
  Dims dst_dims = {src_dims[0], src_dims[1]};
  for (size_t d = 0; d < axes; ++d) {
    dst_dims.push_back(maps ? l.shape[d + 2] : 1);
  }
  const Dims strides(axes, stride), pads(axes, pad);
  Dims pads_end(axes);
  for (size_t d = 0; d < axes; ++d) {
    pads_end[d] =
        (dst_dims[d + 2] - 1) * stride + kernels[d] - src_dims[d + 2] - pad;
  }
  const auto pd = PoolingPd(engine_, Forward(), alg, src_md,
                            memory::desc(dst_dims, dt_, Tag::any), strides,
                            kernels, pads, pads_end);
  SetOut(i, pd.dst_desc());
  Args args = {{DNNL_ARG_SRC, out_[x]}, {DNNL_ARG_DST, out_[i]}};
  memory workspace;
  if (train_ && pd.workspace_desc().get_size() > 0) {
    workspace = Make(pd.workspace_desc());
    args[DNNL_ARG_WORKSPACE] = workspace;
  }
  Run(forward_, dnnl::pooling_forward(pd), args);
  if (!Grad(x)) return;
  const auto bpd = PoolingBackwardPd(engine_, alg, src_md, pd.dst_desc(),
                                     strides, kernels, pads, pads_end, pd);
  memory grad = GradTarget(x, i, bpd.diff_src_desc());
  Args bargs = {{DNNL_ARG_DIFF_DST, diff_[i]}, {DNNL_ARG_DIFF_SRC, grad}};
  if (workspace) bargs[DNNL_ARG_WORKSPACE] = workspace;
  Run(backward_[i], dnnl::pooling_backward(bpd), bargs);
  Deliver(x, i, grad);
}

// [N, C, H, W] -> [N, C x H x W]: the values in plain NCHW order, as
// LibTorch's flatten reads them, copied out of the producer's format (a
// blocked one, where the flat order is not the graph's).
void OnednnRunner::BuildFlatten(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims in_dims = DimsOf(out_[x].get_desc());
  SetOut(i, memory::desc(l.shape, dt_, Tag::ab));
  const memory::desc plain(in_dims, dt_, PlainTag(in_dims.size()));
  const memory view(plain, engine_, out_[i].get_data_handle());
  Reorder(forward_, out_[x], view, false);
  if (!Grad(x)) return;
  const memory grad_view(plain, engine_, diff_[i].get_data_handle());
  memory grad = GradTarget(x, i, diff_[x].get_desc());
  Reorder(backward_[i], grad_view, grad, false);
  Deliver(x, i, grad);
}

void OnednnRunner::BuildConcatAlong(int i, const Layer& l) {
  const int axis = static_cast<int>(l.axis);
  std::vector<memory::desc> srcs;
  for (int x : l.inputs) srcs.push_back(out_[x].get_desc());
  // Each input's part of the output, where backward finds its gradient:
  // views into a format that keeps each part whole (a blocked format
  // whose channel blocks no part splits); else channels last, where any
  // range of channels is one.
  auto parts = [&](const memory::desc& dst) {
    std::vector<memory::desc> out;
    Dims offsets(l.shape.size(), 0);
    for (int x : l.inputs) {
      const Dims dims = graph_.layer(x).shape;
      out.push_back(dst.submemory_desc(dims, offsets));
      offsets[axis] += dims[axis];
    }
    return out;
  };
  auto pd = ConcatPd(engine_, memory::desc(l.shape, dt_, Tag::any), axis, srcs);
  std::vector<memory::desc> views;
  try {
    views = parts(pd.dst_desc());
  } catch (const dnnl::error&) {
    pd = ConcatPd(engine_, memory::desc(l.shape, dt_, Tag::acdb), axis, srcs);
    views = parts(pd.dst_desc());
  }
  SetOut(i, pd.dst_desc());
  Args args = {{DNNL_ARG_DST, out_[i]}};
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(k)] = out_[l.inputs[k]];
  }
  Run(forward_, dnnl::concat(pd), args);
  if (!train_) return;
  std::vector<int> given;  // inputs given their gradient already
  for (size_t k = 0; k < l.inputs.size(); ++k) {
    const int x = l.inputs[k];
    if (!Grad(x)) continue;
    const memory part(views[k], engine_, diff_[i].get_data_handle());
    const memory::desc md = diff_[x].get_desc();
    // An input read twice: its second part is added to its first.
    if (std::count(given.begin(), given.end(), x) > 0) {
      Reorder(backward_[i], part, diff_[x], true);
      continue;
    }
    memory grad = GradTarget(x, i, md);
    Reorder(backward_[i], part, grad, false);
    Deliver(x, i, grad);
    given.push_back(x);
  }
}

// The slice is a view of its input in the plain layout, where any range
// along any dimension is one (a blocked format has none where the range
// starts inside a block of channels: ShuffleNet's halves of 24 or 58 in
// blocks of 16). Backward writes the input's gradient whole: zeros, and
// the output's gradient in the slice's part.
void OnednnRunner::BuildSlice(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims in = graph_.layer(x).shape;
  const Tag plain = PlainTag(in.size());
  Dims offsets(in.size(), 0);
  offsets[l.axis] = l.begin;
  const memory::desc whole(in, dt_, plain);
  const memory::desc part = whole.submemory_desc(l.shape, offsets);
  const memory src = Input(x, whole);
  SetOut(i, memory::desc(l.shape, dt_, plain));
  Reorder(forward_, memory(part, engine_, src.get_data_handle()), out_[i],
          false);
  if (!Grad(x)) return;
  const memory grad = GradTarget(x, i, whole);
  Push(backward_[i], OpClass::kMovement, "slice gradient zeros", [grad] {
    std::memset(grad.get_data_handle(), 0, grad.get_desc().get_size());
  });
  Reorder(backward_[i], diff_[i], memory(part, engine_, grad.get_data_handle()),
          false);
  Deliver(x, i, grad);
}

// Maps resized bilinearly, in the format the input arrives in; backward
// spreads each output's gradient over its four inputs. A [N, C] input is
// read, and its gradient written, as [N, C, 1, 1] maps channels-last (the
// same bytes), the output and its gradient channels-last too: oneDNN
// 3.7's jit resampling from plain NCHW into NHWC, the format it picks,
// writes past its output.
void OnednnRunner::BuildResize(int i, const Layer& l) {
  const int x = l.inputs[0];
  const Dims in = graph_.layer(x).shape;
  const bool flat = in.size() == 2;
  const Dims maps = flat ? Dims{in[0], in[1], 1, 1} : in;
  const memory src =
      flat ? memory(memory::desc(maps, dt_, Tag::nhwc), engine_,
                    Input(x, memory::desc(in, dt_, Tag::nc)).get_data_handle())
           : out_[x];
  const auto pd =
      ResamplingPd(engine_, Forward(), src.get_desc(),
                   memory::desc(l.shape, dt_, flat ? Tag::nhwc : Tag::any));
  SetOut(i, pd.dst_desc());
  Run(forward_, dnnl::resampling_forward(pd),
      {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, out_[i]}});
  if (!Grad(x)) return;
  const auto bpd =
      ResamplingBackwardPd(engine_,
                           flat ? memory::desc(maps, dt_, Tag::nhwc)
                                : memory::desc(maps, dt_, Tag::any),
                           pd.dst_desc(), pd);
  memory grad = GradTarget(
      x, i, flat ? memory::desc(in, dt_, Tag::nc) : bpd.diff_src_desc());
  const memory diff_src =
      flat ? memory(bpd.diff_src_desc(), engine_, grad.get_data_handle())
           : grad;
  Run(backward_[i], dnnl::resampling_backward(bpd),
      {{DNNL_ARG_DIFF_DST, InBackward(i, diff_[i], bpd.diff_dst_desc())},
       {DNNL_ARG_DIFF_SRC, diff_src}});
  Deliver(x, i, grad);
}

}  // namespace paradnn::onednn
