// What oneDNN 2 and oneDNN 3 spell differently, in one place: the rest of
// the backend makes its primitive descriptors and scales through these.
// oneDNN 3.0 dropped the operation descriptors (a primitive descriptor is
// made from the engine and the shapes directly), the output scales (a
// scale is a buffer passed at execution) and the memory descriptor's dims()
// and data_type(); the functions take oneDNN 3's order of arguments.
#pragma once

#include <cstdint>
#include <oneapi/dnnl/dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#if DNNL_VERSION_MAJOR >= 3
#define PARADNN_DNNL3 1
#else
#define PARADNN_DNNL3 0
#endif

namespace paradnn::onednn {

using dnnl::memory;
using Dims = memory::dims;
using Args = std::unordered_map<int, memory>;
using dnnl::algorithm;
using dnnl::engine;
using dnnl::prop_kind;
using Md = memory::desc;
using Attr = dnnl::primitive_attr;

inline Dims DimsOf(const Md& md) {
#if PARADNN_DNNL3
  return md.get_dims();
#else
  return md.dims();
#endif
}

// The implementation oneDNN chose for a primitive ("brg:avx512_core",
// "gemm:jit", "ref:any"), or "".
inline std::string ImplementationOf(const dnnl::primitive& p) {
  const_dnnl_primitive_desc_t pd = nullptr;
  const char* impl = nullptr;
  if (dnnl_primitive_get_primitive_desc(p.get(), &pd) != dnnl_success ||
      dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl) !=
          dnnl_success ||
      impl == nullptr) {
    return "";
  }
  return impl;
}

// Where a blocked memory descriptor keeps its elements: the element at
// logical index i is at offset0 + sum over dims of its outer index times
// the dim's stride, plus its place in the inner blocks (innermost last).
struct Blocking {
  Dims dims, padded_dims, strides, inner_blks, inner_idxs;
  int64_t offset0 = 0;
};

inline Blocking BlockingOf(const Md& md) {
  Blocking b;
#if PARADNN_DNNL3
  b.dims = md.get_dims();
  b.padded_dims = md.get_padded_dims();
  b.strides = md.get_strides();
  b.inner_blks = md.get_inner_blks();
  b.inner_idxs = md.get_inner_idxs();
  b.offset0 = md.get_submemory_offset();
#else
  const auto& d = md.data;
  const auto& blk = d.format_desc.blocking;
  b.dims.assign(d.dims, d.dims + d.ndims);
  b.padded_dims.assign(d.padded_dims, d.padded_dims + d.ndims);
  b.strides.assign(blk.strides, blk.strides + d.ndims);
  b.inner_blks.assign(blk.inner_blks, blk.inner_blks + blk.inner_nblks);
  b.inner_idxs.assign(blk.inner_idxs, blk.inner_idxs + blk.inner_nblks);
  b.offset0 = d.offset0;
#endif
  return b;
}

inline memory::data_type TypeOf(const Md& md) {
#if PARADNN_DNNL3
  return md.get_data_type();
#else
  return md.data_type();
#endif
}

// Whether batch normalization's backward takes the shift among its inputs:
// oneDNN 2's wants it, 3's refuses it (layer normalization's wants it in
// both).
constexpr bool kBatchNormBackwardTakesShift = !PARADNN_DNNL3;

// Multiplies input `arg` of a reorder (DNNL_ARG_FROM) or binary primitive
// by `scale`. oneDNN 2 keeps the scale in the attribute (a reorder's as its
// output scale: it has one input); oneDNN 3 reads it at execution from a
// buffer, which the returned arguments hold: add them to the primitive's.
inline Args ScaleInput(Attr& attr, int arg, float scale, const engine& eng,
                       bool reorder) {
#if PARADNN_DNNL3
  (void)reorder;
  attr.set_scales_mask(arg, 0);
  memory buffer(Md({1}, memory::data_type::f32, memory::format_tag::a), eng);
  *static_cast<float*>(buffer.get_data_handle()) = scale;
  return {{DNNL_ARG_ATTR_SCALES | arg, buffer}};
#else
  (void)eng;
  if (reorder) {
    attr.set_output_scales(0, {scale});
  } else {
    attr.set_scales(arg, 0, {scale});
  }
  return {};
#endif
}

// An element-wise function applied to a primitive's output as it writes
// it (a post-op): oneDNN 2 scales its result, which 3 dropped.
inline void AppendEltwise(dnnl::post_ops& ops, algorithm alg, float alpha,
                          float beta) {
#if PARADNN_DNNL3
  ops.append_eltwise(alg, alpha, beta);
#else
  ops.append_eltwise(1.f, alg, alpha, beta);
#endif
}

// Multiplies a matmul's result by `scale` before it is written. oneDNN 3's
// destination scale divides (it quantizes), so there a linear post-op
// multiplies instead.
inline void ScaleOutput(Attr& attr, float scale) {
#if PARADNN_DNNL3
  dnnl::post_ops ops;
  ops.append_eltwise(algorithm::eltwise_linear, scale, 0.f);
  attr.set_post_ops(ops);
#else
  attr.set_output_scales(0, {scale});
#endif
}

inline dnnl::matmul::primitive_desc MatmulPd(const engine& eng, const Md& src,
                                             const Md& weights, const Md& dst,
                                             const Attr& attr = Attr()) {
#if PARADNN_DNNL3
  return {eng, src, weights, dst, attr};
#else
  return {{src, weights, dst}, attr, eng};
#endif
}

inline dnnl::binary::primitive_desc BinaryPd(const engine& eng, algorithm alg,
                                             const Md& src0, const Md& src1,
                                             const Md& dst,
                                             const Attr& attr = Attr()) {
#if PARADNN_DNNL3
  return {eng, alg, src0, src1, dst, attr};
#else
  return {{alg, src0, src1, dst}, attr, eng};
#endif
}

// An element-wise function of a tensor, written in the source's format;
// alpha and beta as oneDNN's algorithm reads them (a clip's bounds).
inline dnnl::eltwise_forward::primitive_desc EltwisePd(
    const engine& eng, prop_kind prop, algorithm alg, const Md& src,
    float alpha = 0.f, float beta = 0.f) {
#if PARADNN_DNNL3
  return {eng, prop, alg, src, src, alpha, beta};
#else
  return {{prop, alg, src, alpha, beta}, eng};
#endif
}

inline dnnl::eltwise_backward::primitive_desc EltwiseBackwardPd(
    const engine& eng, algorithm alg, const Md& diff, const Md& src,
    const dnnl::eltwise_forward::primitive_desc& hint, float alpha = 0.f,
    float beta = 0.f) {
#if PARADNN_DNNL3
  return {eng, alg, diff, diff, src, alpha, beta, hint};
#else
  return {{alg, diff, src, alpha, beta}, eng, hint};
#endif
}

// Hard-swish, x * min(max(alpha x + beta, 0), 1): oneDNN 3 reads alpha and
// beta (1/6 and 1/2 give x * relu6(x + 3) / 6), oneDNN 2 has those fixed.
constexpr float kHardSwishAlpha = 1.f / 6.f;
constexpr float kHardSwishBeta = 0.5f;

// The inputs joined along `axis` into `dst` (`any`: oneDNN picks).
inline dnnl::concat::primitive_desc ConcatPd(const engine& eng, const Md& dst,
                                             int axis,
                                             const std::vector<Md>& srcs) {
#if PARADNN_DNNL3
  return {eng, dst, axis, srcs};
#else
  return {dst, axis, srcs, eng};
#endif
}

// Softmax over `axis`, in place-compatible formats (destination as source).
inline dnnl::softmax_forward::primitive_desc SoftmaxPd(const engine& eng,
                                                       prop_kind prop,
                                                       const Md& src,
                                                       int axis) {
#if PARADNN_DNNL3
  return {eng, prop, algorithm::softmax_accurate, src, src, axis};
#else
  return {{prop, src, axis}, eng};
#endif
}

inline dnnl::softmax_backward::primitive_desc SoftmaxBackwardPd(
    const engine& eng, const Md& diff, const Md& dst, int axis,
    const dnnl::softmax_forward::primitive_desc& hint) {
#if PARADNN_DNNL3
  return {eng, algorithm::softmax_accurate, diff, diff, dst, axis, hint};
#else
  return {{diff, dst, axis}, eng, hint};
#endif
}

inline dnnl::inner_product_forward::primitive_desc InnerProductPd(
    const engine& eng, prop_kind prop, const Md& src, const Md& weights,
    const Md* bias, const Md& dst, const Attr& attr = Attr()) {
#if PARADNN_DNNL3
  if (bias) return {eng, prop, src, weights, *bias, dst, attr};
  return {eng, prop, src, weights, dst, attr};
#else
  using D = dnnl::inner_product_forward::desc;
  return {bias ? D(prop, src, weights, *bias, dst) : D(prop, src, weights, dst),
          attr, eng};
#endif
}

inline dnnl::inner_product_backward_weights::primitive_desc
InnerProductWeightsPd(const engine& eng, const Md& src, const Md& weights,
                      const Md* bias, const Md& dst,
                      const dnnl::inner_product_forward::primitive_desc& hint) {
#if PARADNN_DNNL3
  if (bias) return {eng, src, weights, *bias, dst, hint};
  return {eng, src, weights, dst, hint};
#else
  using D = dnnl::inner_product_backward_weights::desc;
  return {bias ? D(src, weights, *bias, dst) : D(src, weights, dst), eng, hint};
#endif
}

inline dnnl::inner_product_backward_data::primitive_desc InnerProductDataPd(
    const engine& eng, const Md& diff_src, const Md& weights,
    const Md& diff_dst,
    const dnnl::inner_product_forward::primitive_desc& hint) {
#if PARADNN_DNNL3
  return {eng, diff_src, weights, diff_dst, hint};
#else
  return {{diff_src, weights, diff_dst}, eng, hint};
#endif
}

// Direct convolutions, padded alike on both sides, with a bias where
// `bias` is given; `weights` of 5 dimensions [groups, out, in, h, w] for a
// grouped one.
inline dnnl::convolution_forward::primitive_desc ConvolutionPd(
    const engine& eng, prop_kind prop, const Md& src, const Md& weights,
    const Md* bias, const Md& dst, const Dims& strides, const Dims& dilates,
    const Dims& pad, const Attr& attr = Attr()) {
  const algorithm alg = algorithm::convolution_direct;
#if PARADNN_DNNL3
  if (bias) {
    return {eng, prop,    alg,     src, weights, *bias,
            dst, strides, dilates, pad, pad,     attr};
  }
  return {eng, prop, alg, src, weights, dst, strides, dilates, pad, pad, attr};
#else
  using D = dnnl::convolution_forward::desc;
  return {
      bias ? D(prop, alg, src, weights, *bias, dst, strides, dilates, pad, pad)
           : D(prop, alg, src, weights, dst, strides, dilates, pad, pad),
      attr, eng};
#endif
}

// A convolution's backward of its weights (and bias, where `bias` is
// given): `in` the source, `weights` the weights' gradient.
inline dnnl::convolution_backward_weights::primitive_desc ConvolutionWeightsPd(
    const engine& eng, const Md& in, const Md& weights, const Md* bias,
    const Md& diff_dst, const Dims& strides, const Dims& dilates,
    const Dims& pad, const dnnl::convolution_forward::primitive_desc& hint) {
  const algorithm alg = algorithm::convolution_direct;
#if PARADNN_DNNL3
  if (bias) {
    return {eng,     alg,     in,  weights, *bias, diff_dst,
            strides, dilates, pad, pad,     hint};
  }
  return {eng, alg, in, weights, diff_dst, strides, dilates, pad, pad, hint};
#else
  using D = dnnl::convolution_backward_weights::desc;
  return {bias
              ? D(alg, in, weights, *bias, diff_dst, strides, dilates, pad, pad)
              : D(alg, in, weights, diff_dst, strides, dilates, pad, pad),
          eng, hint};
#endif
}

// A convolution's backward of its data: `in` the source's gradient.
inline dnnl::convolution_backward_data::primitive_desc ConvolutionDataPd(
    const engine& eng, const Md& in, const Md& weights, const Md& diff_dst,
    const Dims& strides, const Dims& dilates, const Dims& pad,
    const dnnl::convolution_forward::primitive_desc& hint) {
  const algorithm alg = algorithm::convolution_direct;
#if PARADNN_DNNL3
  return {eng, alg, in, weights, diff_dst, strides, dilates, pad, pad, hint};
#else
  return {dnnl::convolution_backward_data::desc(alg, in, weights, diff_dst,
                                                strides, dilates, pad, pad),
          eng, hint};
#endif
}

// Square pooling windows, padded alike on both sides, without dilation.
// `pad` before the first window, `pad_end` after the last (ceil mode's
// window may hang past the input).
inline dnnl::pooling_forward::primitive_desc PoolingPd(
    const engine& eng, prop_kind prop, algorithm alg, const Md& src,
    const Md& dst, const Dims& strides, const Dims& kernel, const Dims& pad,
    const Dims& pad_end) {
#if PARADNN_DNNL3
  const Dims none(strides.size(), 0);
  return {eng, prop, alg, src, dst, strides, kernel, none, pad, pad_end};
#else
  return {{prop, alg, src, dst, strides, kernel, pad, pad_end}, eng};
#endif
}

inline dnnl::pooling_backward::primitive_desc PoolingBackwardPd(
    const engine& eng, algorithm alg, const Md& diff_src, const Md& diff_dst,
    const Dims& strides, const Dims& kernel, const Dims& pad,
    const Dims& pad_end, const dnnl::pooling_forward::primitive_desc& hint) {
#if PARADNN_DNNL3
  const Dims none(strides.size(), 0);
  return {eng,    alg,  diff_src, diff_dst, strides,
          kernel, none, pad,      pad_end,  hint};
#else
  return {{alg, diff_src, diff_dst, strides, kernel, pad, pad_end}, eng, hint};
#endif
}

// A shuffle along `axis`, seen as [size / group_size][group_size] and
// transposed; its output in its input's format.
inline dnnl::shuffle_forward::primitive_desc ShufflePd(const engine& eng,
                                                       prop_kind prop,
                                                       const Md& src, int axis,
                                                       int64_t group_size) {
#if PARADNN_DNNL3
  return {eng, prop, src, src, axis, static_cast<int>(group_size)};
#else
  return {{prop, src, axis, static_cast<int>(group_size)}, eng};
#endif
}

// Bilinear resampling (oneDNN's linear: half-pixel centres, as PyTorch's
// align_corners=False).
inline dnnl::resampling_forward::primitive_desc ResamplingPd(const engine& eng,
                                                             prop_kind prop,
                                                             const Md& src,
                                                             const Md& dst) {
  const algorithm alg = algorithm::resampling_linear;
#if PARADNN_DNNL3
  return {eng, prop, alg, src, dst};
#else
  return {{prop, alg, src, dst}, eng};
#endif
}

inline dnnl::resampling_backward::primitive_desc ResamplingBackwardPd(
    const engine& eng, const Md& diff_src, const Md& diff_dst,
    const dnnl::resampling_forward::primitive_desc& hint) {
  const algorithm alg = algorithm::resampling_linear;
#if PARADNN_DNNL3
  return {eng, alg, diff_src, diff_dst, hint};
#else
  return {{alg, diff_src, diff_dst}, eng, hint};
#endif
}

inline dnnl::shuffle_backward::primitive_desc ShuffleBackwardPd(
    const engine& eng, const Md& diff, int axis, int64_t group_size,
    const dnnl::shuffle_forward::primitive_desc& hint) {
#if PARADNN_DNNL3
  return {eng, diff, diff, axis, static_cast<int>(group_size), hint};
#else
  return {{diff, axis, static_cast<int>(group_size)}, eng, hint};
#endif
}

// Batch and layer normalization (`Norm` their forward, `Backward` their
// backward primitive), which take the same arguments and write in their
// source's format.
template <typename Norm>
typename Norm::primitive_desc NormalizationPd(const engine& eng, prop_kind prop,
                                              const Md& src, float epsilon,
                                              dnnl::normalization_flags flags) {
#if PARADNN_DNNL3
  return {eng, prop, src, src, epsilon, flags};
#else
  return {typename Norm::desc(prop, src, epsilon, flags), eng};
#endif
}

template <typename Backward, typename ForwardPd>
typename Backward::primitive_desc NormalizationBackwardPd(
    const engine& eng, const Md& diff, const Md& src, float epsilon,
    dnnl::normalization_flags flags, const ForwardPd& hint) {
#if PARADNN_DNNL3
  return {eng, prop_kind::backward, diff, diff, src, epsilon, flags, hint};
#else
  return {
      typename Backward::desc(prop_kind::backward, diff, src, epsilon, flags),
      eng, hint};
#endif
}

// The recurrent cells, one layer in one direction. `in` and `out` are the
// layer's sequence, `state` (and the LSTM's `cell`) its initial states
// (empty for zeros); no final state is asked for.
struct RecurrentShapes {
  Md in, state, cell, weights_layer, weights_iter, bias, out;
};

inline dnnl::vanilla_rnn_forward::primitive_desc VanillaRnnPd(
    const engine& eng, prop_kind prop, dnnl::rnn_direction dir,
    const RecurrentShapes& f) {
  const algorithm tanh = algorithm::eltwise_tanh;
#if PARADNN_DNNL3
  return {
      eng,    prop,  tanh, dir, f.in, f.state, f.weights_layer, f.weights_iter,
      f.bias, f.out, Md()};
#else
  return {{prop, tanh, dir, f.in, f.state, f.weights_layer, f.weights_iter,
           f.bias, f.out, Md()},
          eng};
#endif
}

inline dnnl::vanilla_rnn_backward::primitive_desc VanillaRnnBackwardPd(
    const engine& eng, dnnl::rnn_direction dir, const RecurrentShapes& f,
    const RecurrentShapes& b,
    const dnnl::vanilla_rnn_forward::primitive_desc& hint) {
  const algorithm tanh = algorithm::eltwise_tanh;
  const prop_kind back = prop_kind::backward;
#if PARADNN_DNNL3
  return {eng,
          back,
          tanh,
          dir,
          f.in,
          f.state,
          f.weights_layer,
          f.weights_iter,
          f.bias,
          f.out,
          Md(),
          b.in,
          b.state,
          b.weights_layer,
          b.weights_iter,
          b.bias,
          b.out,
          Md(),
          hint};
#else
  return {{back, tanh, dir, f.in, f.state, f.weights_layer, f.weights_iter,
           f.bias, f.out, Md(), b.in, b.state, b.weights_layer, b.weights_iter,
           b.bias, b.out, Md()},
          eng,
          hint};
#endif
}

inline dnnl::lstm_forward::primitive_desc LstmPd(const engine& eng,
                                                 prop_kind prop,
                                                 dnnl::rnn_direction dir,
                                                 const RecurrentShapes& f) {
#if PARADNN_DNNL3
  return {eng,
          prop,
          dir,
          f.in,
          f.state,
          f.cell,
          f.weights_layer,
          f.weights_iter,
          f.bias,
          f.out,
          Md(),
          Md()};
#else
  return {{prop, dir, f.in, f.state, f.cell, f.weights_layer, f.weights_iter,
           f.bias, f.out, Md(), Md()},
          eng};
#endif
}

inline dnnl::lstm_backward::primitive_desc LstmBackwardPd(
    const engine& eng, dnnl::rnn_direction dir, const RecurrentShapes& f,
    const RecurrentShapes& b, const dnnl::lstm_forward::primitive_desc& hint) {
  const prop_kind back = prop_kind::backward;
#if PARADNN_DNNL3
  return {eng,
          back,
          dir,
          f.in,
          f.state,
          f.cell,
          f.weights_layer,
          f.weights_iter,
          f.bias,
          f.out,
          Md(),
          Md(),
          b.in,
          b.state,
          b.cell,
          b.weights_layer,
          b.weights_iter,
          b.bias,
          b.out,
          Md(),
          Md(),
          hint};
#else
  return {{back,           dir,    f.in,
           f.state,        f.cell, f.weights_layer,
           f.weights_iter, f.bias, f.out,
           Md(),           Md(),   b.in,
           b.state,        b.cell, b.weights_layer,
           b.weights_iter, b.bias, b.out,
           Md(),           Md()},
          eng,
          hint};
#endif
}

inline dnnl::lbr_gru_forward::primitive_desc LbrGruPd(
    const engine& eng, prop_kind prop, dnnl::rnn_direction dir,
    const RecurrentShapes& f) {
#if PARADNN_DNNL3
  return {eng,    prop,  dir, f.in, f.state, f.weights_layer, f.weights_iter,
          f.bias, f.out, Md()};
#else
  return {{prop, dir, f.in, f.state, f.weights_layer, f.weights_iter, f.bias,
           f.out, Md()},
          eng};
#endif
}

inline dnnl::lbr_gru_backward::primitive_desc LbrGruBackwardPd(
    const engine& eng, dnnl::rnn_direction dir, const RecurrentShapes& f,
    const RecurrentShapes& b,
    const dnnl::lbr_gru_forward::primitive_desc& hint) {
  const prop_kind back = prop_kind::backward;
#if PARADNN_DNNL3
  return {eng,    back,  dir,  f.in, f.state, f.weights_layer, f.weights_iter,
          f.bias, f.out, Md(), b.in, b.state, b.weights_layer, b.weights_iter,
          b.bias, b.out, Md(), hint};
#else
  return {{back, dir, f.in, f.state, f.weights_layer, f.weights_iter, f.bias,
           f.out, Md(), b.in, b.state, b.weights_layer, b.weights_iter, b.bias,
           b.out, Md()},
          eng,
          hint};
#endif
}

}  // namespace paradnn::onednn
